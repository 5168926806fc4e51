#!/usr/bin/env bash
# Set up a project-local environment: .venv with torch, triton and the test tools from the
# package registry, then build the Rust extension into it. Safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "== creating .venv"
  "$PY" -m venv .venv
fi
# shellcheck disable=SC1091
. .venv/bin/activate
echo "== installing Python packages (torch, triton, ...; about two minutes on a fresh machine)"
python -m pip install -q --upgrade pip
python -m pip install -q -r requirements-dev.txt
if [ -f scripts/setup-extras.sh ]; then
  bash scripts/setup-extras.sh
fi
echo "== building the Rust extension (tta._core, release)"
maturin develop --release -q
python -c "import tta, tta._core; print('tta ready:', tta.__file__)"
