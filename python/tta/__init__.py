"""tta: put your own Triton, cuTile and CuTeDSL kernels into TensorRT engines.

Mark regions with ``tta.lower_as(impl=...)``, export, and ``tta.rewrite`` outlines each region
into one ``tta::<op>`` plugin node; ``tta.compile`` builds them into TensorRT engines through
Torch-TensorRT (see README.md and ARCHITECTURE.md).

The public names load on first use, so that ``tta report`` and other tools that only need the
Rust core start without importing torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from . import _aliases
from .errors import (
    AnnotationError,
    EagerFallbackWarning,
    GraphError,
    KernelCheckError,
    KernelCheckWarning,
    MissingPackageError,
    PackageRuntimeWarning,
    PluginError,
    RegionRefusedError,
    RegionRefusedWarning,
    TTAError,
)

# public name -> submodule that defines it (tta.compile imports its backend when called)
_LAZY = {
    "check_kernels": "verify.check",
    "compile": "backends",
    "aot_compile": "inductor.compile",
    "custom_op": "trt.custom_op",
    "explain": "tools.explain",
    "lower_as": "declare.annotate",
    "Plugin": "declare.plugin",
    "custom_plugin": "declare.plugin",
    "eager_paths": "runtime.eager_stats",
    "RegionReport": "common.bridge",
    "RewriteResult": "fx.pipeline",
    "rewrite": "fx.pipeline",
    "save_graph": "tools.graph_file",
    "ModuleSelector": "fx.selectors",
    "PatternSelector": "fx.selectors",
    "find_regions": "fx.pipeline",
    "lower_modules": "fx.pipeline",
    "lower_pattern": "fx.selectors",
    "KernelSpec": "declare.specs",
    "cutedsl": "declare.specs",
    "cutile": "declare.specs",
    "triton": "declare.specs",
}

_ERRORS = [
    "AnnotationError",
    "EagerFallbackWarning",
    "GraphError",
    "KernelCheckError",
    "MissingPackageError",
    "PackageRuntimeWarning",
    "PluginError",
    "RegionRefusedError",
    "RegionRefusedWarning",
    "TTAError",
]
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


# Module paths from before the package had layer folders (tta.markers, tta.gpu.conformance, ...)
# still import, with a DeprecationWarning (see _aliases.py).
_aliases.install()


if TYPE_CHECKING:
    from .backends import compile
    from .common.bridge import RegionReport
    from .declare.annotate import lower_as
    from .declare.plugin import Plugin, custom_plugin
    from .declare.specs import KernelSpec, cutedsl, cutile, triton
    from .fx.pipeline import RewriteResult, find_regions, lower_modules, rewrite
    from .fx.selectors import ModuleSelector, PatternSelector, lower_pattern
    from .inductor.compile import aot_compile
    from .runtime.eager_stats import eager_paths
    from .tools.explain import explain
    from .tools.graph_file import save_graph
    from .trt.custom_op import custom_op
    from .verify.check import check_kernels
