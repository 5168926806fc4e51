import sys, torch  # no faulthandler: segv_bt.so (LD_PRELOAD) prints the native frames
dev, path = sys.argv[1], sys.argv[2]
x = torch.randn(4, 64, device=dev); y = torch.randn(4, 64, device=dev)
print("loading", path, flush=True)
m = torch._inductor.aoti_load_package(path)
print("loaded", flush=True)
out = m(x, y)
out = out[0] if isinstance(out, (list, tuple)) else out
print("ok", bool(torch.allclose(out, torch.relu(x + y))), flush=True)
