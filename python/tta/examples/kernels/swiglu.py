"""SwiGLU's gate in Triton: ``silu(gate) * up``, elementwise, computed in fp32.

The two projections stay outside (matrix multiplies belong to the GEMM libraries); the region is
the activation between them, which eager PyTorch runs as three kernels.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

BACKEND = "triton"
CONFIGS = [{"BLOCK": 1024}, {"BLOCK": 4096, "num_warps": 8}]


@triton.jit
def swiglu_kernel(gate_ptr, up_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    g = tl.load(gate_ptr + offs, mask=mask).to(tl.float32)
    u = tl.load(up_ptr + offs, mask=mask).to(tl.float32)
    out = g * tl.sigmoid(g) * u
    tl.store(out_ptr + offs, out.to(out_ptr.dtype.element_ty), mask=mask)


def launch_swiglu(gate, up, out, *, BLOCK: int = 1024, num_warps: int = 4):
    n = out.numel()
    swiglu_kernel[(triton.cdiv(n, BLOCK),)](gate, up, out, n, BLOCK=BLOCK, num_warps=num_warps)


LAUNCH = launch_swiglu


def reference(gate, up):
    return (torch.nn.functional.silu(gate.float()) * up.float()).to(gate.dtype)


def meta(gate, up):
    return gate.new_empty(gate.shape)


def make_inputs(shape, dtype, device):
    g = torch.Generator(device="cpu").manual_seed(2)
    gate = torch.randn(shape, generator=g, dtype=torch.float32).to(device=device, dtype=dtype)
    up = torch.randn(shape, generator=g, dtype=torch.float32).to(device=device, dtype=dtype)
    return [gate, up]


TEST_SHAPES = [(3, 5, 77), (2, 8, 1024), (1, 33, 2752)]
