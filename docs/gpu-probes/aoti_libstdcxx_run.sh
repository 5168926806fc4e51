#!/bin/bash
# GPU machine, from the repository root, PYTHONPATH=python: is aoti_load_package's crash the
# private libstdc++ that this machine's g++ links into each AOTInductor package?
#   1. which libstdc++ the toolchain finds (libstdc++.so or only libstdc++.a)
#   2. load a CPU relu package built on the CPU machine (NEEDED libstdc++.so.6) and the one built
#      here (libstdc++ inside), each under segv_bt.so (module+offset backtrace on SIGSEGV)
#   3. build the same package with CXX=dyn-g++ (libstdc++.so.6 linked explicitly) and load it
#   4. tta's AOTInductor GPU tests with CXX=dyn-g++
# Every step writes under $OUT, so a run cut by its time limit still brings back what it did.
# relu_here.pt2: `python docs/gpu-probes/aoti_compile_relu.py relu_here.pt2` on the CPU machine (torch 2.11).
P=docs/gpu-probes
exec > "$OUT/run.log" 2>&1
export PYTHONPATH=python
echo "== toolchain"; date +%T
g++ --version | head -1
for f in libstdc++.so libstdc++.a libstdc++.so.6; do echo "$f -> $(g++ -print-file-name=$f)"; done
python -c "import torch; print('in-process:', sorted({l.split()[-1] for l in open('/proc/self/maps') if 'stdc++' in l}))"
gcc -shared -fPIC -O1 -o /tmp/segv_bt.so $P/segv_bt.c -ldl || echo "no segv helper"
echo "== load packages"; date +%T
for pkg in ${RELU_HERE:-relu_here.pt2} $P/relu_cpu.pt2; do
  LD_PRELOAD=/tmp/segv_bt.so timeout 60 python $P/aoti_load_relu.py cpu $pkg; echo "rc $?"
done
echo "== build with dyn-g++ and load"; date +%T
CXX=$PWD/$P/dyn-g++ timeout 100 python $P/aoti_compile_relu.py $OUT/relu_dyn.pt2
LD_PRELOAD=/tmp/segv_bt.so timeout 60 python $P/aoti_load_relu.py cpu $OUT/relu_dyn.pt2; echo "rc $?"
echo "== tta's AOTInductor GPU tests with dyn-g++"; date +%T
CXX=$PWD/$P/dyn-g++ timeout 300 python -m pytest -m gpu tests/python/test_gpu_backends.py -k aot -v -p no:cacheprovider
date +%T
