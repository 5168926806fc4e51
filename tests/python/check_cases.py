"""Kernels for test_check_kernels.py: a fused residual-add + RMSNorm region with two outputs of
one shape and dtype (the launch function in the user's order or in tta's), and kernels that
compute the wrong thing."""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from torch import nn

import tta

EPS = 1e-6


@triton.jit
def add_rmsnorm_kernel(x_ptr, r_ptr, w_ptr, y_ptr, h_ptr, n_cols, eps: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    c = tl.arange(0, BLOCK)
    m = c < n_cols
    x = tl.load(x_ptr + row * n_cols + c, mask=m, other=0.0).to(tl.float32)
    r = tl.load(r_ptr + c, mask=m, other=0.0).to(tl.float32)
    h = (x + r).to(h_ptr.dtype.element_ty)
    tl.store(h_ptr + row * n_cols + c, h, mask=m)
    hf = h.to(tl.float32)
    rs = tl.rsqrt(tl.sum(hf * hf, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + c, mask=m, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * n_cols + c, (hf * rs * w).to(y_ptr.dtype.element_ty), mask=m)


def _launch(x, r, w, y, h, BLOCK):
    n = x.shape[-1]
    assert n <= BLOCK
    add_rmsnorm_kernel[(x.numel() // n,)](x, r, w, y, h, n, eps=EPS, BLOCK=BLOCK)


def launch_user_order(x, r, w, y, h, *, BLOCK: int = 256):
    """The outputs in the order the user returns them, ``(y, h)``: the bug of issue 27."""
    _launch(x, r, w, y, h, BLOCK)


def launch_tta_order(x, r, w, h, y, *, BLOCK: int = 256):
    """The outputs in the region's order, ``(h, y)``."""
    _launch(x, r, w, y, h, BLOCK)


CONFIGS = [{"BLOCK": 64}, {"BLOCK": 256}]
USER_ORDER = tta.custom_plugin(kernel=tta.triton(launch_user_order, configs=CONFIGS), name="add_rmsnorm_user_order")
TTA_ORDER = tta.custom_plugin(kernel=tta.triton(launch_tta_order, configs=CONFIGS), name="add_rmsnorm_tta_order")


class AddRMSNorm(nn.Module):
    """``h = x + r; y = rmsnorm(h) * w``: both outputs leave the region (the next layer reads h)."""

    def __init__(self, plugin, dim: int = 48):
        super().__init__()
        self.plugin = plugin
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(dim))
        # The residual as a (static) parameter: one dynamic input, so the region's inputs share
        # no dynamic dim (issue 27 item 6, another branch).
        self.residual = nn.Parameter(torch.randn(dim))

    def forward(self, x):
        r = self.residual
        with tta.lower_as(impl=self.plugin):
            h = x + r
            hf = h.float()
            y = (hf * torch.rsqrt(hf.pow(2).mean(-1, keepdim=True) + EPS) * self.weight.float()).type_as(h)
        return y * 2, h + 1


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, n_cols, RELU: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    s = tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs % n_cols, mask=m)
    if RELU:
        s = tl.maximum(s, 0.0)
    tl.store(out_ptr + offs, s, mask=m)


def launch_add(x, y, out, *, BLOCK: int = 128, RELU: bool = True):
    n = x.numel()
    add_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, x.shape[-1], RELU=RELU, BLOCK=BLOCK)


def launch_add_first_block_only(x, y, out, *, BLOCK: int = 128):
    """Launches one program: every element past the first BLOCK is never written."""
    add_kernel[(1,)](x, y, out, x.numel(), x.shape[-1], RELU=True, BLOCK=BLOCK)


class AddRelu(nn.Module):
    """``relu(x + y)``, ``y`` a row broadcast over ``x``'s batch (so the inputs share no dynamic
    dim: issue 27 item 6 is another branch's)."""

    def __init__(self, plugin):
        super().__init__()
        self.plugin = plugin

    def forward(self, x, y):
        with tta.lower_as(impl=self.plugin):
            return torch.relu(x + y)


def add_relu_plugin(launch, configs, name, backend: str = "triton"):
    return tta.custom_plugin(kernel=getattr(tta, backend)(launch, configs=configs), name=name)


class AddRMSNormDeclared(AddRMSNorm):
    """``AddRMSNorm`` with the fix the check names for the user-order launch: the outputs
    declared in the order that launch function takes them."""

    def forward(self, x):
        r = self.residual
        with tta.lower_as(impl=self.plugin, outputs=lambda: (y, h)):
            h = x + r
            hf = h.float()
            y = (hf * torch.rsqrt(hf.pow(2).mean(-1, keepdim=True) + EPS) * self.weight.float()).type_as(h)
        return y * 2, h + 1


@triton.jit
def scale_kernel(x_ptr, out_ptr, n_rows, n_cols, TRANSPOSED: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    c = tl.arange(0, BLOCK)
    m = c < n_cols
    v = tl.load(x_ptr + row * n_cols + c, mask=m) * 2.0
    if TRANSPOSED:
        tl.store(out_ptr + c * n_rows + row, v, mask=m)  # column-major: the layout bug
    else:
        tl.store(out_ptr + row * n_cols + c, v, mask=m)


def launch_scale(x, out, *, BLOCK: int = 64, TRANSPOSED: bool = False):
    n = x.shape[-1]
    assert n <= BLOCK
    scale_kernel[(x.numel() // n,)](x, out, x.numel() // n, n, TRANSPOSED=TRANSPOSED, BLOCK=BLOCK)


class Scale(nn.Module):
    def __init__(self, plugin):
        super().__init__()
        self.plugin = plugin

    def forward(self, x):
        with tta.lower_as(impl=self.plugin):
            scaled = x * 2
        return scaled + 1
