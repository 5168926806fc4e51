"""Row-wise softmax in Triton: one program per row, the row in registers (``BLOCK`` >= row
length, asserted by the launch function and recorded as a guard). Aligned rows take a
vectorized path, as in rmsnorm.py."""

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
def _softmax_row(px, po, n_cols, BLOCK: tl.constexpr):
    mask = tl.arange(0, BLOCK) < n_cols
    x = tl.load(px, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    y = e / tl.sum(e, axis=0)
    tl.store(po, y.to(po.dtype.element_ty), mask=mask)


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    if ((n_cols % 8) == 0) & _aligned16(x_ptr) & _aligned16(out_ptr):
        n8 = (n_cols // 8) * 8
        _softmax_row(tl.multiple_of(x_ptr + row * n8 + cols, 16), tl.multiple_of(out_ptr + row * n8 + cols, 16), n8, BLOCK)
    else:
        _softmax_row(x_ptr + row * n_cols + cols, out_ptr + row * n_cols + cols, n_cols, BLOCK)


def launch_softmax(x, out, *, BLOCK: int = 1024, num_warps: int = 4):
    n_cols = x.shape[-1]
    assert n_cols <= BLOCK, f"row length {n_cols} exceeds BLOCK={BLOCK}"
    softmax_kernel[(x.numel() // n_cols,)](x, out, n_cols, BLOCK=BLOCK, num_warps=num_warps)


LAUNCH = launch_softmax


def reference(x):
    return torch.softmax(x.float(), dim=-1).to(x.dtype)


def meta(x):
    return x.new_empty(x.shape)


def make_inputs(shape, dtype, device):
    g = torch.Generator(device="cpu").manual_seed(2)
    return [(3.0 * torch.randn(shape, generator=g, dtype=torch.float32)).to(device=device, dtype=dtype)]


TEST_SHAPES = [(5, 17), (128, 1000), (300, 1024)]
