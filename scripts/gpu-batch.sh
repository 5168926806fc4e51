#!/usr/bin/env bash
# The GPU tests, in the order of what changed most (run on the GPU machine: PYTHONPATH=python).
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH=python
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
python -m pytest -q -p no:cacheprovider -m gpu -rfE tests/python/test_check_kernels.py tests/python/test_inductor_floats.py \
  tests/python/test_output_layout.py tests/python/test_readme_quickstart.py tests/python/test_doctor.py tests/python/test_gpu.py 2>&1 | tail -40
TTA_DSL_BUNDLE=tests/fixtures/gpu/dsl-bundle.json python -m pytest -q -p no:cacheprovider -m gpu -rfE tests/python/test_gpu_backends.py 2>&1 | tail -25
