#!/usr/bin/env bash
# Set everything up, then run all CPU tests: the Rust core (cargo), the whole Python suite and the
# demo on the newest torch (.venv), the tests whose behaviour can depend on the torch version (all
# but those marked `torch_independent`) and the demo on each older supported torch (.venv-torch2.11, .venv-torch2.14;
# tests needing packages those lack are deselected by marker), and the TensorRT tests (pytest -m
# trt: the real tensorrt.plugin and Torch-TensorRT Python code over tests/trt_standin, in
# .venv-torch2.14). GPU tests are marked `gpu` and run on the GPU machine (see README).
#
#   bash scripts/test.sh            # everything (CI runs this)
#   bash scripts/test.sh --quick    # lint, cargo test, newest-torch tests that compile no kernel
#   bash scripts/test.sh -k NAME    # extra arguments go to the newest-torch pytest step
#
# It stops at the first failing step. Each step runs under its own time limit and each test under
# a per-test limit (pytest-timeout, `timeout` in pyproject.toml), so a hang fails and names itself.
# The last lines name the failing step and tests, each step's time, the 20 slowest tests and the
# total. Logs and JUnit files of the run stay in target/test-logs/.
set -uo pipefail
cd "$(dirname "$0")/.."

QUICK=0
if [ "${1:-}" = --quick ]; then QUICK=1; shift; fi

LOGS=target/test-logs
rm -rf "$LOGS" && mkdir -p "$LOGS"
# tests/python/conftest.py writes the test it starts here, so a step killed at its time limit
# can say which test was running.
export TTA_TEST_CURRENT="$PWD/$LOGS/current-test"
export TTA_REQUIRE_TOOLS=1  # the PTX tests assemble and disassemble with the CUDA tools setup installed
# One cache folder for the run, shared by every step and environment, empty at the start: the run
# neither reads nor fills the user's caches, and no kernel is compiled twice in it (the compile
# ledger, tests/python/compile_ledger.py, records each compile; the last step checks it).
# Environments with different Triton versions compile their own kernels: the keys differ.
CACHES="$PWD/target/test-cache"
rm -rf "$CACHES"
export TTA_CACHE_DIR="$CACHES/tta" TRITON_CACHE_DIR="$CACHES/triton" TORCHINDUCTOR_CACHE_DIR="$CACHES/inductor"
export TTA_COMPILE_LOG="$PWD/$LOGS/compiles.tsv"
START=$SECONDS
TIMES=()

summary() {  # the closing lines: each step's time, the 20 slowest tests, the total
  echo
  echo "== summary"
  printf '   %6s s  %s\n' "${TIMES[@]}"
  python3 scripts/test_summary.py "$LOGS" || true
  echo "   total: $((SECONDS - START)) s"
}

fail() {  # fail TITLE RC LOG: say where it stopped, then exit
  local title=$1 rc=$2 log=$3
  summary
  echo
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    echo "FAILED step: $title (ran past its time limit)"
    [ -s "$TTA_TEST_CURRENT" ] && echo "   running when stopped: $(cat "$TTA_TEST_CURRENT")"
  else
    echo "FAILED step: $title (exit $rc)"
  fi
  if grep -q "short test summary info" "$log"; then
    sed -n '/short test summary info/,$p' "$log" | grep -E '^(FAILED|ERROR)' | head -30
  else
    tail -25 "$log"
  fi
  echo "   log: $log"
  exit "$rc"
}

N=0
stem() {  # stem TITLE: the log folder's name stem of the next step, NN-title
  printf '%s/%02d-%s' "$LOGS" "$((N + 1))" "$(echo "$1" | tr -c 'A-Za-z0-9.\n' '-' | tr -s '-' | cut -c1-50)"
}

step() {  # step TITLE LIMIT COMMAND...: run it under LIMIT (timeout's syntax), log it, time it
  local title=$1 limit=$2 start=$SECONDS rc log; shift 2
  log="$(stem "$title").log"
  N=$((N + 1))
  echo "== $title"
  : > "$TTA_TEST_CURRENT"
  timeout --kill-after=30 "$limit" "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  TIMES+=("$((SECONDS - start))" "$title")
  echo "   ($title: ${TIMES[-2]} s)"
  [ "$rc" = 0 ] || fail "$title" "$rc" "$log"
}

pytest_step() {  # [VAR=value ...] pytest_step TITLE LIMIT PYTHON PYTEST-ARGS...: a step that also keeps JUnit times
  local title=$1 limit=$2 py=$3; shift 3
  step "$title" "$limit" "$py" -m pytest -q -p no:cacheprovider --junitxml="$(stem "$title").xml" \
    -o junit_suite_name="$title" "$@"
}

if [ "$QUICK" = 1 ]; then
  if [ -x .venv/bin/python ]; then
    step "build the extension (.venv)" 15m env VIRTUAL_ENV="$PWD/.venv" .venv/bin/maturin develop --release -q
  else
    step "setup .venv" 30m bash scripts/setup.sh
  fi
  step "lint (cargo fmt, clippy, ruff)" 10m bash scripts/lint.sh
  step "cargo test" 15m cargo test --all-targets --quiet
  # TTA_FORBID_KERNEL_COMPILE: a test that compiles a kernel without the `kernels` marker fails.
  TTA_FORBID_KERNEL_COMPILE=1 pytest_step "pytest (CPU, newest torch, no kernel compiles)" 10m .venv/bin/python \
    -m "not gpu and not trt and not kernels" "$@"
  summary
  exit 0
fi

step "setup .venv" 30m bash scripts/setup.sh
step "setup .venv-torch2.11 .venv-torch2.14" 30m bash scripts/setup-torch-envs.sh
step "lint (cargo fmt, clippy, ruff)" 10m bash scripts/lint.sh
step "cargo test" 15m cargo test --all-targets --quiet
pytest_step "pytest (CPU, newest torch)" 30m .venv/bin/python -m "not gpu and not trt" "$@"
step "demo (newest torch)" 5m .venv/bin/python examples/demo.py
# What the older environments lack: Torch-TensorRT (2.11), transformers, torchvision, cuTile, CuTeDSL.
CORE="not torch_independent and not gpu and not trt and not transformers and not torchvision and not cutile and not cutedsl"
for venv in .venv-torch2.11 .venv-torch2.14; do
  # test_gpu_backends (GPU only) fails to collect after the other modules on Triton 3.6 and 3.8.
  pytest_step "pytest core ($venv)" 20m "$venv/bin/python" -m "$CORE" tests/python \
    --ignore=tests/python/test_gpu_backends.py
  step "demo ($venv)" 5m "$venv/bin/python" examples/demo.py
done
pytest_step "pytest -m trt (Torch-TensorRT 2.14, tensorrt.plugin 11.1 and 11.4 over the stand-in)" 20m \
  .venv-torch2.14/bin/python -m "trt and not cutile and not cutedsl" tests/python/trt
# cuTile and CuTeDSL live in .venv, the plugin package in .venv-torch2.14: custom ops with those kernels.
TTA_TRT_BINDINGS=.venv-torch2.14/lib/python3.11/site-packages \
  pytest_step "pytest -m trt, cuTile and CuTeDSL custom ops (.venv with the plugin package of .venv-torch2.14)" 10m .venv/bin/python \
  -m "trt and (cutile or cutedsl)" tests/python/trt/test_custom_op_dsl.py
step "no kernel compiled twice (the compile ledger)" 1m python3 scripts/compiled_kernels.py --check "$LOGS"
summary
