"""cuTile launch functions that tta must refuse (or accept), for test_aot_cutile.py. cuTile reads
kernel source from files, so they live in a module rather than in the test."""

from __future__ import annotations

import cuda.tile as ct
import torch


@ct.kernel
def copy_kernel(x, out, TILE: ct.Constant[int]):
    b = ct.bid(0)
    ct.store(out, index=(b,), tile=ct.load(x, index=(b,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO))


@ct.kernel
def scale_kernel(x, out, n, s, TILE: ct.Constant[int]):
    # ``n`` is a runtime scalar (a shape expression), ``s`` a float compiled in.
    b = ct.bid(0)
    t = ct.load(x, index=(b,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, index=(b,), tile=(t * s).astype(out.dtype))
    _ = n


def _stream():
    return torch.cuda.current_stream()


def launch_copy_ignoring_y(x, y, out, *, TILE=256):
    ct.launch(_stream(), (ct.cdiv(out.numel(), TILE), 1, 1), copy_kernel, (x.view(-1), out.view(-1), TILE))


def launch_scale(x, out, *, TILE=256):
    n = x.numel()
    ct.launch(_stream(), (ct.cdiv(n, TILE), 1, 1), scale_kernel, (x.view(-1), out.view(-1), n, 0.5, TILE))


def launch_float_from_shapes(x, out):
    ct.launch(_stream(), (1, 1, 1), scale_kernel, (x.view(-1), out.view(-1), 1, x.shape[0] / 2, 256))


def launch_shape_to_constant(x, out):
    ct.launch(_stream(), (1, 1, 1), copy_kernel, (x.view(-1), out.view(-1), x.shape[0]))


def launch_scratch(x, out):
    tmp = torch.empty_like(x)
    ct.launch(_stream(), (1, 1, 1), copy_kernel, (tmp.view(-1), out.view(-1), 256))


def launch_twice(x, out):
    ct.launch(_stream(), (1, 1, 1), copy_kernel, (x.view(-1), out.view(-1), 256))
    ct.launch(_stream(), (1, 1, 1), copy_kernel, (x.view(-1), out.view(-1), 256))


def launch_offset_view(x, out):
    ct.launch(_stream(), (1, 1, 1), copy_kernel, (x.view(-1)[1:], out.view(-1), 256))
