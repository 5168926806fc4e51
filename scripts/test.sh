#!/usr/bin/env bash
# Set everything up, then run all CPU tests: the Rust core (cargo), the whole Python suite and the
# demo on the newest torch (.venv), the core Python tests and the demo on each older supported
# torch (.venv-torch2.11, .venv-torch2.14; tests needing packages those lack are deselected by
# marker), and the TensorRT tests (pytest -m trt: the real tensorrt.plugin and Torch-TensorRT
# Python code over tests/trt_standin, in .venv-torch2.14). GPU tests are marked `gpu` and run on
# the GPU machine (see README). Each step prints how long it took.
set -euo pipefail
cd "$(dirname "$0")/.."

step() {  # step TITLE COMMAND...: run it, then print its wall time
  local title=$1 start=$SECONDS; shift
  echo "== $title"
  "$@"
  echo "   ($title: $((SECONDS - start)) s)"
}

step "setup .venv" bash scripts/setup.sh
step "setup .venv-torch2.11 .venv-torch2.14" bash scripts/setup-torch-envs.sh
step "lint (cargo fmt, clippy, ruff)" bash scripts/lint.sh
# The PTX tests assemble and disassemble with the CUDA tools setup installed; insist on them.
step "cargo test" env TTA_REQUIRE_TOOLS=1 cargo test --all-targets --quiet
step "pytest (CPU, newest torch)" env TTA_REQUIRE_TOOLS=1 .venv/bin/python -m pytest -m "not gpu and not trt" -q -p no:cacheprovider "$@"
step "demo (newest torch)" .venv/bin/python examples/demo.py
# What the older environments lack: Torch-TensorRT (2.11), transformers, torchvision, cuTile, CuTeDSL.
CORE="not gpu and not trt and not transformers and not torchvision and not cutile and not cutedsl"
for venv in .venv-torch2.11 .venv-torch2.14; do
  # test_gpu_backends (GPU only) fails to collect after the other modules on Triton 3.6 and 3.8.
  step "pytest core ($venv)" "$venv/bin/python" -m pytest -m "$CORE" -q -p no:cacheprovider tests/python \
    --ignore=tests/python/test_gpu_backends.py
  step "demo ($venv)" "$venv/bin/python" examples/demo.py
done
step "pytest -m trt (Torch-TensorRT 2.14, tensorrt.plugin 11.1 and 11.4 over the stand-in)" \
  .venv-torch2.14/bin/python -m pytest -m "trt and not cutile and not cutedsl" -q -p no:cacheprovider tests/python/trt
# cuTile and CuTeDSL live in .venv, the plugin package in .venv-torch2.14: custom ops with those kernels.
step "pytest -m trt, cuTile and CuTeDSL custom ops (.venv with the plugin package of .venv-torch2.14)" \
  env TTA_TRT_BINDINGS=.venv-torch2.14/lib/python3.11/site-packages .venv/bin/python -m pytest \
  -m "trt and (cutile or cutedsl)" -q -p no:cacheprovider tests/python/trt/test_custom_op_dsl.py
