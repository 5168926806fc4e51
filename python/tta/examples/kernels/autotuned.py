"""A Triton kernel as autotuned code writes it: ``@triton.autotune`` over configs keyed on the
row length, ``@triton.heuristics`` deriving a meta-parameter, and a grid lambda over ``meta``.
``x * scale + y`` over a flat range, where ``scale`` is a run-time float argument.

The launch function passes no configs: tta takes the decorator's configs as the tactics, each
with its ``num_warps``/``num_stages``; the heuristic's value comes from the config.
"""

from __future__ import annotations

import triton
import triton.language as tl

from ._shared import add_relu_inputs, same_shape

BACKEND = "triton"
NAME = "triton_autotuned_axpy"
CONFIGS = None  # the decorator's
SCALE = 0.5


@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 256}, num_warps=2, num_stages=2),
        triton.Config({"BLOCK": 1024}, num_warps=4, num_stages=3),
        triton.Config({"BLOCK": 2048}, num_warps=8, num_stages=1),
    ],
    key=["n"],
)
@triton.heuristics({"UNROLL": lambda args: 2 if args["BLOCK"] >= 1024 else 1})
@triton.jit
def axpy_kernel(x_ptr, y_ptr, out_ptr, n, scale, BLOCK: tl.constexpr, UNROLL: tl.constexpr):
    for u in tl.static_range(UNROLL):
        offs = (tl.program_id(0) * UNROLL + u) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        y = tl.load(y_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_ptr + offs, (x * scale + y).to(out_ptr.dtype.element_ty), mask=mask)


def launch_axpy(x, y, out):
    n = out.numel()
    axpy_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"] * meta["UNROLL"]),)](x, y, out, n, SCALE)


LAUNCH = launch_axpy


def reference(x, y):
    return (x.float() * SCALE + y.float()).to(x.dtype)


meta = same_shape
make_inputs = add_relu_inputs
TEST_SHAPES = [(3, 5), (17, 1000), (1, 70001)]
