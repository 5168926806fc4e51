#!/bin/bash
# Backtrace of aoti_load_package's crash on a CPU-only relu(x+y) package compiled on this machine.
D=$(dirname $0)
which gdb || { echo "no gdb"; exit 0; }
gdb -q -batch -ex "set pagination off" -ex run -ex bt -ex "info sharedlibrary" --args python $D/load.py cpu $D/../../tests/fixtures/gpu/relu_cpu.pt2 aoti_load_package 2>&1 | grep -v "^\[New Thread\|^\[Thread" | head -80
