#!/usr/bin/env bash
# Set everything up, then run all CPU tests: the Rust core (cargo), the Python package
# (pytest, newest torch) and the TensorRT tests (pytest -m trt: the real tensorrt.plugin and
# Torch-TensorRT Python code over tests/trt_standin, in .venv-torch2.14). GPU tests are marked
# `gpu` and run on the GPU machine (see README).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/setup-torch-envs.sh
echo "== cargo test"
# The PTX tests assemble and disassemble with the CUDA tools setup installed; insist on them.
TTA_REQUIRE_TOOLS=1 cargo test --all-targets --quiet
echo "== pytest (CPU, newest torch)"
.venv/bin/python -m pytest -m "not gpu and not trt" -q -p no:cacheprovider "$@"
echo "== pytest -m trt (Torch-TensorRT 2.14, tensorrt.plugin 11.1 and 11.4 over the stand-in)"
.venv-torch2.14/bin/python -m pytest -m trt -q -p no:cacheprovider tests/python/trt
