"""tta: put your own Triton, cuTile and CuTeDSL kernels into TensorRT engines.

Mark regions with ``tta.lower_as(impl=...)``, export, and ``tta.rewrite`` outlines each region
into one ``tta::<op>`` plugin node; ``tta.compile`` builds them into TensorRT engines through
Torch-TensorRT (see README.md and ARCHITECTURE.md).
"""

from .annotate import lower_as
from .errors import AnnotationError, GraphError, PluginError, TTAError
from .plugin import Plugin, custom_plugin
from .core import RegionReport
from .rewrite import RewriteResult, find_regions, lower_modules, rewrite
from .selectors import ModuleSelector, PatternSelector, lower_pattern
from .specs import KernelSpec, cutedsl, cutile, triton

__all__ = [
    "AnnotationError",
    "GraphError",
    "KernelSpec",
    "ModuleSelector",
    "PatternSelector",
    "Plugin",
    "PluginError",
    "RegionReport",
    "RewriteResult",
    "TTAError",
    "custom_plugin",
    "cutedsl",
    "cutile",
    "find_regions",
    "lower_as",
    "lower_modules",
    "lower_pattern",
    "rewrite",
    "triton",
]


def __getattr__(name: str):
    # tta.compile imports Torch-TensorRT, so it is loaded on first use, not with tta.
    if name == "compile":
        from .trt.compile import compile

        return compile
    raise AttributeError(f"module 'tta' has no attribute {name!r}")
