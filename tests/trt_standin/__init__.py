"""A small recording STAND-IN for TensorRT's native ``tensorrt`` module. Not TensorRT.

TensorRT's native libraries cannot be installed here (and the GPU machine has none), so tests
replace only the native module with these explicit classes and run the REAL Python layers on
top of it: the ``tensorrt.plugin`` package from the ``tensorrt-cu13-bindings`` wheel and
Torch-TensorRT's Python code.

``install(plugin_version="11.1" | "11.4")`` (once per process, before ``import torch_tensorrt``):

1. builds a module ``tensorrt`` from ``core.py`` (enums, plugin interfaces, registry, fields),
   ``exprs.py`` (dimension expressions) and, when present, ``network.py`` (builder, network,
   layers), each contributing the names in its ``__all__``; ``__path__`` points at the wheel's
   ``tensorrt_bindings`` directory so ``import tensorrt.plugin`` finds the real package;
2. registers a bare ``tensorrt_bindings`` package (its ``__init__`` would load libnvinfer) and
   imports the real ``tensorrt_bindings.plugin``;
3. aliases every ``tensorrt_bindings.plugin*`` module as ``tensorrt.plugin*``, so there is one
   ``QDP_REGISTRY`` whichever name code imports it under.

Plugin packages: 11.1.0.106 is installed in the Torch-TensorRT venv's site-packages; 11.4.0.106
is unpacked at ``<venv>/trt-11.4.0.106``. Both are found relative to ``sys.prefix``, or in the
directory ``$TTA_TRT_BINDINGS`` names (one holding ``tensorrt_bindings/``; only its ``plugin``
package is imported, so another venv's copy serves, e.g. for the cuTile kernels of ``.venv``).

``plugin_build.py`` runs a QDP plugin through TensorRT's build-time call order (what
``INetworkDefinition.add_plugin(..., aot=True)`` and the builder do) and records the result.
"""

from __future__ import annotations

import glob
import importlib
import importlib.machinery
import os
import sys
import types

VERSIONS = {"11.1": "11.1.0.106", "11.4": "11.4.0.106"}
_PARTS = ("core", "exprs", "network")

_installed: str | None = None


def plugin_package_dir(plugin_version: str = "11.1") -> str:
    """The directory holding the wheel's ``tensorrt_bindings`` for this version."""
    if plugin_version not in VERSIONS:
        raise ValueError(f"plugin_version must be one of {sorted(VERSIONS)}, got {plugin_version!r}")
    override = os.environ.get("TTA_TRT_BINDINGS")
    if override:
        candidates = [override]
    elif plugin_version == "11.4":
        candidates = [os.path.join(sys.prefix, "trt-11.4.0.106")]
    else:
        candidates = glob.glob(os.path.join(sys.prefix, "lib", "python3*", "site-packages"))
    for c in candidates:
        if os.path.isfile(os.path.join(c, "tensorrt_bindings", "plugin", "_lib.py")):
            return c
    raise ModuleNotFoundError(
        f"tensorrt.plugin {VERSIONS[plugin_version]} not found under {sys.prefix} (looked in {candidates}); "
        "run the tests with the Torch-TensorRT venv (.venv-torch2.14, scripts/setup-torch-envs.sh)"
    )


def build_module(plugin_version: str, bindings_dir: str) -> types.ModuleType:
    """The stand-in ``tensorrt`` module (not yet in ``sys.modules``)."""
    trt = types.ModuleType("tensorrt", "STAND-IN for TensorRT's native module (tests/trt_standin), not TensorRT")
    for part in _PARTS:
        try:
            mod = importlib.import_module(f"{__name__}.{part}")
        except ModuleNotFoundError as e:
            if part == "network" and e.name == f"{__name__}.network":
                continue  # the network side is optional for plugin-only tests
            raise
        for name in mod.__all__:
            setattr(trt, name, getattr(mod, name))
    trt.__version__ = VERSIONS[plugin_version]
    trt.__file__ = os.path.join(os.path.dirname(os.path.abspath(__file__)), "__init__.py")
    trt.__path__ = [os.path.join(bindings_dir, "tensorrt_bindings")]
    trt.__package__ = "tensorrt"
    trt.__spec__ = importlib.machinery.ModuleSpec("tensorrt", None, is_package=True)
    trt.__spec__.submodule_search_locations = list(trt.__path__)
    trt.tensorrt = trt
    trt.STANDIN = True
    return trt


def install(plugin_version: str = "11.1"):
    """Put the stand-in in ``sys.modules["tensorrt"]`` and load the real plugin package over it.
    Returns the stand-in module. A second call with the same version is a no-op; another
    version in the same process is refused (the plugin registry is process-global)."""
    global _installed
    if _installed is not None:
        if _installed != plugin_version:
            raise RuntimeError(
                f"the TensorRT stand-in is already installed with plugin package {_installed}; use a new process for {plugin_version}"
            )
        return sys.modules["tensorrt"]
    existing = sys.modules.get("tensorrt")
    if existing is not None and not getattr(existing, "STANDIN", False):
        raise RuntimeError("a real `tensorrt` module is already imported; the stand-in must be installed first")
    bindings_dir = plugin_package_dir(plugin_version)
    trt = build_module(plugin_version, bindings_dir)
    sys.modules["tensorrt"] = trt
    bare = types.ModuleType("tensorrt_bindings")
    bare.__path__ = [os.path.join(bindings_dir, "tensorrt_bindings")]
    bare.__package__ = "tensorrt_bindings"
    sys.modules["tensorrt_bindings"] = bare
    plugin = importlib.import_module("tensorrt_bindings.plugin")
    for name, mod in list(sys.modules.items()):
        if name == "tensorrt_bindings.plugin" or name.startswith("tensorrt_bindings.plugin."):
            sys.modules["tensorrt" + name[len("tensorrt_bindings") :]] = mod
    trt.plugin = plugin
    bare.plugin = plugin
    _installed = plugin_version
    # Torch-TensorRT, should anything import it (``import tta.trt`` does), asks the GPU at import.
    from . import torch_tensorrt_env

    torch_tensorrt_env.prepare()
    return trt


def installed_version() -> str | None:
    return _installed
