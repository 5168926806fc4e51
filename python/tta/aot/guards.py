"""Guards as tta records them, evaluated for concrete sizes.

A guard is a condition on input dims that the launch code relied on, as sympy prints it
(``i0_1 <= 1024``, ``Eq(BitwiseFn_bitwise_and(i0_1, 15), 0)``, ``((i0_1 - 1)//2) > 3``). sympy
itself cannot decide torch's opaque bitwise functions on numbers (``bool()`` of
``Eq(BitwiseFn_bitwise_and(89, 15), 9)`` raises TypeError), and ``triton.next_power_of_2`` of a
symbolic size becomes a chain of them. So a guard is read here once into a Python function over
ints, from exactly the grammar torch's printer writes (a tree walk: no other code can run), with
integer semantics for every function, and evaluated per point.

``Guard.monotone``: whether checking the corners of a box of sizes decides the guard over the
whole box (``trt/tactics.py``). Comparisons of sums, products, floor divisions, max and min are
taken as monotone in each size (as tta always has); ``Mod``, bitwise functions and ``Ne`` are
not, except the bit-smearing chain ``next_power_of_2`` is made of (``x | x >> 1 | x >> 2 ...``
up to 32 bits, which is ``2**bit_length(x) - 1``: non-decreasing in ``x``).
"""

from __future__ import annotations

import ast
import functools
import operator
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Mapping


class GuardError(ValueError):
    """A guard text outside the grammar tta evaluates."""


def _floordiv(a, b):
    return a // b


