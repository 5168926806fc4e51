"""RMSNorm over the last dim in Triton: ``x / sqrt(mean(x^2) + eps) * w``.

One program per row; the whole row is in registers, so ``BLOCK`` (a config) must be at least
the row length, which the launch function asserts (tta records that as a guard). ``eps`` is a
float, so it is a ``tl.constexpr``: TensorRT passes only int32 scalars at run time.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

CONFIGS = [{"BLOCK": 1024, "eps": 1e-6}, {"BLOCK": 4096, "eps": 1e-6, "num_warps": 8}]

BACKEND = "triton"


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, out_ptr, n_cols, eps: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    ms = tl.sum(x * x, axis=0) / n_cols
    y = x * tl.rsqrt(ms + eps) * w
    tl.store(out_ptr + row * n_cols + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def launch_rmsnorm(x, w, out, *, BLOCK: int = 1024, eps: float = 1e-6, num_warps: int = 4):
    n_cols = x.shape[-1]
    rows = x.numel() // n_cols
    assert n_cols <= BLOCK, f"row length {n_cols} exceeds BLOCK={BLOCK}"
    rmsnorm_kernel[(rows,)](x, w, out, n_cols, eps=eps, BLOCK=BLOCK, num_warps=num_warps)


def reference(x, w, eps: float = 1e-6):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w.float()).to(x.dtype)


def meta(x, w):
    return x.new_empty(x.shape)


def make_inputs(shape, dtype, device):
    g = torch.Generator(device="cpu").manual_seed(1)
    x = torch.randn(shape, generator=g, dtype=torch.float32).to(device=device, dtype=dtype)
    w = (1.0 + 0.1 * torch.randn(shape[-1], generator=g, dtype=torch.float32)).to(device=device, dtype=dtype)
    return [x, w]


# x is [batch, tokens, hidden]: the grid is the product of two dynamic dims.
TEST_SHAPES = [(2, 3, 96), (4, 16, 1000), (1, 257, 1024)]

LAUNCH = launch_rmsnorm
