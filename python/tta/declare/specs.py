"""Kernel specs: ``tta.triton``, ``tta.cutile``, ``tta.cutedsl``.

A spec names the user's launch function (plain launch code: ``launch(*inputs, *outputs,
**config)``) and the compile-time configs to build, one TensorRT tactic each. Specs are frozen
and hashable; ``cache_key`` is stable across processes.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import json
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from ..common.identity import qualified_name, reachable_code, short_digest
from ..errors import PluginError

# The kernel DSLs tta compiles (a kernel spec's `backend`), each with the module it needs. Not the
# compile backends of `tta.compile` (`backends.BACKENDS`).
KERNEL_DSLS: dict[str, str] = {"triton": "triton", "cutile": "cuda.tile", "cutedsl": "cutlass.cute"}


def installed(backend: str) -> bool:
    """Whether the DSL of ``backend`` can be imported here."""
    module = KERNEL_DSLS.get(backend)
    try:
        return module is not None and importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _freeze(config: Mapping[str, Any], where: str) -> tuple[tuple[str, Any], ...]:
    if not isinstance(config, Mapping):
        raise PluginError(f"{where}: each config must be a dict of compile-time values, got {type(config).__name__}")
    for k, v in config.items():
        if not isinstance(k, str) or not k.isidentifier():
            raise PluginError(f"{where}: config key {k!r} is not a keyword argument name")
        if not isinstance(v, (bool, int, float, str)):
            raise PluginError(f"{where}: config {k}={v!r} is not a compile-time value (bool, int, float or str)")
    return tuple(sorted(config.items()))


@dataclass(frozen=True)
class KernelSpec:
    """One backend's implementation of a plugin: a launch function and its configs."""

    backend: str
    launch_fn: Callable = field(hash=False, compare=False)
    configs: tuple[tuple[tuple[str, Any], ...], ...]
    identity: str  # module.qualname of launch_fn
    # The kernel whose own tuning configs (Triton's ``@triton.autotune``) are the configs; empty
    # when the configs are keyword arguments of the launch function.
    autotuned: str = ""
    # Keyword arguments the launch function always gets on top of the config (a custom op's
    # non-tensor arguments at one call site); part of ``identity`` where set.
    arguments: tuple[tuple[str, Any], ...] = ()

    @property
    def cache_key(self) -> str:
        # The kernels the launch function calls are part of the key: editing a kernel changes the
        # plugin's op name, and with it every cache keyed on the graph (Torch-TensorRT's engines).
        kernels = sorted(reachable_code(self.launch_fn).items())
        payload = json.dumps(
            [self.backend, self.identity, short_digest(self.launch_fn), self.configs, self.autotuned, kernels], default=repr
        )
        return f"{self.backend}:{self.identity}:{hashlib.sha256(payload.encode()).hexdigest()[:16]}"

    def config_dicts(self) -> list[dict[str, Any]]:
        return [dict(c) for c in self.configs]

    def launch_kwargs(self, config: dict[str, Any]) -> dict[str, Any]:
        """The keyword arguments the launch function gets for ``config`` (none when the config is
        one of the kernel's own tuning configs: the backend applies it at the launch), and the
        spec's fixed ``arguments``."""
        kwargs = {} if self.autotuned else dict(config)
        kwargs.update(self.arguments)
        return kwargs

    def __repr__(self) -> str:
        return f"{self.backend}({self.identity}, configs={self.config_dicts()})"


def _check_config_keys(launch_fn: Callable, configs, where: str) -> None:
    """Every config key must be a keyword the launch function accepts (after its tensors)."""
    try:
        params = inspect.signature(launch_fn).parameters
    except (TypeError, ValueError):
        return
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return
    keywords = {n for n, p in params.items() if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
    for c in configs:
        for k, _ in c:
            if k not in keywords:
                raise PluginError(f"{where}: config key {k!r} is not a parameter of the launch function (it takes {sorted(keywords)})")


def _spec(backend: str, launch_fn: Callable, configs: Sequence[Mapping[str, Any]] | None) -> KernelSpec:
    where = f"tta.{backend}({getattr(launch_fn, '__qualname__', launch_fn)!s})"
    if not callable(launch_fn):
        raise PluginError(f"{where}: launch_fn must be callable")
    if configs is None and backend == "triton":
        from .autotune import autotune_configs

        found = autotune_configs(launch_fn, where)
        if found is not None:
            name, tuned = found
            frozen = tuple(_freeze(c, where) for c in tuned)
            return KernelSpec(backend=backend, launch_fn=launch_fn, configs=frozen, identity=qualified_name(launch_fn), autotuned=name)
    frozen = tuple(_freeze(c, where) for c in (configs if configs is not None else [{}]))
    if not frozen:
        raise PluginError(f"{where}: configs is empty; give at least one (use [{{}}] for none)")
    seen = set()
    for c in frozen:
        if c in seen:
            raise PluginError(f"{where}: duplicate config {dict(c)}")
        seen.add(c)
    _check_config_keys(launch_fn, frozen, where)
    return KernelSpec(backend=backend, launch_fn=launch_fn, configs=frozen, identity=qualified_name(launch_fn))


def triton(launch_fn: Callable, configs: Sequence[Mapping[str, Any]] | None = None) -> KernelSpec:
    """A Triton kernel launched by ``launch_fn(*inputs, *outputs, **config)``. Without
    ``configs``, a ``@triton.autotune`` kernel the launch function reaches gives them: each of
    its ``triton.Config``s (with its ``num_warps``/``num_stages``) is one TensorRT tactic."""
    return _spec("triton", launch_fn, configs)


def cutile(launch_fn: Callable, configs: Sequence[Mapping[str, Any]] | None = None) -> KernelSpec:
    """A cuTile kernel launched by ``launch_fn`` through ``ct.launch``."""
    return _spec("cutile", launch_fn, configs)


def cutedsl(launch_fn: Callable, configs: Sequence[Mapping[str, Any]] | None = None) -> KernelSpec:
    """A CuTeDSL kernel launched by ``launch_fn`` through a ``@cute.jit`` host function."""
    return _spec("cutedsl", launch_fn, configs)
