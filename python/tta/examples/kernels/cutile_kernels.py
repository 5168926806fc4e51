"""cuTile example kernels and their launch functions: fused add+ReLU and RMSNorm.

These are ordinary cuTile kernels: array parameters are cuTile arrays (in cuTile's native ABI,
``pointer, shape..., strides...``), and the launch functions are plain ``ct.launch`` code.
tta compiles each kernel inside a generated entry in TensorRT's (inputs, extras, outputs) order
that rebuilds the arrays from the pointers and int32 extras (see ``tta/aot/cutile/backend.py``). Floats
(``eps``) and config values are compiled in; TensorRT passes only int32 scalars at run time.

The example records (reference, inputs, configs) are ``cutile_add_relu.py`` and
``cutile_rmsnorm.py``, which import this module only when launching, so they load where cuTile
is not installed (the GPU check machine).
"""

from __future__ import annotations

import cuda.tile as ct
import torch


@ct.kernel
def add_relu_kernel(x, y, out, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    # Loads and stores past the end of the array are masked: the last tile may be partial.
    tx = ct.load(x, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    ty = ct.load(y, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    ct.store(out, index=(bid,), tile=ct.maximum(tx + ty, 0.0).astype(out.dtype))


def launch_add_relu(x, y, out, *, TILE: int = 1024):
    n = out.numel()
    ct.launch(
        torch.cuda.current_stream(),
        (ct.cdiv(n, TILE), 1, 1),
        add_relu_kernel,
        (x.view(-1), y.view(-1), out.view(-1), TILE),
    )


@ct.kernel
def rmsnorm_kernel(x, w, out, eps, TILE_N: ct.Constant[int]):
    # One tile block per row, the whole row in one tile (TILE_N >= row length).
    row = ct.bid(0)
    tx = ct.load(x, index=(row, 0), shape=(1, TILE_N), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    tw = ct.load(w, index=(0,), shape=(TILE_N,), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    ms = ct.sum(tx * tx, axis=1, keepdims=True) / x.shape[1]
    y = tx * ct.rsqrt(ms + eps) * ct.reshape(tw, (1, TILE_N))
    ct.store(out, index=(row, 0), tile=y.astype(out.dtype))


def launch_rmsnorm(x, w, out, *, TILE_N: int = 1024, eps: float = 1e-6):
    n = x.shape[-1]
    assert n <= TILE_N, f"row length {n} exceeds TILE_N={TILE_N}"  # tta records this as a guard
    x2 = x.reshape(-1, n)
    ct.launch(
        torch.cuda.current_stream(),
        (x2.shape[0], 1, 1),
        rmsnorm_kernel,
        (x2, w, out.reshape(-1, n), eps, TILE_N),
    )
