"""Plugin descriptors (``tta.custom_plugin``) and the process-wide registry from impl key to
descriptor.

A descriptor says what replaces a region: kernel specs (``tta.triton``/``tta.cutile``/
``tta.cutedsl``), an optional ``meta_impl`` giving output shapes and dtypes, and whether the
plugin writes its inputs in place. Its ``key`` is stable across processes: the name plus a
hash of what identifies the implementation.
"""

from __future__ import annotations

import hashlib
import inspect
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from ..common.identity import qualified_name
from ..errors import PluginError


@dataclass(frozen=True, eq=False)
class Plugin:
    """What a region is replaced by. Build it with ``tta.custom_plugin``."""

    name: str
    key: str
    meta_impl: Callable | None = None
    kernels: tuple = ()
    mutates: bool = False
    # Number of region inputs the impl takes, when meta_impl's signature says so.
    arity: int | None = field(default=None)
    # Number of tensors the kernels' launch functions take (inputs, then outputs).
    launch_tensors: int | None = field(default=None)

    def declaration(self) -> dict:
        """What the Rust pass checks regions against (``ImplDecl``)."""
        return {"name": self.name, "inputs": self.arity, "launch_tensors": self.launch_tensors, "mutates": self.mutates}

    def __repr__(self) -> str:
        return f"Plugin({self.key})"


_registry: dict[str, Plugin] = {}
_lock = threading.Lock()


def _positional_arity(fn: Callable) -> int | None:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return None
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty for p in params)


def _launch_tensors(kernels: tuple, name: str) -> int | None:
    """Tensor parameters of the launch functions (positional, without defaults); all kernels
    of one plugin must agree, since each is a tactic for the same op."""
    counts = {}
    for k in kernels:
        n = _positional_arity(k.launch_fn)
        if n is not None:
            counts.setdefault(n, []).append(k)
    if len(counts) > 1:
        detail = "; ".join(f"{k!r} takes {n}" for n, ks in counts.items() for k in ks)
        raise PluginError(f"custom_plugin({name!r}): the kernels disagree on how many tensors they take: {detail}")
    return next(iter(counts), None)


def check_kernels(kernels: tuple, name: str) -> None:
    from .specs import KERNEL_DSLS, KernelSpec, installed

    if not kernels:
        raise PluginError(f"custom_plugin({name!r}): kernel=[] is empty; give at least one kernel spec or leave it out")
    for k in kernels:
        if not isinstance(k, KernelSpec):
            raise PluginError(f"custom_plugin({name!r}): {k!r} is not a kernel spec; use tta.triton/tta.cutile/tta.cutedsl")
        if not installed(k.backend):
            raise PluginError(
                f"custom_plugin({name!r}): backend {k.backend!r} of {k.identity} is not installed (no module {KERNEL_DSLS[k.backend]!r})"
            )


def custom_plugin(
    kernel: Any | Sequence[Any] | None = None,
    meta_impl: Callable | None = None,
    name: str | None = None,
    mutates: bool = False,
) -> Plugin:
    """Describe a plugin. ``kernel`` is a kernel spec or a list of them (one tactic each);
    ``meta_impl(*inputs)`` returns fake outputs (derived from the region body when absent)."""
    kernels = tuple(kernel) if isinstance(kernel, (list, tuple)) else (() if kernel is None else (kernel,))
    if kernel is not None:
        check_kernels(kernels, name or "?")
    if name is None:
        source = meta_impl or next((getattr(k, "launch_fn", None) for k in kernels), None)
        if source is None:
            raise PluginError("custom_plugin needs a name=, a meta_impl or a kernel to name it after")
        name = getattr(source, "__name__", None) or "plugin"
    if meta_impl is not None and not callable(meta_impl):
        raise PluginError(f"custom_plugin({name!r}): meta_impl must be callable, got {type(meta_impl).__name__}")
    # The trailing "0" stands where a weight count once was, so existing keys (and op names
    # derived from them) stay the same.
    identity = "\n".join(
        [name, qualified_name(meta_impl) if meta_impl is not None else "", str(bool(mutates)), "0"]
        + [getattr(k, "cache_key", repr(k)) for k in kernels]
    )
    key = f"{name}@{hashlib.sha256(identity.encode()).hexdigest()[:10]}"
    plugin = Plugin(
        name=name,
        key=key,
        meta_impl=meta_impl,
        kernels=kernels,
        mutates=bool(mutates),
        arity=_positional_arity(meta_impl) if meta_impl is not None else None,
        launch_tensors=_launch_tensors(kernels, name),
    )
    with _lock:
        # Same key means same identity (e.g. a re-run notebook cell): the newest object wins.
        _registry[key] = plugin
    return plugin


def lookup(key: str) -> Plugin | None:
    return _registry.get(key)


def declarations(keys) -> dict[str, dict]:
    """Declarations of the registered plugins among ``keys`` (unknown keys are left out, and
    the pass refuses their regions by name)."""
    return {k: _registry[k].declaration() for k in keys if k in _registry}
