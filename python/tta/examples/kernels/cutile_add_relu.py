"""Example: fused ``relu(x + y)`` in cuTile (the kernel is ``cutile_kernels.add_relu_kernel``).

This record imports cuTile only when launching, so the reference and inputs load where cuTile
is not installed (the GPU check machine runs the compiled kernel, not cuTile).
"""

from __future__ import annotations

from ._shared import add_relu_inputs as make_inputs
from ._shared import add_relu_reference as reference
from ._shared import same_shape as meta

BACKEND = "cutile"
CONFIGS = [{"TILE": 1024}, {"TILE": 256}]
# One compiled kernel serves all of these: a ragged tail, a multiple of TILE, large.
TEST_SHAPES = [(7, 129), (64, 1024), (333, 4097)]


def launch_add_relu(x, y, out, **config):
    from .cutile_kernels import launch_add_relu

    launch_add_relu(x, y, out, **config)


LAUNCH = launch_add_relu
__all__ = ["BACKEND", "CONFIGS", "LAUNCH", "TEST_SHAPES", "make_inputs", "meta", "reference"]
