"""CuTeDSL launch functions that tta must refuse (or accept), for test_aot_cutedsl.py. The DSL
reads kernel source from files, so they live in a module rather than in the test."""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
import cutlass.torch
import torch
from cuda.bindings import driver as cuda
from cutlass import Constexpr, Float32, Int32

from tta.examples.kernels.cutedsl_kernels import add_relu_host, add_relu_kernel, pointer


@cute.kernel
def copy_kernel(px: cute.Pointer, po: cute.Pointer, n: Int32):
    i, _, _ = cute.arch.thread_idx()
    b, _, _ = cute.arch.block_idx()
    j = b * 128 + i
    if j < n:
        cute.make_tensor(po, cute.make_layout(n))[j] = cute.make_tensor(px, cute.make_layout(n))[j]


@cute.kernel
def tensor_kernel(gx: cute.Tensor, po: cute.Pointer, n: Int32):
    i, _, _ = cute.arch.thread_idx()
    if i < n:
        cute.make_tensor(po, cute.make_layout(n))[i] = gx[i]


@cute.kernel
def scaled_copy_kernel(px: cute.Pointer, po: cute.Pointer, n: Int32, s: Float32):
    i, _, _ = cute.arch.thread_idx()
    if i < n:
        cute.make_tensor(po, cute.make_layout(n))[i] = cute.make_tensor(px, cute.make_layout(n))[i] * s


@cute.jit
def tensor_host(px: cute.Pointer, po: cute.Pointer, n: Int32):
    tensor_kernel(cute.make_tensor(px, cute.make_layout(n)), po, n).launch(grid=(1, 1, 1), block=(128, 1, 1))


@cute.jit
def float_host(px: cute.Pointer, po: cute.Pointer, n: Int32, s: Float32):
    copy_kernel(px, po, n).launch(grid=((n + 127) // 128, 1, 1), block=(128, 1, 1))


@cute.jit
def float_kernel_host(px: cute.Pointer, po: cute.Pointer, n: Int32, s: Constexpr):
    scaled_copy_kernel(px, po, n, Float32(s)).launch(grid=((n + 127) // 128, 1, 1), block=(128, 1, 1))


@cute.jit
def ceil_div_host(px: cute.Pointer, po: cute.Pointer, n: Int32):
    copy_kernel(px, po, n).launch(grid=(cute.ceil_div(n, 128), 1, 1), block=(128, 1, 1))


@cute.jit
def offset_host(px: cute.Pointer, po: cute.Pointer, n: Int32):
    copy_kernel(px + 4, po, n).launch(grid=((n + 127) // 128, 1, 1), block=(128, 1, 1))


@cute.jit
def copy_host(px: cute.Pointer, po: cute.Pointer, n: Int32, B: Constexpr):
    copy_kernel(px, po, n).launch(grid=((n + B - 1) // B, 1, 1), block=(128, 1, 1))


@cute.jit
def two_kernels_host(px: cute.Pointer, po: cute.Pointer, n: Int32):
    copy_kernel(px, po, n).launch(grid=((n + 127) // 128, 1, 1), block=(128, 1, 1))
    copy_kernel(po, px, n).launch(grid=((n + 127) // 128, 1, 1), block=(128, 1, 1))


def launch_tensor_param(x, out):
    tensor_host(pointer(x), pointer(out), out.numel())


def launch_runtime_float(x, out):
    float_host(pointer(x), pointer(out), out.numel(), 2.0)


def launch_float_kernel_param(x, out):
    float_kernel_host(pointer(x), pointer(out), out.numel(), 2.0)


def launch_ceil_div(x, out):
    ceil_div_host(pointer(x), pointer(out), out.numel())


def launch_offset(x, out):
    offset_host(pointer(x), pointer(out), out.numel())


def launch_torch_tensor(x, out):
    copy_host(x, pointer(out), out.numel(), 128)


def launch_shape_to_constexpr(x, out):
    copy_host(pointer(x), pointer(out), out.numel(), x.shape[0])


def launch_two_kernels(x, out):
    two_kernels_host(pointer(x), pointer(out), out.numel())


def launch_scratch(x, out):
    tmp = torch.empty_like(x)
    copy_host(pointer(tmp), pointer(out), out.numel(), 128)


def launch_ignores_y(x, y, out, *, THREADS=256):
    add_relu_host(pointer(x), pointer(x), pointer(out), out.numel(), THREADS)


def launch_via_compile(x, y, out, *, THREADS=256):
    # The compile-then-call idiom: Constexprs at compile time, runtime values at the call.
    compiled = cute.compile(add_relu_host, pointer(x), pointer(y), pointer(out), Int32(1), THREADS)
    compiled(pointer(x), pointer(y), pointer(out), out.numel())


def launch_wrong_dtype(x, out):
    p = cutlass.cute.runtime.make_ptr(cutlass.Float16, x.data_ptr(), cute.AddressSpace.gmem, assumed_align=2)
    copy_host(p, pointer(out), out.numel(), 128)


KERNELS = (add_relu_kernel,)


@cute.jit
def stream_host(px: cute.Pointer, po: cute.Pointer, n: Int32, stream: cuda.CUstream):
    copy_kernel(px, po, n).launch(grid=((n + 127) // 128, 1, 1), block=(128, 1, 1), stream=stream)


def launch_with_stream(x, out):
    # The usual CuTeDSL host signature ends with a stream; TensorRT launches on its own.
    stream_host(pointer(x), pointer(out), out.numel(), cutlass.torch.current_stream())
