"""RMSNorm over the last dim in Triton: ``x / sqrt(mean(x^2) + eps) * w``.

One program per row; the whole row is in registers, so ``BLOCK`` (a config) must be at least
the row length, which the launch function asserts (tta records that as a guard). ``eps`` is a
float, so it is a ``tl.constexpr``: TensorRT passes only int32 scalars at run time.

Rows whose start is 16-byte aligned (aligned buffers and a row length divisible by 8) take a
vectorized path; others a scalar one (see add_relu.py for why the check is at run time).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

BACKEND = "triton"
CONFIGS = [{"BLOCK": 1024, "eps": 1e-6}, {"BLOCK": 4096, "eps": 1e-6, "num_warps": 8}]


@triton.jit
def _aligned16(p):
    return (p.to(tl.int64, bitcast=True) % 16) == 0


@triton.jit
def _rms_row(px, pw, po, n_cols, eps: tl.constexpr, BLOCK: tl.constexpr):
    mask = tl.arange(0, BLOCK) < n_cols
    x = tl.load(px, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(pw, mask=mask, other=0.0).to(tl.float32)
    ms = tl.sum(x * x, axis=0) / n_cols
    y = x * tl.rsqrt(ms + eps) * w
    tl.store(po, y.to(po.dtype.element_ty), mask=mask)


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, out_ptr, n_cols, eps: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    if ((n_cols % 8) == 0) & _aligned16(x_ptr) & _aligned16(w_ptr) & _aligned16(out_ptr):
        n8 = (n_cols // 8) * 8  # == n_cols here, but provably a multiple of 8 to the compiler
        px = tl.multiple_of(x_ptr + row * n8 + cols, 16)
        pw = tl.multiple_of(w_ptr + cols, 16)
        po = tl.multiple_of(out_ptr + row * n8 + cols, 16)
        _rms_row(px, pw, po, n8, eps, BLOCK)
    else:
        _rms_row(x_ptr + row * n_cols + cols, w_ptr + cols, out_ptr + row * n_cols + cols, n_cols, eps, BLOCK)


def launch_rmsnorm(x, w, out, *, BLOCK: int = 1024, eps: float = 1e-6, num_warps: int = 4):
    n_cols = x.shape[-1]
    rows = x.numel() // n_cols
    assert n_cols <= BLOCK, f"row length {n_cols} exceeds BLOCK={BLOCK}"
    rmsnorm_kernel[(rows,)](x, w, out, n_cols, eps=eps, BLOCK=BLOCK, num_warps=num_warps)


LAUNCH = launch_rmsnorm


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


# x is [batch, tokens, hidden]: the grid is the product of two dynamic dims. 1001 takes the
# scalar path, the others the vectorized one.
TEST_SHAPES = [(2, 3, 96), (4, 16, 1001), (1, 257, 1024)]
