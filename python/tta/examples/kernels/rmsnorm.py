"""RMSNorm over the last dim in Triton: ``x / sqrt(mean(x^2) + eps) * w``.

The whole row is in registers, so ``BLOCK`` (a config) must be at least the row length, which
the launch function asserts (tta records that as a guard). ``eps`` is a float, so it is a
``tl.constexpr``: TensorRT passes only int32 scalars at run time.

Vector loads need 16-byte aligned addresses, and Triton cannot assume any ahead of time (see
add_relu.py). A row of a length not divisible by ``VEC`` (elements per 16 bytes) starts at an
address that is not, so each row is split where its data becomes aligned: a head of fewer than
``VEC`` elements, a body of whole 16-byte vectors starting at an aligned address, and a tail
shorter than ``VEC``. The head and tail go through one small masked load; the body is
vectorized. This needs only that ``x`` and ``out`` are equally misaligned (always so for
buffers from one allocator); otherwise every row takes the scalar path.

The body's weights ``w[head:head + body]`` are shifted by the head, so they load one element at
a time. Each program therefore keeps its weights in registers for ``ROWS`` rows: program ``p``
of ``G`` handles rows ``p, p + G, p + 2G, ...``, and with ``G`` a multiple of 16 all of them
have the same head (``G * n_cols`` elements is a whole number of 16-byte vectors for any
element size), while neighbouring programs read neighbouring rows.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

BACKEND = "triton"
# Tactics; the first whose BLOCK holds the row is the eager choice, so the all-rounder leads.
CONFIGS = [
    {"BLOCK": 1024, "eps": 1e-6},
    {"BLOCK": 4096, "eps": 1e-6, "ROWS": 4},
    {"BLOCK": 4096, "eps": 1e-6, "ROWS": 2},
    {"BLOCK": 4096, "eps": 1e-6, "num_warps": 8},
]
# Programs come in groups of this many so that every row of a program has the same head.
ROW_PERIOD = 16


@triton.jit
def _aligned16(p):
    return (p.to(tl.int64, bitcast=True) % 16) == 0


@triton.jit
def _rms_rows_chunked(x_ptr, w_ptr, out_ptr, n_rows, n_cols, eps: tl.constexpr, CHUNK: tl.constexpr):
    # Element by element, a chunk at a time: holding a whole row in scalar form across the row
    # loop would take more registers than the vectorized path and slow every launch down.
    c = tl.arange(0, CHUNK)
    for row in range(tl.program_id(0), n_rows, tl.num_programs(0)):
        base = tl.cast(row, tl.int64) * n_cols
        acc = tl.zeros([CHUNK], dtype=tl.float32)
        for start in range(0, n_cols, CHUNK):
            x = tl.load(x_ptr + base + start + c, mask=start + c < n_cols, other=0.0).to(tl.float32)
            acc += x * x
        r = tl.rsqrt(tl.sum(acc, axis=0) / n_cols + eps)
        for start in range(0, n_cols, CHUNK):
            mask = start + c < n_cols
            x = tl.load(x_ptr + base + start + c, mask=mask, other=0.0).to(tl.float32)
            w = tl.load(w_ptr + start + c, mask=mask, other=0.0).to(tl.float32)
            tl.store(out_ptr + base + start + c, (x * r * w).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _rms_rows_split(x_ptr, w_ptr, out_ptr, n_rows, n_cols, eps: tl.constexpr, BLOCK: tl.constexpr, VEC: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    # Elements before the first aligned one; the same for every row of this program.
    first = (x_ptr.to(tl.int64, bitcast=True) // (16 // VEC) + pid.to(tl.int64) * n_cols) % VEC
    head = tl.minimum((VEC - first) % VEC, n_cols).to(tl.int32)
    body = ((n_cols - head) // VEC) * VEC  # provably a multiple of VEC: the mask keeps vectors whole
    in_body = cols < body
    # Head and tail in one small tensor: slots [0, VEC) the head, [VEC, 2 VEC) the tail.
    e = tl.arange(0, 2 * VEC)
    e_col = tl.where(e < VEC, e, head + body + e - VEC)
    in_edge = tl.where(e < VEC, e < head, e - VEC < n_cols - head - body)
    if (head == 0) & _aligned16(w_ptr):
        w_body = tl.load(tl.multiple_of(w_ptr + cols, 16), mask=in_body, other=0.0).to(tl.float32)
    else:
        w_body = tl.load(w_ptr + head + cols, mask=in_body, other=0.0).to(tl.float32)
    w_edge = tl.load(w_ptr + e_col, mask=in_edge, other=0.0).to(tl.float32)
    for row in range(pid, n_rows, tl.num_programs(0)):
        base = tl.cast(row, tl.int64) * n_cols
        px = tl.multiple_of(x_ptr + base + head + cols, 16)
        po = tl.multiple_of(out_ptr + base + head + cols, 16)
        xb = tl.load(px, mask=in_body, other=0.0).to(tl.float32)
        xe = tl.load(x_ptr + base + e_col, mask=in_edge, other=0.0).to(tl.float32)
        r = tl.rsqrt((tl.sum(xb * xb, axis=0) + tl.sum(xe * xe, axis=0)) / n_cols + eps)
        tl.store(po, (xb * r * w_body).to(out_ptr.dtype.element_ty), mask=in_body)
        tl.store(out_ptr + base + e_col, (xe * r * w_edge).to(out_ptr.dtype.element_ty), mask=in_edge)


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, out_ptr, n_rows, n_cols, eps: tl.constexpr, BLOCK: tl.constexpr, VEC: tl.constexpr, CHUNK: tl.constexpr):
    same_misalignment = (x_ptr.to(tl.int64, bitcast=True) % 16) == (out_ptr.to(tl.int64, bitcast=True) % 16)
    if same_misalignment:
        _rms_rows_split(x_ptr, w_ptr, out_ptr, n_rows, n_cols, eps, BLOCK, VEC)
    else:
        _rms_rows_chunked(x_ptr, w_ptr, out_ptr, n_rows, n_cols, eps, CHUNK)


def launch_rmsnorm(x, w, out, *, BLOCK: int = 1024, eps: float = 1e-6, num_warps: int = 4, ROWS: int = 1):
    n_cols = x.shape[-1]
    rows = x.numel() // n_cols
    assert n_cols <= BLOCK, f"row length {n_cols} exceeds BLOCK={BLOCK}"
    programs = ROW_PERIOD * triton.cdiv(rows, ROW_PERIOD * ROWS)
    vec = 16 // x.element_size()
    rmsnorm_kernel[(programs,)](x, w, out, rows, n_cols, eps=eps, BLOCK=BLOCK, VEC=vec, CHUNK=min(BLOCK, 1024), num_warps=num_warps)


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


# x is [batch, tokens, hidden]: the grid is the product of two dynamic dims. Rows of 5 (shorter
# than a vector) and 1001 elements start misaligned (head, body and tail); rows of 1024 are
# aligned.
TEST_SHAPES = [(3, 7, 5), (4, 16, 1001), (1, 257, 1024)]
