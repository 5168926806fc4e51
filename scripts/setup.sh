#!/usr/bin/env bash
# Set up a project-local environment: .venv with torch, triton and the test tools from the
# package registry, then build the Rust extension into it. Safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  bash scripts/need-disk.sh 10 ".venv (torch, triton, cuTile, CuTeDSL, tileiras)"
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
# Graphviz's `dot` draws the picture of `tta explain --svg` / tta.explain(svg=...).
if ! command -v dot >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "== installing Graphviz (dot), for tta explain's picture"
    apt-get install -y -q graphviz >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q graphviz >/dev/null; }
  else
    echo "== note: Graphviz's dot is missing; tta explain's picture needs it (apt-get install graphviz, brew install graphviz)"
  fi
fi
echo "== building the Rust extension (tta._core, release)"
maturin develop --release -q
python -c "import tta, tta._core; print('tta ready:', tta.__file__)"
