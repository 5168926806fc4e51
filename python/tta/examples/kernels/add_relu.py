"""Fused ``relu(x + y)`` in Triton: the smallest useful plugin kernel.

The kernel takes its parameters in the order a person would write them (inputs, output, then
the size); tta reorders the compiled PTX to TensorRT's (inputs, extras, outputs) ABI.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

CONFIGS = [{"BLOCK": 1024}, {"BLOCK": 2048, "num_warps": 8}]

BACKEND = "triton"


@triton.jit
def add_relu_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    y = tl.load(y_ptr + offs, mask=mask).to(tl.float32)
    out = tl.maximum(x + y, 0.0)
    tl.store(out_ptr + offs, out.to(out_ptr.dtype.element_ty), mask=mask)


def launch_add_relu(x, y, out, *, BLOCK: int = 1024, num_warps: int = 4):
    n = out.numel()
    add_relu_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK, num_warps=num_warps)


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

LAUNCH = launch_add_relu
