"""tta: put your own Triton, cuTile and CuTeDSL kernels into TensorRT engines.

Mark regions with ``tta.lower_as(impl=...)``, export, and ``tta.rewrite`` outlines each region
into one ``tta::<op>`` plugin node; ``tta.compile`` builds them into TensorRT engines through
Torch-TensorRT (see README.md and ARCHITECTURE.md).

The public names load on first use, so that ``tta report`` and other tools that only need the
Rust core start without importing torch.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING

from .errors import (
    AnnotationError,
    EagerFallbackWarning,
    GraphError,
    KernelCheckError,
    MissingPackageError,
    PackageRuntimeWarning,
    PluginError,
    RegionRefusedError,
    RegionRefusedWarning,
    TTAError,
)

# public name -> submodule that defines it (tta.compile imports its backend when called)
_LAZY = {
    "compile": "backends",
    "aot_compile": "inductor.compile",
    "check_kernels": "check",
    "custom_op": "trt.custom_op",
    "explain": "explain",
    "lower_as": "annotate",
    "Plugin": "plugin",
    "custom_plugin": "plugin",
    "eager_paths": "eager_stats",
    "RegionReport": "core",
    "RewriteResult": "rewrite",
    "rewrite": "rewrite",
    "save_graph": "graph_file",
    "ModuleSelector": "selectors",
    "PatternSelector": "selectors",
    "find_regions": "rewrite",
    "lower_modules": "rewrite",
    "lower_pattern": "selectors",
    "KernelSpec": "specs",
    "cutedsl": "specs",
    "cutile": "specs",
    "triton": "specs",
}

_ERRORS = ["AnnotationError", "EagerFallbackWarning", "GraphError", "KernelCheckError", "MissingPackageError", "PackageRuntimeWarning",
           "PluginError", "RegionRefusedError",
           "RegionRefusedWarning", "TTAError"]
__all__ = sorted([*_ERRORS, *_LAZY])


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tta' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


class _Package(types.ModuleType):
    def __setattr__(self, name: str, value) -> None:
        # Importing the submodule tta.rewrite binds it on the package under the name of the
        # public function tta.rewrite; the function keeps the name (as with eager imports).
        if name in _LAZY and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


if TYPE_CHECKING:
    from .annotate import lower_as
    from .backends import compile
    from .check import check_kernels
    from .inductor.compile import aot_compile
    from .trt.custom_op import custom_op
    from .explain import explain
    from .plugin import Plugin, custom_plugin
    from .eager_stats import eager_paths
    from .core import RegionReport
    from .rewrite import RewriteResult, find_regions, lower_modules, rewrite
    from .graph_file import save_graph
    from .selectors import ModuleSelector, PatternSelector, lower_pattern
    from .specs import KernelSpec, cutedsl, cutile, triton
