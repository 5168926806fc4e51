#!/usr/bin/env bash
# need-disk.sh GB WHAT: stop with a clear message when the disk holding the project has less
# than GB gigabytes free, before a pip install fails half-way with "No space left on device".
# Measured sizes: .venv 6.7 GB, .venv-torch2.11 4.7 GB, .venv-torch2.14 5.5 GB (CUDA wheels of torch).
set -euo pipefail
need=$1 what=$2
free=$(df -Pk "$(dirname "$0")/.." | awk 'NR == 2 { print int($4 / 1048576) }')
if [ "$free" -lt "$need" ]; then
  echo "tta setup: $what needs about $need GB free on $(df -P "$(dirname "$0")/.." | awk 'NR == 2 { print $6 }'), only $free GB are: free some space and run again" >&2
  exit 1
fi
