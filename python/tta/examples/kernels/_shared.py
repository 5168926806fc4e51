"""References and inputs shared by the cuTile and CuTeDSL examples (no DSL imported here)."""

from __future__ import annotations

import torch


def add_relu_reference(x, y):
    return torch.relu(x + y)


def same_shape(x, *_):
    return x.new_empty(x.shape)


def add_relu_inputs(shape, dtype, device):
    g = torch.Generator(device="cpu").manual_seed(0)
    x = torch.randn(shape, generator=g, dtype=torch.float32).to(device=device, dtype=dtype)
    y = torch.randn(shape, generator=g, dtype=torch.float32).to(device=device, dtype=dtype)
    return [x, y]


def rmsnorm_reference(x, w, eps: float = 1e-6):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w.float()).to(x.dtype)


def rmsnorm_inputs(shape, dtype, device):
    g = torch.Generator(device="cpu").manual_seed(1)
    x = torch.randn(shape, generator=g, dtype=torch.float32).to(device=device, dtype=dtype)
    w = (1.0 + 0.1 * torch.randn(shape[-1], generator=g, dtype=torch.float32)).to(device=device, dtype=dtype)
    return [x, w]
