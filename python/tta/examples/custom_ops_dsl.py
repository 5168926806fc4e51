"""``torch.library`` ops whose kernels are written in cuTile and CuTeDSL, made TensorRT plugins
with ``tta.custom_op`` like the Triton ones of ``custom_ops.py``. The kernels live in
``custom_op_cutile.py`` and ``custom_op_cutedsl.py``, imported only when a launch function runs,
so this module (the ops, their eager impls and ``CASES``) loads where neither DSL is installed
(the GPU check machine runs the compiled kernels, not the DSLs). ``CASES`` feed the via-QDP GPU
manifest (``--backends cutile,cutedsl``).
"""

from __future__ import annotations

import torch

from .custom_ops import Case, randn

NS = "tta_examples"


def launch_tile_axpy(x, y, out, **kwargs):
    from .custom_op_cutile import launch_tile_axpy

    launch_tile_axpy(x, y, out, **kwargs)


def launch_cute_axpby(x, y, out, **kwargs):
    from .custom_op_cutedsl import launch_cute_axpby

    launch_cute_axpby(x, y, out, **kwargs)


@torch.library.custom_op(f"{NS}::tile_axpy", mutates_args=())
def tile_axpy(x: torch.Tensor, y: torch.Tensor, a: float) -> torch.Tensor:
    """``a*x + y`` (cuTile kernel), x and y of one shape."""
    return a * x + y


@tile_axpy.register_fake
def _(x, y, a):
    torch._check(x.shape == y.shape, lambda: "tile_axpy takes two tensors of one shape")
    return torch.empty_like(x)


@torch.library.custom_op(f"{NS}::cute_axpby", mutates_args=())
def cute_axpby(x: torch.Tensor, y: torch.Tensor, *, alpha: float, relu: bool = False) -> torch.Tensor:
    """``alpha*x + y``, then ReLU when asked (CuTeDSL kernel); keyword-only arguments."""
    out = alpha * x + y
    return torch.relu(out) if relu else out


@cute_axpby.register_fake
def _(x, y, *, alpha, relu=False):
    torch._check(x.shape == y.shape, lambda: "cute_axpby takes two tensors of one shape")
    return torch.empty_like(x)


# The backend each case's kernels are written in (what --backends selects).
KERNEL_DSL_OF_CASE = {"custom_tile_axpy": "cutile", "custom_cute_axpby": "cutedsl"}

CASES = (
    Case(
        "custom_tile_axpy",
        f"{NS}::tile_axpy",
        launch_tile_axpy,
        ({"TILE": 1024}, {"TILE": 256}),
        lambda s, dt, dev: randn(s, s, dtype=dt, device=dev),
        {"a": 0.5},
        lambda x, y: 0.5 * x + y,
        ((7, 129), (64, 1024), (333, 4097)),
    ),
    Case(
        "custom_cute_axpby",
        f"{NS}::cute_axpby",
        launch_cute_axpby,
        ({"THREADS": 256},),
        lambda s, dt, dev: randn(s, s, dtype=dt, device=dev),
        {"alpha": -2.0, "relu": True},
        lambda x, y: torch.relu(-2.0 * x + y),
        ((5, 40), (64, 128), (300, 1000)),
    ),
)
