#!/usr/bin/env bash
# Set everything up, then run all CPU tests: the Rust core (cargo) and the Python package
# (pytest). GPU tests are marked `gpu` and run on the GPU machine (see README).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
echo "== cargo test"
# The PTX tests assemble and disassemble with the CUDA tools setup installed; insist on them.
TTA_REQUIRE_TOOLS=1 cargo test --all-targets --quiet
echo "== pytest (CPU)"
exec .venv/bin/python -m pytest -m "not gpu" -q -p no:cacheprovider "$@"
