"""A Triton kernel with two outputs of different shapes (``x + 1`` and ``(x * 2).flatten()``),
for the several-outputs plugin tests."""

import triton
import triton.language as tl


@triton.jit
def two_out_kernel(x_ptr, a_ptr, b_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(a_ptr + offs, x + 1, mask=mask)
    tl.store(b_ptr + offs, x * 2, mask=mask)


def launch(x, a, b, BLOCK):
    n = x.numel()
    two_out_kernel[(triton.cdiv(n, BLOCK),)](x, a, b, n, BLOCK=BLOCK)


def meta(x):
    return x.new_empty(x.shape), x.new_empty(x.numel())
