"""A small model with four regions (two RMSNorms, two residual add+ReLUs) backed by the example
Triton kernels, for the concurrency tests; importable by spawned processes."""

from __future__ import annotations

import hashlib
import time

import torch
import torch.nn.functional as F
from torch import nn

import tta
from tta.examples.kernels import add_relu
from tta.examples.kernels import rmsnorm as rms_kernel


def add_relu_meta(x, y):
    return x.new_empty(x.shape)


def rmsnorm_meta(x, w):
    # Takes a moment, as a meta_impl that computes its shapes does: threads that rewrite at
    # once then overlap inside the program's fake mode.
    out = x.new_empty(x.shape)
    for _ in range(4):
        time.sleep(0.0005)
        out = out.new_empty(out.shape)
    return out


def plugins(tag: str = ""):
    """The two plugins; a distinct ``tag`` gives distinct plugin keys and so distinct ops."""
    fused = tta.custom_plugin(
        kernel=tta.triton(add_relu.launch_add_relu, configs=[{"BLOCK": 1024}, {"BLOCK": 2048, "num_warps": 8}]),
        meta_impl=add_relu_meta,
        name=f"fused_add_relu{tag}",
    )
    rms = tta.custom_plugin(
        kernel=tta.triton(rms_kernel.launch_rmsnorm, configs=[{"BLOCK": 1024, "eps": 1e-6}]),
        meta_impl=rmsnorm_meta,
        name=f"rmsnorm{tag}",
    )
    return fused, rms


class Block(nn.Module):
    def __init__(self, dim: int, fused, rms):
        super().__init__()
        self.fused, self.rms = fused, rms
        self.weight = nn.Parameter(torch.rand(dim) + 0.5)
        self.up, self.down = nn.Linear(dim, 2 * dim), nn.Linear(2 * dim, dim)

    def forward(self, x):
        with tta.lower_as(self.rms):
            h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight
        h = self.down(F.gelu(self.up(h)))
        with tta.lower_as(self.fused):
            return torch.relu(x + h)


class Model(nn.Module):
    def __init__(self, fused, rms, dim: int = 32):
        super().__init__()
        self.blocks = nn.ModuleList([Block(dim, fused, rms), Block(dim, fused, rms)])

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return x


def export(model: nn.Module):
    torch.manual_seed(0)
    x = torch.randn(4, 8, 32)
    ep = torch.export.export(model, (x,), dynamic_shapes=({0: torch.export.Dim("batch", min=1, max=64)},))
    return ep.run_decompositions()


def fingerprint(result) -> tuple:
    """What must not depend on concurrency: the verdicts, op names, report and generated code."""
    gm = result.program.graph_module if hasattr(result.program, "graph_module") else result.program
    return (
        tuple((r.id, r.status, r.op, r.reason) for r in result.regions),
        result.report_text,
        gm.code,
    )


def kernel_digests(kernels: dict) -> dict[str, list[str]]:
    return {op: [hashlib.sha256(k.code).hexdigest() for k in ks] for op, ks in sorted(kernels.items())}
