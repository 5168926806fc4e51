"""The CuTeDSL kernel behind ``tta_examples::cute_axpby`` (``custom_ops_dsl.py``), and its launch
function: ordinary CuTeDSL host code on raw pointers (TensorRT passes a plugin kernel pointers
and int32 scalars). ``alpha`` and ``relu`` are ``Constexpr``: compiled in per call site."""

from __future__ import annotations

import cutlass.cute as cute
from cutlass import Constexpr, Float32, Int32

from .kernels.cutedsl_kernels import pointer


@cute.kernel
def axpby_kernel(px: cute.Pointer, py: cute.Pointer, po: cute.Pointer, n: Int32, ALPHA: Constexpr, RELU: Constexpr, THREADS: Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    gx = cute.make_tensor(px, cute.make_layout(n))
    gy = cute.make_tensor(py, cute.make_layout(n))
    go = cute.make_tensor(po, cute.make_layout(n))
    i = bidx * THREADS + tidx
    if i < n:
        v = Float32(ALPHA) * gx[i].to(Float32) + gy[i].to(Float32)
        if RELU:
            v = cute.arch.fmax(v, Float32(0.0))
        go[i] = v.to(go.element_type)


@cute.jit
def axpby_host(px: cute.Pointer, py: cute.Pointer, po: cute.Pointer, n: Int32, ALPHA: Constexpr, RELU: Constexpr, THREADS: Constexpr):
    axpby_kernel(px, py, po, n, ALPHA, RELU, THREADS).launch(grid=((n + THREADS - 1) // THREADS, 1, 1), block=(THREADS, 1, 1))


def launch_cute_axpby(x, y, out, *, alpha, relu, THREADS: int = 256):
    axpby_host(pointer(x), pointer(y), pointer(out), out.numel(), alpha, relu, THREADS)
