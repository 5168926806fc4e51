"""Causal attention in Triton, flash style: ``softmax(q k^T / sqrt(d) + causal mask) v``.

q, k, v and the output are ``[batch, heads, seq, head_dim]``. One program per (block of
``BLOCK_M`` queries, batch x head); it streams keys and values in blocks of ``BLOCK_N`` and keeps
a running max and sum (online softmax), so the ``seq x seq`` scores never reach memory. Blocks
wholly above the diagonal are skipped. ``head_dim`` is a run-time size up to ``BLOCK_D`` (a
config; the launch function asserts it, so a kernel is offered only where it fits).

It serves the end-to-end models (``tta.tools.gpu.models``) and is not in ``examples()`` (no ``BACKEND``
or ``LAUNCH``): that suite compiles every kernel with every dim unbounded, and no ``BLOCK_D``
covers an unbounded head_dim.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

CONFIGS = [
    {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_D": 64, "num_warps": 4},
    {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_D": 128, "num_warps": 8},
]
# Tensor-core dot products (Triton's CPU interpreter computes bf16 ones wrongly: bf16 runs on GPUs only).
DTYPES = (torch.float16, torch.bfloat16)
TOL = {"float16": (2e-3, 2e-3), "bfloat16": (1.6e-2, 1.6e-2)}


@triton.jit
def flash_attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, seq, head_dim, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr):
    start_m = tl.program_id(0)
    base = tl.program_id(1).to(tl.int64) * seq * head_dim
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    d_ok = offs_d[None, :] < head_dim
    q = tl.load(q_ptr + base + offs_m[:, None] * head_dim + offs_d[None, :], mask=(offs_m[:, None] < seq) & d_ok, other=0.0)
    # exp2 instead of exp: fold log2(e) into the scale once.
    scale = 1.4426950408889634 / tl.sqrt(head_dim.to(tl.float32))
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    hi = tl.minimum(seq, (start_m + 1) * BLOCK_M)
    for start_n in range(0, hi, BLOCK_N):
        cols = start_n + offs_n
        kv_mask = (cols[:, None] < seq) & d_ok
        k = tl.load(k_ptr + base + cols[:, None] * head_dim + offs_d[None, :], mask=kv_mask, other=0.0)
        s = tl.dot(q, tl.trans(k)) * scale
        s = tl.where((cols[None, :] < seq) & (cols[None, :] <= offs_m[:, None]), s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.exp2(s - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_ptr + base + cols[:, None] * head_dim + offs_d[None, :], mask=kv_mask, other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    acc = acc / l_i[:, None]
    tl.store(
        o_ptr + base + offs_m[:, None] * head_dim + offs_d[None, :], acc.to(o_ptr.dtype.element_ty), mask=(offs_m[:, None] < seq) & d_ok
    )


def launch_flash_attention(q, k, v, out, *, BLOCK_M: int = 64, BLOCK_N: int = 64, BLOCK_D: int = 64, num_warps: int = 4):
    batch, heads, seq, head_dim = q.shape
    assert head_dim <= BLOCK_D, f"head_dim {head_dim} exceeds BLOCK_D={BLOCK_D}"
    grid = (triton.cdiv(seq, BLOCK_M), batch * heads)
    flash_attention_kernel[grid](q, k, v, out, seq, head_dim, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_D=BLOCK_D, num_warps=num_warps)


def reference(q, k, v):
    return torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=True).to(q.dtype)


def meta(q, k, v):
    return q.new_empty(q.shape)


def make_inputs(shape, dtype, device):
    g = torch.Generator(device="cpu").manual_seed(3)
    return [torch.randn(shape, generator=g, dtype=torch.float32).to(device=device, dtype=dtype) for _ in range(3)]


# [batch, heads, seq, head_dim]: a ragged sequence, a full block, head_dim 128 (the second config).
TEST_SHAPES = [(1, 2, 77, 64), (2, 4, 128, 64), (1, 2, 200, 128)]
