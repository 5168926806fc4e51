"""AOTInductor load probe: each step in its own process, faulthandler on, so a segfault names where."""
import os, subprocess, sys, textwrap
OUT = os.environ.get("OUT", "/tmp")
W = os.path.join(OUT, "aoti")
os.makedirs(W, exist_ok=True)

COMPILE = textwrap.dedent('''
import sys, torch
dev, path, extra = sys.argv[1], sys.argv[2], sys.argv[3]
class M(torch.nn.Module):
    def forward(self, x, y): return torch.relu(x + y)
x = torch.randn(4, 64, device=dev); y = torch.randn(4, 64, device=dev)
ep = torch.export.export(M(), (x, y))
cfg = {"aot_inductor.package_cpp_only": True} if extra == "cpp_only" else None
p = torch._inductor.aoti_compile_and_package(ep, package_path=path, inductor_configs=cfg)
print("packaged", p)
''')


def sh(cmd, timeout=240, **kw):
    print("$", " ".join(cmd) if isinstance(cmd, list) else cmd, flush=True)
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
        print("rc", r.returncode); print(r.stdout[-3000:]); print(r.stderr[-4000:], flush=True)
        return r
    except subprocess.TimeoutExpired:
        print("timeout", flush=True)

py = sys.executable
LOADPY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "load.py")
import torch
print("torch", torch.__version__, torch.version.cuda, "cxx11abi", torch._C._GLIBCXX_USE_CXX11_ABI, flush=True)
sh("gcc --version | head -1; g++ --version | head -1; which nvcc; ldconfig -p | grep -E 'libcuda.so|libstdc' ; nvidia-smi --query-gpu=driver_version --format=csv", shell=True)
for dev in ("cpu", "cuda"):
    pkg = os.path.join(W, f"relu_{dev}.pt2")
    sh([py, "-c", COMPILE, dev, pkg, "none"])
    sh(f"cd {W} && rm -rf x_{dev} && mkdir x_{dev} && cd x_{dev} && python -m zipfile -e {pkg} . && find . -name '*.so' | head; for f in $(find . -name '*.so'); do ldd $f | grep -i 'not found\\|cuda\\|stdc'; done", shell=True)
    for how in ("aoti_load_package", "device_index", "loader"):
        sh([py, "-X", "faulthandler", LOADPY, dev, pkg, how])
# gdb backtrace of the cuda load, if gdb is there
pkg = os.path.join(W, "relu_cuda.pt2")
sh(f"which gdb && gdb -batch -ex run -ex bt --args {py} {LOADPY} cuda {pkg} aoti_load_package 2>&1 | tail -40", shell=True, timeout=200)
