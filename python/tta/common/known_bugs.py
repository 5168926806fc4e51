"""TensorRT bugs tta knows of, by version, and what tta does about each. Pure version logic (no
TensorRT import): the TensorRT build path (``trt/qdp.py``, ``trt/converter.py``) acts on them
and ``tta doctor`` reports them.

* NVIDIA/TensorRT #4849: engines with AOT plugins leak the plugins' CUDA modules on every
  input-shape change of an execution context (reported on 11.1 and 11.2.1; open when last read,
  later versions not confirmed either way). tta warns once per engine it adds plugins to.
* QDP plugins do not work on TensorRT 10.14.x and 10.15.x; Torch-TensorRT turns its own QDP
  support off there (``torch_tensorrt/_features.py``). tta refuses to define plugins.
* ``tensorrt.plugin`` <= 11.1 cannot create a plugin with ``int``/``float`` attributes under
  NumPy >= 2.4 (it calls ``int()`` on a 1-element array; fixed in 11.2); list attributes need
  11.3. ``qdp.check_attributes`` refuses those, or sends int/float as strings where allowed.
* ``tensorrt.plugin.ShapeExpr`` has no reflected operators (``3 * e`` fails, ``e * 3`` works):
  the Rust core never renders an integer on the left (``src/expr/trtp.rs``).
"""

from __future__ import annotations

import re
import threading
import warnings
import weakref

AOT_MODULE_LEAK = "NVIDIA/TensorRT #4849"
_LEAK_FIRST, _LEAK_LAST = (11, 1, 0), (11, 2, 1)  # the versions the report names, inclusive
_QDP_BROKEN = ((10, 14), (10, 15))


class TensorRTBugWarning(UserWarning):
    """A known TensorRT bug affects what is being built."""


def parse(version: str) -> tuple[int, ...]:
    """``"11.2.1.2"`` -> ``(11, 2, 1, 2)``; leading numeric parts only (``"11.4.0.post1"`` -> ``(11, 4, 0)``)."""
    parts = []
    for p in str(version).split("."):
        m = re.match(r"\d+", p)
        if not m:
            break
        parts.append(int(m.group()))
        if m.group() != p:
            break
    return tuple(parts)


def aot_module_leak(trt_version: str) -> str | None:
    """The warning for TensorRT versions that leak AOT plugins' CUDA modules, else None."""
    v = parse(trt_version)[:3]
    if not v or not _LEAK_FIRST <= v + (0,) * (3 - len(v)) <= _LEAK_LAST:
        return None
    return (
        f"TensorRT {trt_version} leaks the CUDA modules of AOT plugins on every input-shape change of an execution "
        f"context ({AOT_MODULE_LEAK}; GPU memory grows until the process exits): keep input shapes fixed per "
        "context, or use a TensorRT version without the bug"
    )


def qdp_refusal(trt_version: str) -> str | None:
    """Why tta cannot define QDP plugins on this TensorRT version, else None."""
    if parse(trt_version)[:2] in _QDP_BROKEN:
        return (
            f"TensorRT {trt_version}: Quickly Deployable Plugins do not work on TensorRT 10.14.x and 10.15.x "
            "(Torch-TensorRT turns its QDP support off on them); use TensorRT 10.13 or >= 11.1"
        )
    return None


def numpy_scalar_attrs_broken(trt_version: str, numpy_version: str) -> bool:
    """``tensorrt.plugin`` cannot create plugins with int/float attributes (before 11.2, NumPy >= 2.4)."""
    return parse(trt_version)[:2] < (11, 2) and parse(numpy_version)[:2] >= (2, 4)


def list_attrs_broken(trt_version: str) -> bool:
    """``tensorrt.plugin`` cannot carry list (NumPy array) attributes (before 11.3)."""
    return parse(trt_version)[:2] < (11, 3)


_warned: weakref.WeakSet = weakref.WeakSet()
_warned_strong: list = []  # keys that take no weak reference: kept alive, so no other key reuses their id
_warned_lock = threading.Lock()


def warn_once_per_engine(engine_key: object, trt_version: str, first_layer: str) -> bool:
    """Warn about #4849 the first time ``engine_key`` (what stands for one engine being built:
    Torch-TensorRT's conversion context) gets a tta AOT plugin, on affected versions; True when
    it warned. The message names the engine's first tta layer, so Python's once-per-message
    warning filter shows each engine's warning."""
    text = aot_module_leak(trt_version)
    if text is None:
        return False
    with _warned_lock:
        try:
            if engine_key in _warned:
                return False
            _warned.add(engine_key)
        except TypeError:
            if any(k is engine_key for k in _warned_strong):
                return False
            _warned_strong.append(engine_key)
    warnings.warn(f"tta: the engine with plugin layer {first_layer}: {text}", TensorRTBugWarning, stacklevel=3)
    return True
