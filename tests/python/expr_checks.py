"""Checks on the shape expressions a compiled kernel carries, shared by the backend tests."""

from __future__ import annotations

import re
import types

from tta.common import bridge as core

_TRTP = types.SimpleNamespace(cdiv=lambda a, b: -(-a // b), max=max, min=min)


def trtp_value(expr: str, env: dict) -> int:
    """The value of trtp's rendering of ``expr`` (``trtp.cdiv/max/min`` over the symbols)."""
    return eval(core.trtp_expr(expr), {"__builtins__": {}, "trtp": _TRTP}, dict(env))


def expressions_render_for_tensorrt(kernels) -> int:
    """Every symbolic grid dim and extra renders in trtp's arithmetic to the value the
    expression has; returns how many were checked."""
    checked = 0
    for k in kernels:
        for e in (*k.grid, *k.extras):
            if e.isdigit():  # constants go to TensorRT as ints
                continue
            env = {s: 7 + 3 * i for i, s in enumerate(sorted(set(re.findall(r"[io]\d+_\d+", e))))}
            assert trtp_value(e, env) == core.eval_expr(e, env), e
            checked += 1
    return checked
