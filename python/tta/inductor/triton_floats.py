"""A user's Triton kernel under Inductor takes its run-time floats as the AOT path does: bound to
their values as fp32 constants.

Triton's own launcher passes a Python float argument as fp32; Inductor (torch 2.11, and wherever
``_use_fp64_for_unbacked_floats`` reaches user kernels) declares it ``fp64``, so ``x * sm_scale``
is fp64 and a ``tl.dot`` of it does not compile. The value is fixed when the ``tta_triton`` op's
body is traced, so the kernel handed to ``wrap_triton`` is the one ``triton_specialize`` makes for
the AOT path (every other parameter as written; the float as ``tl.full((), value, tl.float32)``),
named ``<kernel>_fp32_bound`` and calling the original by its own name, which is how Inductor
copies kernels into its generated code. ``@triton.autotune`` / ``@triton.heuristics`` layers are
kept around it.
"""

from __future__ import annotations

import copy
from typing import Any

import torch

from ..aot.triton.specialize import bind_floats

_rewrapped: dict[tuple, Any] = {}


def _innermost(kernel: Any) -> Any:
    from triton.runtime.jit import JITFunction

    while not isinstance(kernel, JITFunction):
        kernel = kernel.fn
    return kernel


def _rewrap(kernel: Any, bound: Any) -> Any:
    """``kernel``'s autotune/heuristics layers around ``bound`` instead of its JIT function."""
    from triton.runtime.jit import JITFunction

    if isinstance(kernel, JITFunction):
        return bound
    layer = copy.copy(kernel)
    layer.fn = _rewrap(kernel.fn, bound)
    layer.arg_names = list(bound.arg_names)
    if hasattr(layer, "base_fn"):
        layer.base_fn = bound.fn
    if hasattr(layer, "cache"):
        layer.cache = {}
    return layer


def runtime_floats(kernel: Any, args: tuple, kwargs: dict) -> dict[str, float]:
    """The run-time (not ``tl.constexpr``) parameters given a Python float, by name."""
    jit = _innermost(kernel)
    values = dict(zip([p.name for p in jit.params], args))
    values.update({k: v for k, v in kwargs.items()})
    return {p.name: float(values[p.name]) for p in jit.params if not p.is_constexpr and type(values.get(p.name)) is float}


def bind(kernel: Any, args: tuple, kwargs: dict, grid: Any) -> tuple[Any, dict, Any]:
    """``(kernel, keyword arguments, grid)`` to launch in the place of ``kernel[grid](*args,
    **kwargs)``, with every run-time float bound as an fp32 constant."""
    floats = runtime_floats(kernel, args, kwargs)
    jit = _innermost(kernel)
    names = [p.name for p in jit.params]
    values = {**dict(zip(names, args)), **kwargs}
    if not floats:
        return kernel, values, grid
    key = (id(kernel), tuple(sorted(floats.items())))
    if key not in _rewrapped:
        _rewrapped[key] = (kernel, _rewrap(kernel, bind_floats(jit, floats, set(), own_name=False)))
    bound = _rewrapped[key][1]
    rest = {k: v for k, v in values.items() if k not in floats}
    # A grid function may read any argument by name, the floats too.
    new_grid = (lambda meta: grid({**meta, **floats})) if callable(grid) else grid
    return bound, rest, new_grid


def launch(kernel: Any, grid: Any):
    """What ``kernel[grid]`` gives inside a traced ``tta_triton`` body: ``wrap_triton``'s launcher
    of the kernel with its run-time floats bound."""

    def run(*args: Any, **kwargs: Any):
        bound, values, g = bind(kernel, args, kwargs, grid)
        return torch.library.wrap_triton(bound)[g](**values)

    return run
