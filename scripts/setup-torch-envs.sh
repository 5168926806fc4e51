#!/usr/bin/env bash
# The two extra torch environments next to .venv (the newest torch):
#   .venv-torch2.11  torch 2.11 (what the GPU machine runs): core tests and examples
#   .venv-torch2.14  torch 2.14 + Torch-TensorRT 2.14 + the tensorrt.plugin Python package
#                    (tensorrt-cu13-bindings 11.1, Torch-TensorRT's pin; 11.4 unpacked beside it)
# TensorRT's native libraries cannot be installed here; the TensorRT tests run the real Python
# layers over tta's stand-in (tests/python/trt/standin.py). Both environments use the Rust
# extension built into python/tta by setup.sh (abi3, so one build serves every Python).
# Safe to re-run; pip's cache is shared with .venv.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

make_env() {  # make_env DIR PIP-ARGS...
  local dir=$1; shift
  if [ ! -x "$dir/bin/python" ]; then
    bash scripts/need-disk.sh 8 "$dir"
    echo "== creating $dir"
    "$PY" -m venv "$dir"
  fi
  "$dir/bin/python" -m pip install -q --upgrade pip
  "$dir/bin/python" -m pip install -q "$@"
  # tta itself comes from the source tree (python/), extension included.
  "$dir/bin/python" - <<'PYEOF'
import pathlib, site, sys
pth = pathlib.Path(site.getsitepackages()[0]) / "tta-src.pth"
pth.write_text(str(pathlib.Path("python").resolve()) + "\n")
PYEOF
}

# Triton 3.6's interpreter turns a one-element array into an int (tl.program_id used as a loop
# bound), which NumPy 2.4 refuses; Triton 3.8 squeezes first. Only the interpreter needs the pin.
make_env .venv-torch2.11 "torch==2.11.*" "numpy<2.4" "pytest>=8" "pytest-timeout>=2.3"
# The Liger example kernels (plain Triton); --no-deps keeps each environment's torch and triton.
.venv-torch2.11/bin/python -m pip install -q --no-deps liger-kernel

TRT_OLD=11.1.0.106   # Torch-TensorRT 2.14's pin
TRT_NEW=11.4.0.106   # the newest tensorrt.plugin package
make_env .venv-torch2.14 "torch==2.14.*" numpy "pytest>=8" "pytest-timeout>=2.3" "packaging>=23" dllist psutil
D=.venv-torch2.14
"$D/bin/python" -m pip install -q --no-deps liger-kernel
SITE=$("$D/bin/python" -c 'import site; print(site.getsitepackages()[0])')
# --no-deps: torch-tensorrt would pull tensorrt-cu13 and its native libraries, which
# the registry serves but which need a GPU driver to load; only the Python layers are used.
"$D/bin/python" -m pip install -q --no-deps "torch-tensorrt==2.14.0" "tensorrt-cu13-bindings==$TRT_OLD"
# The native runtime libraries of Torch-TensorRT load libnvinfer at import and have no fallback;
# without them Torch-TensorRT uses its Python runtime.
rm -f "$SITE"/torch_tensorrt/lib/libtorchtrt.so "$SITE"/torch_tensorrt/lib/libtorchtrt_runtime.so
# The newer plugin package, unpacked beside (not installed): tests point the stand-in at it.
if [ ! -d "$D/trt-$TRT_NEW/tensorrt_bindings/plugin" ]; then
  tmp=$(mktemp -d)
  "$D/bin/python" -m pip download -q --no-deps --only-binary=:all: -d "$tmp" "tensorrt-cu13-bindings==$TRT_NEW"
  mkdir -p "$D/trt-$TRT_NEW"
  "$D/bin/python" -m zipfile -e "$tmp"/tensorrt_cu13_bindings-*.whl "$D/trt-$TRT_NEW"
  rm -rf "$tmp"
fi
echo "torch environments ready: .venv-torch2.11 .venv-torch2.14"
