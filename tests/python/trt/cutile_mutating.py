"""A cuTile kernel that writes one of its inputs (for ``test_custom_op_dsl.py``): the op it
serves declares no mutation, so tta must refuse it. Imported only by the cuTile test."""

import cuda.tile as ct
import torch


@ct.kernel
def axpy_into_y(x, y, out, a, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    tx = ct.load(x, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    ty = ct.load(y, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, index=(bid,), tile=tx * a + ty)
    ct.store(y, index=(bid,), tile=tx * a + ty)  # the undeclared write


def launch_axpy_into_y(x, y, out, *, a, TILE=256):
    ct.launch(torch.cuda.current_stream(), (ct.cdiv(out.numel(), TILE), 1, 1), axpy_into_y, (x.view(-1), y.view(-1), out.view(-1), a, TILE))
