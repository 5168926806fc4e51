"""The end-to-end models, in plain torch with ``tta.lower_as`` regions, each with its kernels'
names, inputs and a dynamic batch dim: run by the GPU tests (tests/python/test_gpu_backends.py)
and the backend benchmark (``tta.tools.gpu.bench_backends``).

* ``residual``: the seed's ResidualBlock, ``relu(x + y)`` as one fused add+ReLU region.
* ``llama``: a Llama-style decoder block; RMSNorm (twice) and SwiGLU's gate are regions,
  attention stays ``scaled_dot_product_attention``.
* ``attention``: projections around a causal attention region run by a flash-attention kernel.

And ``DSLResidualBlock``: the ResidualBlock with a cuTile or CuTeDSL add+ReLU kernel
(``dsl_add_relu_plugin``), which the Inductor backend runs as its compiled artifact.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

import tta
from tta.examples.kernels import add_relu, flash_attention, rmsnorm, swiglu

ADD_RELU = tta.custom_plugin(
    kernel=tta.triton(add_relu.launch_add_relu, configs=add_relu.CONFIGS), meta_impl=add_relu.meta, name="fused_add_relu"
)
# The example's configs plus a BLOCK as long as the Llama block's 2048-wide rows: the first config
# whose BLOCK holds the row is taken, and a row padded to 4096 lanes wastes half the threads.
RMSNORM_CONFIGS = [{"BLOCK": b, "eps": 1e-6, "num_warps": 4 if b <= 1024 else 8} for b in (1024, 2048, 4096)]
RMSNORM = tta.custom_plugin(kernel=tta.triton(rmsnorm.launch_rmsnorm, configs=RMSNORM_CONFIGS), meta_impl=rmsnorm.meta, name="rmsnorm")
SWIGLU = tta.custom_plugin(kernel=tta.triton(swiglu.launch_swiglu, configs=swiglu.CONFIGS), meta_impl=swiglu.meta, name="swiglu")
ATTENTION = tta.custom_plugin(
    kernel=tta.triton(flash_attention.launch_flash_attention, configs=flash_attention.CONFIGS),
    meta_impl=flash_attention.meta,
    name="flash_attention",
)


class ResidualBlock(nn.Module):
    def forward(self, x, y):
        with tta.lower_as(impl=ADD_RELU):
            return torch.relu(x + y)


def dsl_add_relu_plugin(backend: str):
    """add+ReLU as a ``"cutile"`` or ``"cutedsl"`` plugin, from the example kernels. Declaring
    it needs the DSL installed (where the kernels compile); see ``tta.tools.gpu.build_bundle``."""
    from tta.examples.kernels import cutedsl_add_relu, cutile_add_relu

    example = {"cutile": cutile_add_relu, "cutedsl": cutedsl_add_relu}[backend]
    spec = getattr(tta, backend)(example.launch_add_relu, configs=example.CONFIGS)
    return tta.custom_plugin(kernel=spec, meta_impl=example.meta, name=f"{backend}_add_relu_e2e")


class DSLResidualBlock(nn.Module):
    def __init__(self, plugin):
        super().__init__()
        self.plugin = plugin

    def forward(self, x, y):
        with tta.lower_as(impl=self.plugin):
            return torch.relu(x + y)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):  # eps matches the kernel configs'
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(dim))
        self.eps = eps

    def forward(self, x):
        with tta.lower_as(impl=RMSNORM):
            xf = x.float()
            # type_as, as Llama's reference code casts back: torch.export checks every .to()
            # with an assertion node outside the region, which would split it on some torch versions.
            return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight.float()).type_as(x)


def _causal_attention(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


class Attention(nn.Module):
    """Projections and causal attention over ``[batch, seq, dim]``; ``fused`` marks the
    attention itself as a flash-attention region."""

    def __init__(self, dim: int, heads: int, fused: bool):
        super().__init__()
        self.heads, self.fused = heads, fused
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.out = nn.Linear(dim, dim, bias=False)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        if self.fused:
            with tta.lower_as(impl=ATTENTION):
                o = _causal_attention(q, k, v)
        else:
            o = _causal_attention(q, k, v)
        return self.out(o.transpose(1, 2).reshape(b, s, d))


class LlamaBlock(nn.Module):
    def __init__(self, dim: int, heads: int, hidden: int):
        super().__init__()
        self.attn_norm, self.mlp_norm = RMSNorm(dim), RMSNorm(dim)
        self.attn = Attention(dim, heads, fused=False)
        self.gate = nn.Linear(dim, hidden, bias=False)
        self.up = nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        h = x + self.attn(self.attn_norm(x))
        m = self.mlp_norm(h)
        g, u = self.gate(m), self.up(m)
        with tta.lower_as(impl=SWIGLU):
            a = F.silu(g) * u
        return h + self.down(a)


class AttentionBlock(nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.attn = Attention(dim, heads, fused=True)

    def forward(self, x):
        return self.attn(x)


@dataclass(frozen=True)
class Case:
    """One model: how to build it and its inputs at a batch size, and its tolerances."""

    name: str
    build: Callable[[], nn.Module]
    inputs: Callable[[int, torch.dtype, str], tuple]
    kernels: tuple[str, ...]  # Triton kernel names the regions launch
    n_regions: int
    tol: dict  # dtype name -> (atol, rtol) against the original model in the same dtype

    def model(self, dtype: torch.dtype, device: str) -> nn.Module:
        torch.manual_seed(0)
        return self.build().to(device=device, dtype=dtype).eval()

    def dynamic_shapes(self, max_batch: int = 512):
        batch = torch.export.Dim("batch", min=1, max=max_batch)
        return tuple({0: batch} for _ in self.inputs(2, torch.float32, "meta"))


def _randn(*shape, dtype, device, seed: int, scale: float = 1.0):
    g = torch.Generator(device="cpu").manual_seed(seed)
    return (scale * torch.randn(*shape, generator=g)).to(device=device, dtype=dtype)


def cases(size: str = "test") -> list[Case]:
    """The three models; ``size="bench"`` gives benchmark sizes, ``"test"`` quick ones."""
    big = size == "bench"
    dim, heads, hidden, seq, cols = (2048, 16, 5632, 512, 4096 * 4) if big else (256, 4, 704, 64, 1024)
    mm_tol = {"float16": (2e-2, 2e-2), "bfloat16": (8e-2, 5e-2), "float32": (1e-4, 1e-4)}

    def linear_init(m: nn.Module) -> nn.Module:
        for p in m.parameters():
            if p.dim() == 2:
                nn.init.normal_(p, std=0.02)
        return m

    return [
        Case(
            "residual",
            ResidualBlock,
            lambda b, dt, dev: (_randn(b, cols, dtype=dt, device=dev, seed=1), _randn(b, cols, dtype=dt, device=dev, seed=2)),
            ("add_relu_kernel",),
            1,
            {"float16": (2e-3, 2e-3), "bfloat16": (1e-2, 1e-2), "float32": (1e-6, 1e-6)},
        ),
        Case(
            "llama",
            lambda: linear_init(LlamaBlock(dim, heads, hidden)),
            lambda b, dt, dev: (_randn(b, seq, dim, dtype=dt, device=dev, seed=3),),
            ("rmsnorm_kernel", "swiglu_kernel"),
            3,
            mm_tol,
        ),
        Case(
            "attention",
            lambda: linear_init(AttentionBlock(dim, heads)),
            lambda b, dt, dev: (_randn(b, seq, dim, dtype=dt, device=dev, seed=4),),
            ("flash_attention_kernel",),
            1,
            mm_tol,
        ),
    ]


def by_name(name: str, size: str = "test") -> Case:
    return next(c for c in cases(size) if c.name == name)
