"""A CuTeDSL kernel in the form CUTLASS's own examples use: ``cute.Tensor`` parameters, a
``@cute.jit`` host function that sizes the grid with ``cute.size``, and a launch with
``from_dlpack(t, assumed_align=...).mark_layout_dynamic()``. tta generates the pointer-ABI
entry around it (``tta/aot/cutedsl/tensors.py``); nothing here knows about TensorRT.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Float32
from cutlass.cute.runtime import from_dlpack


@cute.kernel
def add_relu_tensor_kernel(gX: cute.Tensor, gY: cute.Tensor, gO: cute.Tensor, THREADS: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    i = bidx * THREADS + tidx
    if i < cute.size(gO):
        v = gX[i].to(Float32) + gY[i].to(Float32)
        gO[i] = cute.arch.fmax(v, Float32(0.0)).to(gO.element_type)


@cute.jit
def add_relu_tensor_host(mX: cute.Tensor, mY: cute.Tensor, mO: cute.Tensor, THREADS: cutlass.Constexpr):
    n = cute.size(mO)
    add_relu_tensor_kernel(mX, mY, mO, THREADS).launch(grid=((n + THREADS - 1) // THREADS, 1, 1), block=(THREADS, 1, 1))


def launch_add_relu_tensor(x, y, out, *, THREADS: int = 256):
    tensors = [from_dlpack(t, assumed_align=t.element_size()).mark_layout_dynamic() for t in (x, y, out)]
    add_relu_tensor_host(*tensors, THREADS)
