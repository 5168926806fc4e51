"""Liger-Kernel's RMSNorm forward kernel, as shipped on PyPI (``liger-kernel``), unedited.

It takes ``eps`` and ``offset`` as run-time floats and row strides as run-time ints: tta binds
the floats to their fixed values, bakes the strides that are constants (``W_row_stride``,
``RSTD_row_stride`` = 1) and passes the shape-derived ones (``Y_row_stride`` = the row length)
as int32 extras. The launch mirrors Liger's ``rms_norm_forward`` (Llama casting mode), writing
``rstd`` to a second output instead of a buffer it allocates. The kernel is imported inside the
launch function, so the GPU conformance runner (which launches the compiled PTX) does not need
the package.
"""

from __future__ import annotations

import torch

from ._shared import rmsnorm_inputs

BACKEND = "triton"
NAME = "triton_liger_rmsnorm"
REQUIRES = ("liger_kernel",)
CONFIGS = [{"BLOCK_SIZE": 1024, "num_warps": 4}, {"BLOCK_SIZE": 4096, "num_warps": 8}]
EPS = 1e-6
_LLAMA = 0  # liger_kernel.ops.rms_norm._CASTING_MODE_LLAMA


def launch_liger_rmsnorm(x, w, y, rstd, *, BLOCK_SIZE: int = 1024, num_warps: int = 4):
    from liger_kernel.ops.rms_norm import _rms_norm_forward_kernel

    n_cols = x.shape[-1]
    X, Y, R = x.view(-1, n_cols), y.view(-1, n_cols), rstd.view(-1)
    assert n_cols <= BLOCK_SIZE, f"row length {n_cols} exceeds BLOCK_SIZE={BLOCK_SIZE}"
    _rms_norm_forward_kernel[(X.shape[0],)](
        Y,
        Y.stride(0),
        X,
        X.stride(0),
        w,
        w.stride(0),
        R,
        R.stride(0),
        n_cols,
        EPS,
        0.0,
        _LLAMA,
        elementwise_affine=True,
        BLOCK_SIZE=BLOCK_SIZE,
        num_warps=num_warps,
    )


LAUNCH = launch_liger_rmsnorm


def reference(x, w):
    xf = x.float()
    rstd = torch.rsqrt(xf.pow(2).mean(-1) + EPS)
    # Llama mode: normalise in fp32, cast back, then scale by the weight.
    y = ((xf * rstd[..., None]).to(x.dtype).float() * w.float()).to(x.dtype)
    return y, rstd


def meta(x, w):
    return x.new_empty(x.shape), x.new_empty(x.shape[:-1], dtype=torch.float32)


make_inputs = rmsnorm_inputs
TEST_SHAPES = [(2, 3, 96), (4, 16, 1001), (1, 257, 1024)]
