"""The cuTile kernel behind ``tta_examples::tile_axpy`` (``custom_ops_dsl.py``), and its launch
function: plain cuTile host code. ``a`` is an ordinary float kernel argument; tta compiles it in
(TensorRT passes only int32 scalars at run time), so each call site's value is its own kernel."""

from __future__ import annotations

import cuda.tile as ct
import torch


@ct.kernel
def axpy_kernel(x, y, out, a, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    # Loads and stores past the end are masked: the last tile may be partial.
    tx = ct.load(x, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    ty = ct.load(y, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    ct.store(out, index=(bid,), tile=(tx * a + ty).astype(out.dtype))


def launch_tile_axpy(x, y, out, *, a, TILE: int = 1024):
    n = out.numel()
    ct.launch(torch.cuda.current_stream(), (ct.cdiv(n, TILE), 1, 1), axpy_kernel, (x.view(-1), y.view(-1), out.view(-1), a, TILE))
