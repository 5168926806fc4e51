"""The value of a size expression that is the same for every size in the ranges export proved.

A launch function may hand a kernel a compile-time constant computed from shapes that does
not in fact vary: ``(2*n - 1) // n`` is 1 for every ``n >= 1``. torch keeps it as
``FloorDiv(2*n - 1, n)``, and interval arithmetic over ``n``'s range (``bound_sympy``) only says
it lies in ``[0, hi]``. So each floor division whose divisor is positive over the ranges is
first replaced by its quotient where that quotient is proven constant (``b*q <= a <= b*q + b - 1``
over the whole range, for the ``q`` it takes at a point of the range), innermost first, and what
is left is bounded; a single value over the ranges is the constant.
"""

from __future__ import annotations

from typing import Mapping

import sympy


def _bounds(expr: sympy.Expr, vr: dict):
    from torch.utils._sympy.value_ranges import bound_sympy

    return bound_sympy(expr, vr)


def _finite_int(x) -> int | None:
    try:
        if x.is_finite is False or not x.is_integer:
            return None
        return int(x)
    except (TypeError, ValueError, AttributeError):
        return None


def _constant_quotient(a: sympy.Expr, b: sympy.Expr, vr: dict, points: list[dict]) -> int | None:
    """``q`` when ``a // b == q`` for every size in the ranges (``b >= 1`` there)."""
    lo_b = _finite_int(_bounds(b, vr).lower)
    if lo_b is None or lo_b < 1:
        return None
    tried = set()
    for point in points:
        try:
            num, den = int(a.xreplace(point)), int(b.xreplace(point))
        except (TypeError, ValueError):
            continue
        if den < 1:
            continue
        q = num // den
        if q in tried:
            continue
        tried.add(q)
        low = _finite_int(_bounds(sympy.expand(a - b * q), vr).lower)
        high = _finite_int(_bounds(sympy.expand(b * q + b - 1 - a), vr).lower)
        if low is not None and high is not None and low >= 0 and high >= 0:
            return q
    return None


def _resolve(e: sympy.Expr, vr: dict, points: list[dict]) -> sympy.Expr:
    from torch.utils._sympy import functions as F

    if not e.args:
        return e
    args = [_resolve(a, vr, points) for a in e.args]
    if args != list(e.args):
        e = e.func(*args)
    if isinstance(e, F.FloorDiv):
        q = _constant_quotient(e.args[0], e.args[1], vr, points)
        return sympy.Integer(q) if q is not None else e
    ceil = getattr(F, "CeilDiv", None)
    if ceil is not None and isinstance(e, ceil):
        q = _constant_quotient(-e.args[0], e.args[1], vr, points)
        return sympy.Integer(-q) if q is not None else e
    mods = tuple(getattr(F, n) for n in ("Mod", "PythonMod") if hasattr(F, n))
    if isinstance(e, mods):
        a, b = e.args
        q = _constant_quotient(a, b, vr, points)
        return sympy.expand(a - b * q) if q is not None else e
    return e


def constant_over(expr: sympy.Expr, ranges: Mapping[sympy.Symbol, tuple[int, int | None]]) -> int | None:
    """The one value ``expr`` takes for every assignment of its symbols within ``ranges``
    (inclusive, ``None``: unbounded above), or None when it takes several or that cannot be
    proven. Symbols without a range: None."""
    from torch.utils._sympy.numbers import int_oo
    from torch.utils._sympy.value_ranges import ValueRanges

    free = expr.free_symbols
    if not free or not free <= set(ranges):
        return None
    vr = {s: ValueRanges(lo, int_oo if hi is None else hi) for s, (lo, hi) in ranges.items() if s in free}
    # Points at which to read a candidate quotient: each end of every range.
    points = [{s: sympy.Integer(lo) for s, (lo, _) in ranges.items() if s in free}]
    if all(hi is not None for s, (_, hi) in ranges.items() if s in free):
        points.append({s: sympy.Integer(hi) for s, (_, hi) in ranges.items() if s in free})
    resolved = _resolve(expr, vr, points)
    b = _bounds(resolved, vr)
    lo, hi = _finite_int(b.lower), _finite_int(b.upper)
    return lo if lo is not None and lo == hi else None
