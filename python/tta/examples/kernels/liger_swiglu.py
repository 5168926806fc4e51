"""Liger-Kernel's SwiGLU forward kernel, as shipped on PyPI (``liger-kernel``), unedited:
``c = silu(a * gate_multiplier) * b`` row by row.

``gate_multiplier`` is a run-time float (bound to its value by tta) and ``stride`` a run-time
int (the row length: an int32 extra). The kernel declares ``n_cols: tl.constexpr``, so the row
length is compiled in: the last dim is static in the plugin's signature (``STATIC_DIMS``).
"""

from __future__ import annotations

import torch

from ._shared import add_relu_inputs

BACKEND = "triton"
NAME = "triton_liger_swiglu"
REQUIRES = ("liger_kernel",)
CONFIGS = [{"BLOCK_SIZE": 1024, "num_warps": 4}]
GATE = 1.0  # Liger's LigerSiLUMulFunction default
HIDDEN = 1000
STATIC_DIMS = {-1: HIDDEN}


def launch_liger_swiglu(a, b, c, *, BLOCK_SIZE: int = 1024, num_warps: int = 4):
    from liger_kernel.ops.swiglu import _swiglu_forward_kernel

    n_cols = a.shape[-1]
    A, B, C = (t.view(-1, t.shape[-1]) for t in (a, b, c))
    _swiglu_forward_kernel[(A.shape[0],)](A, B, C, C.stride(0), GATE, n_cols=n_cols, BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps)


LAUNCH = launch_liger_swiglu


def reference(a, b):
    af = a.float() * GATE
    return (af * torch.sigmoid(af)).to(a.dtype) * b


def meta(a, b):
    return a.new_empty(a.shape)


make_inputs = add_relu_inputs
TEST_SHAPES = [(2, 3, HIDDEN), (5, 37, HIDDEN), (1, 1, HIDDEN)]
