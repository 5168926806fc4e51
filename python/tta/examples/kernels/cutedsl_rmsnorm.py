"""Example: RMSNorm over the last dim in CuTeDSL (``cutedsl_kernels.rmsnorm_kernel``): one CTA
per row, any row length, warp shuffles plus a shared-memory array across warps.

This record imports CuTeDSL only when launching (see ``cutedsl_add_relu.py``).
"""

from __future__ import annotations

from ._shared import rmsnorm_inputs as make_inputs
from ._shared import rmsnorm_reference as reference
from ._shared import same_shape as meta

BACKEND = "cutedsl"
CONFIGS = [{"THREADS": 256, "eps": 1e-6}, {"THREADS": 128, "eps": 1e-6}]
TEST_SHAPES = [(2, 3, 96), (4, 16, 1000), (1, 257, 5000)]


def launch_rmsnorm(x, w, out, **config):
    from .cutedsl_kernels import launch_rmsnorm

    launch_rmsnorm(x, w, out, **config)


LAUNCH = launch_rmsnorm
__all__ = ["BACKEND", "CONFIGS", "LAUNCH", "TEST_SHAPES", "make_inputs", "meta", "reference"]
