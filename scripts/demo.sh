#!/usr/bin/env bash
# Set everything up, then run the demo: export a model with regions, rewrite it, print the
# region report, run the rewritten model and show it matches the original.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python examples/demo.py