def _ceildiv(a, b):
    return -((-a) // b)


def _boolean(f):
    return lambda *xs: bool(f(*xs))


def _ident(x):
    return x


# name -> (function on numbers, monotone in its arguments when they are)
_FUNCS: dict[str, tuple[Callable, bool]] = {
    "FloorDiv": (_floordiv, True),
    "CleanDiv": (_floordiv, True),
    "IntTrueDiv": (lambda a, b: Fraction(a, b), True),
    "CeilDiv": (_ceildiv, True),
    "Mod": (lambda a, b: a % b, False),
    "PythonMod": (lambda a, b: a % b, False),
    "ModularIndexing": (lambda x, d, m: (x // d) % m, False),
    "Max": (lambda *xs: max(xs), True),
    "Min": (lambda *xs: min(xs), True),
    "Abs": (abs, False),
    "Eq": (_boolean(operator.eq), True),  # constant when both sides are equal at every corner
    "Ne": (_boolean(operator.ne), False),
    "Lt": (_boolean(operator.lt), True),
    "Le": (_boolean(operator.le), True),
    "Gt": (_boolean(operator.gt), True),
    "Ge": (_boolean(operator.ge), True),
    "StrictLessThan": (_boolean(operator.lt), True),
    "LessThan": (_boolean(operator.le), True),
    "StrictGreaterThan": (_boolean(operator.gt), True),
    "GreaterThan": (_boolean(operator.ge), True),
    "And": (lambda *xs: all(xs), True),
    "Or": (lambda *xs: any(xs), False),
    "Not": (lambda x: not x, False),
    "BitwiseFn_bitwise_and": (operator.and_, False),
    "BitwiseFn_bitwise_or": (operator.or_, False),
    "BitwiseFn_bitwise_xor": (operator.xor, False),
    "LShift": (operator.lshift, True),
    "RShift": (operator.rshift, True),
    "PowByNatural": (operator.pow, True),
    "floor": (lambda x: x // 1, True),
    "ceiling": (lambda x: -((-x) // 1), True),
    "FloorToInt": (lambda x: int(x // 1), True),
    "CeilToInt": (lambda x: int(-((-x) // 1)), True),
    "TruncToInt": (lambda x: int(x), True),
    "Identity": (_ident, True),
    "Where": (lambda c, a, b: a if c else b, False),
}

_BINOPS: dict[type, tuple[Callable, bool]] = {
    ast.Add: (operator.add, True),
    ast.Sub: (operator.sub, True),
    ast.Mult: (operator.mul, True),
    ast.FloorDiv: (operator.floordiv, True),
    ast.Div: (lambda a, b: Fraction(a) / Fraction(b), True),
    ast.Mod: (operator.mod, False),
    ast.Pow: (operator.pow, True),
    ast.BitAnd: (lambda a, b: a and b if isinstance(a, bool) else a & b, False),  # sympy prints And as &
    ast.BitOr: (lambda a, b: a or b if isinstance(a, bool) else a | b, False),
    ast.BitXor: (operator.xor, False),
    ast.LShift: (operator.lshift, True),
    ast.RShift: (operator.rshift, True),
}

_COMPARE: dict[type, tuple[Callable, bool]] = {
    ast.Lt: (operator.lt, True),
    ast.LtE: (operator.le, True),
    ast.Gt: (operator.gt, True),
    ast.GtE: (operator.ge, True),
    ast.Eq: (operator.eq, True),
    ast.NotEq: (operator.ne, False),
}

_SMEAR_BITS = 32  # a smear chain this wide covers every int32 size


@dataclass(frozen=True)
class Guard:
    text: str
    fn: Callable[[Mapping[str, int]], Any]
    symbols: frozenset[str]
    monotone: bool

    def holds(self, env: Mapping[str, int]) -> bool:
        """Whether the guard holds for these symbol values (every symbol it names must be given)."""
        missing = self.symbols - set(env)
        if missing:
            raise KeyError(f"guard {self.text!r} mentions {sorted(missing)}, which have no value")
        try:
            return bool(self.fn(env))
        except ZeroDivisionError:
            return False  # a size the guard divides by is 0: the launch code never ran there


@functools.lru_cache(maxsize=4096)
def parse(text: str) -> Guard:
    """The guard ``text`` as a function of its symbols; ``GuardError`` outside the grammar."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        raise GuardError(f"guard {text!r} is not an expression: {e.msg}") from None
    symbols: set[str] = set()
    fn, mono, _ = _walk(tree.body, text, symbols)
    return Guard(text, fn, frozenset(symbols), mono)


def holds(text: str, env: Mapping[str, int]) -> bool:
    return parse(text).holds(env)


def _walk(n: ast.AST, text: str, symbols: set[str]) -> tuple[Callable, bool, int]:
    """(function of the env, monotone, smear width) of one node."""
    if isinstance(n, ast.Constant) and type(n.value) in (int, bool):
        v = n.value
        return (lambda env: v), True, 1
    if isinstance(n, ast.Name):
        if n.id in ("True", "true"):
            return (lambda env: True), True, 1
        if n.id in ("False", "false"):
            return (lambda env: False), True, 1
        name = n.id
        symbols.add(name)
        return (lambda env: env[name]), True, 1
    if isinstance(n, ast.UnaryOp):
        f, m, _ = _walk(n.operand, text, symbols)
        if isinstance(n.op, ast.USub):
            return (lambda env: -f(env)), m, 1
        if isinstance(n.op, ast.UAdd):
            return f, m, 1
        if isinstance(n.op, (ast.Invert, ast.Not)):  # sympy prints Not(c) as ~c
            return (lambda env: not f(env)), False, 1
    if isinstance(n, ast.BinOp) and type(n.op) in _BINOPS:
        op, om = _BINOPS[type(n.op)]
        (lf, lm, _), (rf, rm, _) = _walk(n.left, text, symbols), _walk(n.right, text, symbols)
        if isinstance(n.op, ast.BitAnd) and _is_condition(n.left) and _is_condition(n.right):
            om = True  # sympy's And printed as `a & b`: monotone when both conditions are
        return (lambda env: op(lf(env), rf(env))), om and lm and rm, 1
    if isinstance(n, ast.BoolOp):
        parts = [_walk(v, text, symbols) for v in n.values]
        fs = [p[0] for p in parts]
        if isinstance(n.op, ast.And):
            return (lambda env: all(f(env) for f in fs)), all(p[1] for p in parts), 1
        return (lambda env: any(f(env) for f in fs)), False, 1
    if isinstance(n, ast.Compare):
        parts = [_walk(v, text, symbols) for v in (n.left, *n.comparators)]
        ops = []
        mono = all(p[1] for p in parts)
        for o in n.ops:
            if type(o) not in _COMPARE:
                break
            f, m = _COMPARE[type(o)]
            ops.append(f)
            mono = mono and m
        else:
            fs = [p[0] for p in parts]

            def compare(env):
                vals = [f(env) for f in fs]
                return all(op(a, b) for op, a, b in zip(ops, vals, vals[1:]))

            return compare, mono, 1
    if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in _FUNCS and not n.keywords:
        smear = _smear(n, text, symbols)
        if smear is not None:
            return smear
        f, fm = _FUNCS[n.func.id]
        parts = [_walk(a, text, symbols) for a in n.args]
        fs = [p[0] for p in parts]
        return (lambda env: f(*(g(env) for g in fs))), fm and all(p[1] for p in parts), 1
    what = ast.dump(n)[:80] if not isinstance(n, ast.Call) else f"function {ast.unparse(n.func)}"
    raise GuardError(f"guard {text!r}: tta cannot evaluate {what}")


def _smear(n: ast.Call, text: str, symbols: set[str]):
    """``BitwiseFn_bitwise_or(A, A // 2**w)`` where ``A`` smears ``w`` bits: smears ``2w``."""
    if n.func.id != "BitwiseFn_bitwise_or" or len(n.args) != 2:
        return None
    a, b = n.args
    if not (
        isinstance(b, ast.BinOp)
        and isinstance(b.op, ast.FloorDiv)
        and isinstance(b.right, ast.Constant)
        and type(b.right.value) is int
        and ast.dump(b.left) == ast.dump(a)
    ):
        return None
    inner_f, inner_m, width = _walk(a, text, symbols)
    if b.right.value != 2**width:
        return None
    wide = 2 * width
    if wide < _SMEAR_BITS:
        return (lambda env: (lambda x: x | (x >> width))(inner_f(env))), False, wide
    # Every bit below the top one set: 2**bit_length(x) - 1 for x >= 0 (the chain on ints).
    if isinstance(a, ast.Call) and a.func.id == "BitwiseFn_bitwise_or":
        base = _smear_base(a)
        base_f, base_m, _ = _walk(base, text, symbols)
    else:
        base_f, base_m = inner_f, inner_m

    def smeared(env):
        x = base_f(env)
        return (1 << x.bit_length()) - 1 if x >= 0 else -1

    return smeared, base_m, wide


def _smear_base(n: ast.AST) -> ast.AST:
    """The value a smear chain starts from."""
    while isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "BitwiseFn_bitwise_or":
        n = n.args[0]
    return n


_CONDITIONS = {"Eq", "Ne", "Lt", "Le", "Gt", "Ge", "StrictLessThan", "LessThan", "StrictGreaterThan", "GreaterThan", "And", "Or", "Not"}


def _is_condition(n: ast.AST) -> bool:
    if isinstance(n, ast.Compare):
        return True
    if isinstance(n, ast.Call) and isinstance(n.func, ast.Name):
        return n.func.id in _CONDITIONS
    return isinstance(n, ast.BinOp) and isinstance(n.op, ast.BitAnd) and _is_condition(n.left) and _is_condition(n.right)
