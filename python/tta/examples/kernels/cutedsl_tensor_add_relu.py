"""Example: fused ``relu(x + y)`` in CuTeDSL written with ``cute.Tensor`` parameters and
``from_dlpack`` (``cutedsl_tensor_kernels.py``), the form CUTLASS's examples use.

This record imports CuTeDSL only when launching, so the reference and inputs load where
CuTeDSL is not installed (the GPU check machine).
"""

from __future__ import annotations

from ._shared import add_relu_inputs as make_inputs
from ._shared import add_relu_reference as reference
from ._shared import same_shape as meta

BACKEND = "cutedsl"
CONFIGS = [{"THREADS": 256}]
TEST_SHAPES = [(7, 129), (64, 1024), (333, 4097)]


def launch_add_relu_tensor(x, y, out, **config):
    from .cutedsl_tensor_kernels import launch_add_relu_tensor

    launch_add_relu_tensor(x, y, out, **config)


LAUNCH = launch_add_relu_tensor
__all__ = ["BACKEND", "CONFIGS", "LAUNCH", "TEST_SHAPES", "make_inputs", "meta", "reference"]
