"""Example: RMSNorm over the last dim in cuTile (``cutile_kernels.rmsnorm_kernel``); one tile
block per row with the whole row in one tile, so ``TILE_N`` must cover the row (a guard).

This record imports cuTile only when launching (see ``cutile_add_relu.py``).
"""

from __future__ import annotations

from ._shared import rmsnorm_inputs as make_inputs
from ._shared import rmsnorm_reference as reference
from ._shared import same_shape as meta

BACKEND = "cutile"
CONFIGS = [{"TILE_N": 1024, "eps": 1e-6}, {"TILE_N": 4096, "eps": 1e-6}]
# x is [batch, tokens, hidden]: the grid is the product of two dynamic dims.
TEST_SHAPES = [(2, 3, 96), (4, 16, 1000), (1, 257, 1024)]


def launch_rmsnorm(x, w, out, **config):
    from .cutile_kernels import launch_rmsnorm

    launch_rmsnorm(x, w, out, **config)


LAUNCH = launch_rmsnorm
__all__ = ["BACKEND", "CONFIGS", "LAUNCH", "TEST_SHAPES", "make_inputs", "meta", "reference"]
