"""What identifies user code across processes: its qualified name, and a digest of its source.

Plugin keys, kernel-spec keys and compile-cache keys are all built from these, so a re-run
notebook cell gets the same key and an edited kernel a new one.
"""

from __future__ import annotations

import hashlib
import inspect
from typing import Any, Callable

# Digest per code object: the source of the code that is loaded, read once.
_source_digests: dict[Any, str] = {}


def qualified_name(obj: Any) -> str:
    """``module.qualname`` of a function, class or kernel object."""
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', repr(obj))}"


def _unwrap(obj: Any) -> Any:
    """The Python function inside a DSL kernel object (``fn`` for Triton, ``_pyfunc`` for cuTile,
    ``__wrapped__`` for decorators), or the object itself."""
    for attr in ("fn", "_pyfunc", "__wrapped__", "func"):
        inner = getattr(obj, attr, None)
        if inner is not None and callable(inner) and not inspect.isclass(inner):
            return inner
    return obj


def source_digest(obj: Any) -> str | None:
    """What identifies a kernel's or function's code: Triton's ``cache_key`` (which covers the
    @jit functions it calls), else the sha256 of the Python source; None for what is neither
    (classes, other objects)."""
    key = getattr(obj, "cache_key", None)
    if isinstance(key, str) and not inspect.isclass(obj):
        return key
    fn = _unwrap(obj)
    if not (inspect.isfunction(fn) or inspect.ismethod(fn)):
        return None
    code = fn.__code__
    cached = _source_digests.get(code)
    if cached is None:
        try:
            text = inspect.getsource(fn)
        except (OSError, TypeError):
            text = qualified_name(fn)
        cached = _source_digests[code] = hashlib.sha256(text.encode()).hexdigest()
    return cached


def short_digest(fn: Callable) -> str:
    """A 16-hex-digit source digest, for keys people read."""
    return (source_digest(fn) or hashlib.sha256(qualified_name(fn).encode()).hexdigest())[:16]
