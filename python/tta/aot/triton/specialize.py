"""Bind a Triton kernel's run-time float arguments to fixed values, leaving the kernel as written.

A library kernel takes ``eps`` as a run-time float (``eps.to(tl.float32)`` in its body), and
TensorRT passes only int32 scalars at run time. The value is fixed for a plugin, so tta compiles
a small generated kernel that takes every other parameter and calls the original with
``tl.full((), value, tl.float32)`` in the float's place: inside, the argument is exactly what
Triton's launcher would have made of the Python float (an fp32 scalar), so ``.to`` and
arithmetic behave as in eager code. Triton inlines the call; the PTX has the original's
parameters minus the floats, and the entry keeps the original kernel's name.
"""

from __future__ import annotations

import math
from typing import Any

from .. import codegen

_made: dict[tuple, Any] = {}


def _literal(v: float) -> str:
    if math.isnan(v):
        return 'float("nan")'
    if math.isinf(v):
        return 'float("inf")' if v > 0 else 'float("-inf")'
    return repr(float(v))


def _params(kernel: Any) -> list[tuple[str, bool]]:
    """(name, is constexpr) of each parameter; Triton's interpreter keeps no ``params``."""
    if hasattr(kernel, "params"):
        return [(p.name, bool(p.is_constexpr)) for p in kernel.params]
    import inspect

    import triton.language as tl

    out = []
    for p in inspect.signature(kernel.fn).parameters.values():
        a = p.annotation
        out.append((p.name, a is tl.constexpr or (isinstance(a, str) and a.split(".")[-1] == "constexpr")))
    return out


def bind_floats(kernel: Any, floats: dict[str, float], constexprs: set[str], own_name: bool = True) -> Any:
    """A ``triton.jit`` kernel with ``kernel``'s parameters minus ``floats``, calling ``kernel``
    with each float bound to its value. ``constexprs``: parameters compiled in as constants.

    ``own_name``: the new kernel has the original's name (the PTX entry tta hands TensorRT) and
    calls it under another. Otherwise (Inductor, which copies a kernel's source and that of the
    kernels it calls, each under its own name, into its generated module) the new kernel is
    named ``<name>_fp32_bound`` and calls the original by the original's name."""
    import triton
    import triton.language as tl

    key = (id(kernel), tuple(sorted(floats.items())), tuple(sorted(constexprs)), own_name)
    if key in _made:
        return _made[key][1]
    name = kernel.fn.__name__
    callee = "_tta_kernel" if own_name else name
    params, args = [], []
    for pname, is_constexpr in _params(kernel):
        if pname in floats:
            args.append(f"tl.full((), {_literal(floats[pname])}, tl.float32)")
            continue
        params.append(f"{pname}: tl.constexpr" if is_constexpr or pname in constexprs else pname)
        args.append(pname)
    own = name if own_name else f"{name}_fp32_bound"
    src = f"def {own}({', '.join(params)}):\n    {callee}({', '.join(args)})\n"
    # Triton reads the kernel's source back (inspect.getsource): register it under its own name.
    label = f"{name} with {', '.join(f'{k}={v!r}' for k, v in sorted(floats.items()))}"
    scope = {"tl": tl, callee: kernel, "__name__": getattr(kernel, "__module__", "tta_specialized")}
    fn = triton.jit(codegen.define(src, own, scope, label))
    _made[key] = (kernel, fn)  # keeps ``kernel`` alive so its id stays unique
    return fn
