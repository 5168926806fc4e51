"""CuTeDSL example kernels and their launch functions: fused add+ReLU and RMSNorm.

TensorRT passes plugin kernels raw device pointers and int32 scalars, so the kernels take
``cute.Pointer`` and ``cutlass.Int32`` parameters and build their tensors inside (a
``cute.Tensor`` parameter is a by-value struct TensorRT cannot pass). A ``@cute.jit`` host
function launches each kernel; the launch functions are ordinary CuTeDSL host code (``make_ptr``
on each tensor's ``data_ptr()``). tta permutes the compiled PTX's parameters to (inputs, extras,
outputs). ``eps`` and the thread count are ``Constexpr``: compiled in.

The example records are ``cutedsl_add_relu.py`` and ``cutedsl_rmsnorm.py``, which import this
module only when launching, so they load where CuTeDSL is not installed.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
import torch
from cutlass import Constexpr, Float32, Int32
from cutlass.cute.runtime import make_ptr

_DTYPES = {torch.float32: cutlass.Float32, torch.float16: cutlass.Float16, torch.bfloat16: cutlass.BFloat16}


def pointer(t: torch.Tensor) -> cute.Pointer:
    return make_ptr(_DTYPES[t.dtype], t.data_ptr(), cute.AddressSpace.gmem, assumed_align=t.element_size())


@cute.kernel
def add_relu_kernel(px: cute.Pointer, py: cute.Pointer, po: cute.Pointer, n: Int32, THREADS: Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    gx = cute.make_tensor(px, cute.make_layout(n))
    gy = cute.make_tensor(py, cute.make_layout(n))
    go = cute.make_tensor(po, cute.make_layout(n))
    i = bidx * THREADS + tidx
    if i < n:
        v = gx[i].to(Float32) + gy[i].to(Float32)
        go[i] = cute.arch.fmax(v, Float32(0.0)).to(go.element_type)


@cute.jit
def add_relu_host(px: cute.Pointer, py: cute.Pointer, po: cute.Pointer, n: Int32, THREADS: Constexpr):
    add_relu_kernel(px, py, po, n, THREADS).launch(grid=((n + THREADS - 1) // THREADS, 1, 1), block=(THREADS, 1, 1))


def launch_add_relu(x, y, out, *, THREADS: int = 256):
    add_relu_host(pointer(x), pointer(y), pointer(out), out.numel(), THREADS)


@cute.kernel
def rmsnorm_kernel(px: cute.Pointer, pw: cute.Pointer, po: cute.Pointer, n_rows: Int32, n_cols: Int32, eps: Constexpr, THREADS: Constexpr):
    # One CTA per row; threads stride over the row, so any row length works.
    tidx, _, _ = cute.arch.thread_idx()
    row, _, _ = cute.arch.block_idx()
    gx = cute.make_tensor(px, cute.make_layout((n_rows, n_cols), stride=(n_cols, 1)))
    go = cute.make_tensor(po, cute.make_layout((n_rows, n_cols), stride=(n_cols, 1)))
    gw = cute.make_tensor(pw, cute.make_layout(n_cols))
    # One partial sum per warp; the DSL's allocator sizes the dynamic shared memory.
    partial = cutlass.memory.SmemAllocator().allocate_tensor(Float32, cute.make_layout(THREADS // 32))

    acc = Float32(0.0)
    for j in cutlass.range(tidx, n_cols, THREADS):
        v = gx[row, j].to(Float32)
        acc = acc + v * v
    acc = cute.arch.warp_reduction_sum(acc)
    # warp_idx() is a full-warp shfl.sync: call it where every lane runs, never under the
    # lane-0 branch (a shfl.sync with a full mask reached by one lane hangs the warp).
    warp = cute.arch.warp_idx()
    if cute.arch.lane_idx() == 0:
        partial[warp] = acc
    cute.arch.sync_threads()
    total = Float32(0.0)
    for k in cutlass.range_constexpr(THREADS // 32):
        total = total + partial[k]

    rstd = cute.math.rsqrt(total / n_cols.to(Float32) + Float32(eps))
    for j in cutlass.range(tidx, n_cols, THREADS):
        go[row, j] = (gx[row, j].to(Float32) * rstd * gw[j].to(Float32)).to(go.element_type)


@cute.jit
def rmsnorm_host(px: cute.Pointer, pw: cute.Pointer, po: cute.Pointer, n_rows: Int32, n_cols: Int32, eps: Constexpr, THREADS: Constexpr):
    rmsnorm_kernel(px, pw, po, n_rows, n_cols, eps, THREADS).launch(grid=(n_rows, 1, 1), block=(THREADS, 1, 1))


def launch_rmsnorm(x, w, out, *, THREADS: int = 256, eps: float = 1e-6):
    n_cols = x.shape[-1]
    rmsnorm_host(pointer(x), pointer(w), pointer(out), x.numel() // n_cols, n_cols, eps, THREADS)
