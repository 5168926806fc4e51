#!/usr/bin/env bash
# The lint habits CI keeps (CONTRIBUTING.md): Rust formatting and clippy, Python lint and format.
set -euo pipefail
cd "$(dirname "$0")/.."
RUFF=${RUFF:-.venv/bin/ruff}
cargo fmt --check
cargo clippy --quiet --all-targets --features python -- -D warnings
"$RUFF" check python tests examples benches
"$RUFF" format --check python tests examples benches
echo "lint clean"
