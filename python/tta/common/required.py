"""The packages a tta feature needs beyond torch, checked before it is used, so that a missing
one is a ``MissingPackageError`` saying what to install and into which Python, never a bare
``ModuleNotFoundError`` from deep inside an import."""

from __future__ import annotations

import importlib
import sys

from ..errors import MissingPackageError

# module -> (what it is, how to install it)
KNOWN = {
    "tensorrt": (
        "TensorRT's Python package (tensorrt, with tensorrt.plugin)",
        "pip install tensorrt (TensorRT 10.8 or newer, for its tensorrt.plugin AOT plugins)",
    ),
    "tensorrt.plugin": ("TensorRT's plugin package (tensorrt.plugin, TensorRT 10.8 or newer)", "pip install -U tensorrt"),
    "torch_tensorrt": ("Torch-TensorRT (torch_tensorrt)", "pip install torch-tensorrt (the release built for your torch {torch})"),
}


def _how(module: str) -> str:
    import torch

    how = KNOWN.get(module, (module, f"pip install {module}"))[1]
    return how.format(torch=torch.__version__.split("+")[0])


def _problem(module: str) -> str | None:
    """Why ``module`` cannot be imported here, or None when it can."""
    try:
        importlib.import_module(module)
    except ImportError as e:
        return str(e) or type(e).__name__
    return None


def require(modules: tuple[str, ...], feature: str, alternative: str | None = None) -> None:
    """Raise ``MissingPackageError`` naming every one of ``modules`` that does not import,
    for ``feature`` (e.g. ``"tta.compile(backend='tensorrt')"``)."""
    missing: list[tuple[str, str]] = []
    for m in modules:
        if any(m.startswith(f"{parent}.") for parent, _ in missing):
            continue  # its package is missing already
        why = _problem(m)
        if why is not None:
            missing.append((m, why))
    if not missing:
        return
    lines = [f"{feature} needs {' and '.join(KNOWN.get(m, (m, ''))[0] for m, _ in missing)}, which this Python cannot import:"]
    for m, why in missing:
        lines.append(f"  {m}: {why}; install it with: {_how(m)}")
    lines.append(f"into the environment of {sys.executable} (sys.prefix {sys.prefix}).")
    if alternative:
        lines.append(alternative)
    raise MissingPackageError("\n".join(lines), name=missing[0][0])
