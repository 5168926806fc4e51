"""``tta.lower_as``: mark the ops traced inside a ``with`` block (or a decorated function) as
one region to be replaced by a custom plugin.

Each entry tags the fx nodes it traces through ``torch.fx.traceback.annotate`` with the key
``tta_region:<id>`` (one key per region, so nesting leaves two keys on a node and is caught in
the graph even where Python could not see it). The tags land in ``node.meta["custom"]`` and
survive ``torch.export`` (strict and non-strict) and ``run_decompositions()``. Each entry also
leaves one marker node (``markers.py``), so a region that traced nothing, or landed in a
``torch.cond`` branch, is still reported, and ``inputs=`` fixes the plugin's input order.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import sys
import threading

import torch
import torch.fx.traceback as fx_traceback

from . import markers
from .errors import AnnotationError, PluginError
from .plugin import Plugin

TAG_PREFIX = "tta_region:"

_counter = itertools.count(1)
_active = threading.local()
# Frames that are never the user's: this package, contextlib's decorator plumbing, and torch
# (nn.Module.__call__, export's tracing), which sit between a decorated forward and its caller.
_SKIP_DIRS = tuple(os.path.dirname(m.__file__) + os.sep for m in (torch,)) + (os.path.dirname(__file__) + os.sep,)
_SKIP_FILES = (contextlib.__file__,)


@torch._dynamo.assume_constant_result
def _next_id() -> int:
    # Run eagerly even while dynamo traces (strict export), so ids stay unique without a
    # traced side effect on a global.
    return next(_counter)


def _is_user_frame(filename: str) -> bool:
    return not (filename.startswith(_SKIP_DIRS) or filename in _SKIP_FILES)


def _call_site() -> str | None:
    """``file:line`` of the user's ``with`` statement."""
    frame = sys._getframe(1)
    while frame is not None and not _is_user_frame(frame.f_code.co_filename):
        frame = frame.f_back
    return f"{frame.f_code.co_filename}:{frame.f_lineno}" if frame is not None else None


@contextlib.contextmanager
def _region(impl: Plugin, name: str | None, site: str | None = None, inputs: tuple = ()):
    rid = f"{name or impl.name}:{_next_id()}"
    if torch.compiler.is_dynamo_compiling():
        # Dynamo runs fx_traceback.annotate eagerly and records node meta itself. Frames and
        # thread-locals are not visible here; nesting is caught from the graph instead.
        with fx_traceback.annotate({TAG_PREFIX + rid: {"impl": impl.key, "source": site}}):
            markers.mark(rid, impl.key, site, inputs)
            yield
        return
    site = site or _call_site()
    stack = getattr(_active, "stack", None)
    if stack is None:
        stack = _active.stack = []
    if stack:
        outer_id, outer_site = stack[-1]
        raise AnnotationError(
            f"tta.lower_as regions cannot nest: the region at {site} is inside the region "
            f"{outer_id} opened at {outer_site}; close the outer one first or merge them"
        )
    stack.append((rid, site))
    try:
        # annotate outside preserve_node_meta: preserve restores a shallow copy of the meta on
        # exit, which would keep annotate's in-place update of an existing "custom" dict alive
        # and leak this region's tag onto later nodes.
        with fx_traceback.annotate({TAG_PREFIX + rid: {"impl": impl.key, "source": site}}), fx_traceback.preserve_node_meta():
            markers.mark(rid, impl.key, site, inputs)
            yield
    finally:
        stack.pop()


class _LowerAs:
    """What ``lower_as`` returns: a context manager (one region per ``with``) and a decorator
    (one region per call). A decorated function's region is located at its decorator line:
    the frame that calls it is torch's ``nn.Module.__call__`` or an export tracer, never
    the user's code."""

    def __init__(self, impl: Plugin, name: str | None, inputs: tuple = ()):
        self.impl, self.name, self.inputs = impl, name, inputs
        # Dynamo traces one thread and cannot see thread-locals: its entries stack here.
        self._traced: list = []

    def _entries(self) -> list:
        # One object may be entered again (a loop, other threads): each entry is its own
        # region, and each thread exits its own.
        if torch.compiler.is_dynamo_compiling():
            return self._traced
        per_object = _active.__dict__.setdefault("entries", {})
        return per_object.setdefault(id(self), [])

    def __enter__(self):
        cm = _region(self.impl, self.name, inputs=self.inputs)
        entries = self._entries()
        entries.append(cm)
        try:
            return cm.__enter__()
        except BaseException:
            entries.pop()
            raise

    def __exit__(self, *exc):
        entries = self._entries()
        cm = entries.pop()
        if not entries and not torch.compiler.is_dynamo_compiling():
            del _active.entries[id(self)]
        return cm.__exit__(*exc)

    def __call__(self, fn):
        if not callable(fn):
            raise AnnotationError(f"@tta.lower_as(...) decorates a function, got {type(fn).__name__}")
        code = getattr(fn, "__code__", None)
        site = f"{code.co_filename}:{code.co_firstlineno}" if code is not None else None
        impl, name = self.impl, self.name

        @functools.wraps(fn)
        def region_call(*args, **kwargs):
            with _region(impl, name, site):
                return fn(*args, **kwargs)

        return region_call


def lower_as(impl: Plugin, name: str | None = None, inputs=None) -> _LowerAs:
    """Mark a region to be replaced by ``impl``; a context manager and a decorator.

    ``impl`` is a ``tta.custom_plugin(...)``. ``name`` labels the region in reports. Every
    entry (each loop iteration, each call of a decorated function) is a distinct region.
    ``inputs=(x, w, b)`` (``with`` form) fixes the order of the plugin's inputs: every tensor
    the region reads, each once. Without it, activations come first and parameters, buffers
    and constants after, each in order of first use (see docs/selectors.md).
    """
    if not isinstance(impl, Plugin):
        raise PluginError(f"lower_as(impl=...) takes a tta.custom_plugin(...), got {type(impl).__name__}")
    if name is not None and not isinstance(name, str):
        raise PluginError(f"lower_as(name=...) is a string that labels the region, got {type(name).__name__}")
    inputs = tuple(inputs) if inputs is not None else ()
    for k, t in enumerate(inputs):
        if not isinstance(t, torch.Tensor):
            raise AnnotationError(
                f"lower_as(inputs=...) at {_call_site()} takes the tensors the region reads; "
                f"input {k} is {type(t).__name__}"
            )
    return _LowerAs(impl, name, inputs)
