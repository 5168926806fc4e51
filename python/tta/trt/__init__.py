"""tta's TensorRT integration: QDP AOT plugins (``qdp.py``) for the ``tta::*`` ops, their
Torch-TensorRT converter (``converter.py``) and the hook into Torch-TensorRT's compile.

``import tta.trt`` (done by ``tta.compile``) makes plain ``torch_tensorrt.compile(..., ir="dynamo")``
outline tta regions into plugins:

* a post-lowering pass, first of all, runs ``tta.rewrite`` on the graph (``lowering.py``), and
  another, last, warns about plugins ``min_block_size`` would leave to PyTorch
  (``partition.py``);
* whenever tta creates a ``tta::*`` op (in that pass, ``tta.rewrite`` or ``tta.compile``), its
  QDP plugin and its converter are registered.

Import it before compiling, after any TensorRT set-up of your own; it imports Torch-TensorRT.
"""

from __future__ import annotations

import threading

from ..errors import PluginError
from ..runtime import ops
from . import qdp
from .lowering import clear_selectors, use_selectors

__all__ = ["clear_selectors", "use_selectors", "qdp"]

_installed = False
_install_lock = threading.Lock()


def _register_op(op: str, overload) -> None:
    from . import converter

    converter.register(op, overload)
    try:
        qdp.register(op)
    except PluginError:
        # Not every tta op can be a TensorRT plugin (no kernels, integer inputs); that must not
        # stop tta.rewrite. Compiling one for TensorRT registers it again and raises the reason.
        pass


def install() -> None:
    """Register the passes and the op listener with Torch-TensorRT (once per process)."""
    global _installed
    with _install_lock:
        if _installed:
            return
        from torch_tensorrt.dynamo.lowering.passes._aten_lowering_pass import _aten_lowering_pass

        from .lowering import outline_regions
        from .partition import warn_dropped_plugins

        _aten_lowering_pass(index=0)(outline_regions)
        _aten_lowering_pass(warn_dropped_plugins)
        ops.on_op_created(_register_op)
        _installed = True


try:
    import torch_tensorrt  # noqa: F401
except ImportError:  # the plugin side (qdp) serves TensorRT users without Torch-TensorRT
    pass
else:
    install()
