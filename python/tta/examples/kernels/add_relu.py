"""Fused ``relu(x + y)`` in Triton: the smallest useful plugin kernel.

The kernel takes its parameters in the order a person would write them (inputs, output, then
the size); tta reorders the compiled PTX to TensorRT's (inputs, extras, outputs) ABI.

Alignment: ahead-of-time, Triton cannot assume the 16-byte-aligned pointers its JIT would
specialize on (TensorRT documents no alignment for plugin buffers), and unaligned code loads one
element at a time. So the kernel checks alignment at run time: full blocks of aligned buffers
take a vectorized path (``tl.multiple_of`` on the pointers, no mask), everything else a masked
scalar one. Both are correct for any buffer; the branch is uniform per program.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

BACKEND = "triton"
CONFIGS = [{"BLOCK": 1024}, {"BLOCK": 2048, "num_warps": 8}]


@triton.jit
def _aligned16(p):
    return (p.to(tl.int64, bitcast=True) % 16) == 0


@triton.jit
def add_relu_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    start = tl.program_id(0).to(tl.int64) * BLOCK
    offs = tl.arange(0, BLOCK)
    if (start + BLOCK <= n) & _aligned16(x_ptr) & _aligned16(y_ptr) & _aligned16(out_ptr):
        x = tl.load(tl.multiple_of(x_ptr + start + offs, 16)).to(tl.float32)
        y = tl.load(tl.multiple_of(y_ptr + start + offs, 16)).to(tl.float32)
        out = tl.maximum(x + y, 0.0)
        tl.store(tl.multiple_of(out_ptr + start + offs, 16), out.to(out_ptr.dtype.element_ty))
    else:
        mask = start + offs < n
        x = tl.load(x_ptr + start + offs, mask=mask).to(tl.float32)
        y = tl.load(y_ptr + start + offs, mask=mask).to(tl.float32)
        out = tl.maximum(x + y, 0.0)
        tl.store(out_ptr + start + offs, out.to(out_ptr.dtype.element_ty), mask=mask)


def launch_add_relu(x, y, out, *, BLOCK: int = 1024, num_warps: int = 4):
    n = out.numel()
    add_relu_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK, num_warps=num_warps)


LAUNCH = launch_add_relu


def reference(x, y):
    return torch.relu(x + y)


def meta(x, y):
    return x.new_empty(x.shape)


def make_inputs(shape, dtype, device):
    g = torch.Generator(device="cpu").manual_seed(0)
    x = torch.randn(shape, generator=g, dtype=torch.float32).to(device=device, dtype=dtype)
    y = torch.randn(shape, generator=g, dtype=torch.float32).to(device=device, dtype=dtype)
    return [x, y]


# Sizes that share one compiled kernel (dynamic dims): a ragged tail, a multiple of BLOCK, large.
TEST_SHAPES = [(7, 129), (64, 1024), (333, 4097)]
