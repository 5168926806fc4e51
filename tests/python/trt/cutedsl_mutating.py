"""A CuTeDSL kernel that writes one of its inputs (for ``test_custom_op_dsl.py``): the op it
serves declares no mutation, so tta must refuse it. Imported only by the CuTeDSL test."""

import cutlass.cute as cute
from cutlass import Constexpr, Float32, Int32

from tta.examples.kernels.cutedsl_kernels import pointer


@cute.kernel
def axpy_into_x(px: cute.Pointer, py: cute.Pointer, po: cute.Pointer, n: Int32, A: Constexpr, THREADS: Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    gx = cute.make_tensor(px, cute.make_layout(n))
    gy = cute.make_tensor(py, cute.make_layout(n))
    go = cute.make_tensor(po, cute.make_layout(n))
    i = bidx * THREADS + tidx
    if i < n:
        v = Float32(A) * gx[i].to(Float32) + gy[i].to(Float32)
        go[i] = v.to(go.element_type)
        gx[i] = v.to(gx.element_type)  # the undeclared write


@cute.jit
def axpy_into_x_host(px: cute.Pointer, py: cute.Pointer, po: cute.Pointer, n: Int32, A: Constexpr, THREADS: Constexpr):
    axpy_into_x(px, py, po, n, A, THREADS).launch(grid=((n + THREADS - 1) // THREADS, 1, 1), block=(THREADS, 1, 1))


def launch_axpy_into_x(x, y, out, *, a, THREADS=256):
    axpy_into_x_host(pointer(x), pointer(y), pointer(out), out.numel(), a, THREADS)
