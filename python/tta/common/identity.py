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


# Code tta does not need to look inside: libraries whose versions are part of the key anyway.
_LIBRARIES = ("torch", "triton", "cutlass", "cuda", "numpy", "tta.aot", "tta.common.bridge", "builtins")
_MAX_DEPTH = 4


def _is_library(module: str) -> bool:
    return module.split(".")[0] in _LIBRARIES or module.startswith(_LIBRARIES)


def reachable_code(fn: Callable) -> dict[str, str]:
    """Source identities of the kernels and functions a launch function reaches through the
    names its code uses (globals and closures), transitively: editing a kernel, or a host
    function in another module that launches one, changes the key even when the launch
    function's own text does not."""
    out: dict[str, str] = {}
    for obj in _reachable(fn):
        if _is_library(getattr(obj, "__module__", None) or ""):
            continue
        ident = source_digest(obj)
        if ident is not None:
            out[qualified_name(obj)] = ident
    return out


def reachable_objects(fn: Callable, kind: type) -> list[Any]:
    """The objects of type ``kind`` a launch function reaches (as ``reachable_code`` walks),
    looking through DSL wrappers (``.fn``) too: e.g. the ``@triton.autotune`` kernel it launches."""
    found: list[Any] = []
    for obj in _reachable(fn):
        seen = 0
        while obj is not None and seen < 8:
            if isinstance(obj, kind) and not any(o is obj for o in found):
                found.append(obj)
            obj, seen = getattr(obj, "fn", None), seen + 1
    return found


def _reachable(fn: Callable):
    """Every object the code of ``fn`` names (globals, closures, attributes of the user's own
    modules), then the same for each user function or kernel among them, to a bounded depth."""
    seen: set[int] = set()

    def visit(f: Any, depth: int):
        code = getattr(f, "__code__", None)
        if code is None or id(code) in seen or depth > _MAX_DEPTH:
            return
        seen.add(id(code))
        names: set[str] = set()
        stack = [code]
        while stack:
            c = stack.pop()
            names.update(c.co_names)
            stack.extend(k for k in c.co_consts if inspect.iscode(k))
        scope = dict(getattr(f, "__globals__", {}))
        if getattr(f, "__closure__", None):
            scope.update({n: cell.cell_contents for n, cell in zip(code.co_freevars, f.__closure__) if _filled(cell)})
            names.update(code.co_freevars)
        # Names used as attributes of the user's own modules (``helpers.run(...)``) count too.
        candidates = [scope.get(n) for n in sorted(names)]
        for m in [c for c in candidates if inspect.ismodule(c) and not _is_library(c.__name__)]:
            candidates.extend(getattr(m, n, None) for n in sorted(names))
        for obj in candidates:
            if obj is None or inspect.ismodule(obj) or inspect.isbuiltin(obj) or isinstance(obj, (int, float, str, bool)):
                continue
            yield obj
            if _is_library(getattr(obj, "__module__", None) or "") or source_digest(obj) is None:
                continue
            inner = getattr(obj, "fn", None) or getattr(obj, "_pyfunc", None) or getattr(obj, "__wrapped__", None) or obj
            yield from visit(inner, depth + 1)

    yield from visit(fn, 0)


def _filled(cell) -> bool:
    try:
        cell.cell_contents
        return True
    except ValueError:
        return False
