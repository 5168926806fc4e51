"""GPU machine: does this toolchain copy libstdc++ into AOTInductor packages, and does tta's second
link fix loading? relu(x + y) on CUDA packaged by torch alone and by tta.aot_compile, each loaded in
a fresh process (aoti_load_relu.py, under segv_bt.so when LD_PRELOAD names it)."""
import os, subprocess, sys
import torch
import tta
from tta.inductor import package_check

out = sys.argv[1]
class M(torch.nn.Module):
    def forward(self, x, y): return torch.relu(x + y)
x = torch.randn(4, 64, device="cuda"); y = torch.randn(4, 64, device="cuda")
plain = torch._inductor.aoti_compile_and_package(torch.export.export(M(), (x, y)), package_path=f"{out}/relu_torch.pt2")
print("torch's own package, private libstdc++ in:", package_check.libraries_with_private_libstdcxx(plain), flush=True)
pkg = tta.aot_compile(M(), (x, y), f"{out}/relu_tta.pt2")
print("tta package: relinked", pkg.relinked_libstdcxx, "private in:", package_check.libraries_with_private_libstdcxx(pkg.path), flush=True)
here = os.path.dirname(__file__)
for p in (plain, pkg.path):
    r = subprocess.run([sys.executable, f"{here}/aoti_load_relu.py", "cuda", p], capture_output=True, text=True, timeout=90)
    print(p, "rc", r.returncode, r.stdout.strip().replace("\n", " | "), r.stderr[-600:], flush=True)
