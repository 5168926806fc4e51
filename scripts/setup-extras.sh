#!/usr/bin/env bash
# The cuTile and CuTeDSL kernel DSLs (their AOT compile runs on the CPU; no GPU needed), and a
# tileiras that can target sm_90. Run by setup.sh inside the activated .venv. Safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== installing cuTile and CuTeDSL (about 500 MB)"
python -m pip install -q "cuda-tile[tileiras]==1.7.0" "nvidia-cutlass-dsl==4.8.1"
# torch pins its CUDA toolkit (13.2 for torch 2.15), so cuda-tile's [tileiras] extra resolves to
# tileiras 13.2, which has no sm_90 (Hopper came with 13.3). tta looks for a newer tileiras in
# .venv/toolchains/*/ (tta/aot/cuda_tools.py); installing it there leaves torch's pins alone.
TC=.venv/toolchains/cuda-13.4
# nvdisasm lets tests/ptx.rs compare the machine code of rewritten PTX with the original.
if [ ! -x "$TC/nvidia/cu13/bin/tileiras" ] || [ ! -x "$TC/nvidia/cu13/bin/nvdisasm" ]; then
  echo "== installing tileiras 13.4 (with its ptxas, libnvvm, nvdisasm) into $TC (about 420 MB)"
  # One pip call for all four: they share nvidia/cu13/, which --target replaces per call.
  rm -rf "$TC"
  python -m pip install -q --no-deps --target "$TC" \
    "nvidia-cuda-tileiras==13.4.92" "nvidia-cuda-nvcc==13.4.92" "nvidia-nvvm==13.4.92" "nvidia-cuda-nvdisasm==13.4.92"
fi
