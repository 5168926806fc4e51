
import sys, torch, faulthandler
faulthandler.enable()
dev, path, how = sys.argv[1], sys.argv[2], sys.argv[3]
x = torch.randn(4, 64, device=dev); y = torch.randn(4, 64, device=dev)
print("loading", how, flush=True)
if how == "aoti_load_package":
    m = torch._inductor.aoti_load_package(path)
elif how == "device_index":
    m = torch._inductor.aoti_load_package(path, device_index=0)
elif how == "loader":
    loader = torch._C._aoti.AOTIModelPackageLoader(path, "model", False, 1, 0 if dev == "cuda" else -1)
    m = lambda *a: loader.run(list(a))
print("loaded", flush=True)
out = m(x, y)
out = out[0] if isinstance(out, (list, tuple)) else out
print("ok", bool(torch.allclose(out, torch.relu(x + y))), flush=True)
