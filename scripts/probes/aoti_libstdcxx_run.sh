#!/bin/bash
# GPU machine, from the repository root: does tta.aot_compile's second link (against the process's
# libstdc++.so.6, tta/inductor/shared_libstdcxx.py) make packages that aoti_load_package loads?
#   1. which libstdc++ the toolchain finds, and what a plain `g++ -shared` links
#   2. load a CPU relu package built on the CPU machine (NEEDED libstdc++.so.6) and the one built
#      here (libstdc++ inside), each under segv_bt.so (module+offset backtrace on SIGSEGV)
#   3. tta's CPU AOTInductor tests here (this machine's own toolchain), then its GPU ones
# Every step writes under $OUT, so a run cut by its time limit still brings back what it did.
# relu_here.pt2: `python scripts/probes/aoti_compile_relu.py relu_here.pt2` on the CPU machine (torch 2.11).
P=scripts/probes
exec > "$OUT/run.log" 2>&1
export PYTHONPATH=python
echo "== toolchain"; date +%T
g++ --version | head -1
for f in libstdc++.so libstdc++.a libstdc++.so.6; do echo "$f -> $(g++ -print-file-name=$f)"; done
printf '#include <string>\nstd::string f(){return std::to_string(42);}\n' > /tmp/t.cpp
g++ -shared -fPIC -o /tmp/t.so /tmp/t.cpp && readelf -d /tmp/t.so | grep NEEDED
g++ -v -shared -fPIC -o /tmp/t.so /tmp/t.cpp 2>&1 | grep -E "collect2|specs" | head -3
python -c "import torch; print('in-process:', sorted({l.split()[-1] for l in open('/proc/self/maps') if 'stdc++' in l}))"
gcc -shared -fPIC -O1 -o /tmp/segv_bt.so $P/segv_bt.c -ldl || echo "no segv helper"
echo "== load packages"; date +%T
for pkg in ${RELU_HERE:-relu_here.pt2} tests/fixtures/gpu/relu_cpu.pt2; do
  LD_PRELOAD=/tmp/segv_bt.so timeout 60 python $P/aoti_load_relu.py cpu $pkg; echo "rc $?"
done
echo "== tta's CPU AOTInductor tests"; date +%T
timeout 200 python -m pytest tests/python/test_inductor_backend.py -k "fresh or libstdcxx" -v -p no:cacheprovider -W ignore::FutureWarning
echo "== tta's AOTInductor GPU tests"; date +%T
timeout ${GPU_TESTS_S:-300} python -m pytest -m gpu tests/python/test_gpu_backends.py -k "${GPU_TESTS_K:-aot}" -v -p no:cacheprovider --durations=0 -W ignore::FutureWarning
date +%T
