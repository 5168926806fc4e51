"""One fake world for recording a launch function: a ``ShapeEnv``, a ``FakeTensorMode``, fake
inputs with one symbol per dimension (``i{k}_{j}``, see ``base.py``) and fake outputs, and the
rules every backend applies to what the launch passes its kernel: which port a tensor is, which
values are compile-time constants, and that each port is passed exactly once.

Hints: each symbol gets its own prime as the value sympy and the ShapeEnv reason with. Distinct
primes keep the ShapeEnv from merging two dims that happen to have the same hint (duck sizing)
or specializing a dim to 0/1, and keep Python ints computed from shapes from accidentally
looking divisible by 16. Conditions the launch code branches on (``assert n <= BLOCK``) become
ShapeEnv guards; we report them, because the compiled kernel is valid only where they hold.
"""

from __future__ import annotations

import ast
import operator
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

import sympy
import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv

from ..common import bridge as core
from ..common.dtypes import dtype_name, torch_dtype
from ..errors import PluginError
from .base import input_symbol

# Hints for the symbols: primes, distinct per dimension, larger than the small sizes kernels
# special-case (1, 2, 4, ...) and far from powers of two.
_PRIMES = (
    97,
    89,
    83,
    79,
    73,
    71,
    67,
    61,
    59,
    53,
    47,
    43,
    41,
    37,
    31,
    29,
    101,
    103,
    107,
    109,
    113,
    127,
    131,
    137,
    139,
    149,
    151,
    157,
    163,
    167,
    173,
    179,
)


@dataclass(frozen=True)
class TensorType:
    """A tensor port of a kernel: dtype and shape.

    For inputs, each dim is ``None`` (dynamic: gets its own symbol ``i{k}_{j}``), an ``int``
    (static), or the name of an earlier input's symbol or an expression over such symbols
    (``"i0_1"``, ``"2*i0_1"``: a size the caller knows is that one). For outputs, each dim is an ``int`` or an expression string over input symbols
    (e.g. ``"i0_0*i0_1"``).

    ``ranges``: per dim, the sizes it may take, ``(min, max)`` (max None: unbounded), as export
    proved them, or None (dims with a symbol of their own only). A compile-time constant
    computed from shapes is accepted when it is one value over these ranges (``ranges.py``).
    """

    dtype: str
    shape: tuple[int | str | None, ...]
    ranges: tuple[tuple[int, int | None] | None, ...] | None = None

    @staticmethod
    def make(dtype: torch.dtype | str, shape: Iterable[int | str | None]) -> "TensorType":
        return TensorType(dtype_name(dtype), tuple(shape))

    @staticmethod
    def dynamic(dtype: torch.dtype | str, rank: int) -> "TensorType":
        return TensorType(dtype_name(dtype), (None,) * rank)

    def key(self) -> list:
        base = [self.dtype, list(self.shape)]
        return base if self.ranges is None else base + [[list(r) if r else None for r in self.ranges]]


def canonical(text: str) -> str:
    """Canonical text of a shape expression (Rust's expression algebra)."""
    return core.canonical_expr(text)


class Session:
    """One fake world: a ShapeEnv, a FakeTensorMode, fake inputs and outputs."""

    def __init__(self, input_metas: Sequence[TensorType]):
        self.env = ShapeEnv(duck_shape=False)
        self.mode = FakeTensorMode(shape_env=self.env, allow_non_fake_inputs=False)
        self._names: dict[sympy.Symbol, sympy.Symbol] = {}  # ShapeEnv symbol -> i{k}_{j}
        self.hints: dict[str, int] = {}
        self.input_metas = tuple(input_metas)
        self._by_name: dict[str, torch.SymInt] = {}
        self.ranges: dict[str, tuple[int, int | None]] = {}  # i{k}_{j} -> sizes export proved
        self._range_guards: list[str] = []
        primes = iter(_PRIMES)
        self.inputs: list[torch.Tensor] = []
        with self.mode:
            for k, meta in enumerate(self.input_metas):
                dims = []
                for j, d in enumerate(meta.shape):
                    if isinstance(d, str) and d in self._by_name:
                        # The same size as an earlier dim (a shape the caller knows is shared,
                        # e.g. unified by the op's fake impl at export): the same symbol.
                        dims.append(self._by_name[d])
                    elif isinstance(d, str) and d not in (input_symbol(k, j),) and _mentions_only(d, self._by_name):
                        # An expression over earlier dims (``2*i0_1``).
                        dims.append(eval_shape(canonical(d), {**self._by_name, **_EXPR_FUNCS}))
                    elif d is None or isinstance(d, str):
                        try:
                            hint = next(primes)
                        except StopIteration:
                            raise PluginError(f"too many dynamic dimensions (more than {len(_PRIMES)})") from None
                        dims.append(self._symbol(input_symbol(k, j), hint))
                        if meta.ranges is not None and j < len(meta.ranges) and meta.ranges[j] is not None:
                            self.ranges[input_symbol(k, j)] = tuple(meta.ranges[j])
                    elif isinstance(d, int) and d >= 0:
                        dims.append(d)
                    else:
                        raise PluginError(f"input {k} dim {j}: {d!r} is neither a static size nor None (dynamic)")
                self.inputs.append(torch.empty(dims, dtype=torch_dtype(meta.dtype)))
        self.outputs: list[torch.Tensor] = []
        self._guards_before = 0

    def _symbol(self, name: str, hint: int) -> torch.SymInt:
        from torch._dynamo.source import ConstantSource

        source = ConstantSource(name)
        s = self.env.create_symbol(hint, source, dynamic_dim=DimDynamic.DYNAMIC)
        self._names[s] = sympy.Symbol(name, integer=True, positive=True)
        self.hints[name] = hint
        self._by_name[name] = self.env.create_symintnode(s, hint=hint, source=source)
        return self._by_name[name]

    # -- outputs ------------------------------------------------------------------------------

    def outputs_from_metas(self, metas: Sequence[TensorType]) -> list[torch.Tensor]:
        """Fake outputs whose dims are the given expressions over input symbols."""
        scope = {name: sym for name, sym in self._symints().items()}
        scope.update(_EXPR_FUNCS)
        outs = []
        with self.mode:
            for k, meta in enumerate(metas):
                dims = []
                for j, d in enumerate(meta.shape):
                    if isinstance(d, int):
                        dims.append(d)
                    elif isinstance(d, str):
                        try:
                            dims.append(eval_shape(canonical(d), scope))
                        except Exception as e:
                            raise PluginError(f"output {k} dim {j}: cannot evaluate shape expression {d!r}: {e}") from e
                    else:
                        raise PluginError(f"output {k} dim {j}: give an int or an expression over input symbols, not {d!r}")
                outs.append(torch.empty(dims, dtype=torch_dtype(meta.dtype)))
        self.outputs = outs
        return outs

    def outputs_from_fn(self, meta_fn: Callable, where: str) -> list[torch.Tensor]:
        """Fake outputs from ``meta_fn(*inputs)`` (a plugin's meta_impl or a region body)."""
        try:
            with self.mode:
                outs = meta_fn(*self.inputs)
        except Exception as e:
            raise PluginError(f"{where}: computing the outputs on symbolic shapes failed: {type(e).__name__}: {e}") from e
        outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
        for o in outs:
            if not isinstance(o, torch.Tensor):
                raise PluginError(f"{where}: the output function returned {type(o).__name__}, not tensors")
        # Kernels write dense buffers of their own; TensorRT hands plugins contiguous (LINEAR)
        # tensors. A fake impl may return an input (``return x``, as Torch-TensorRT's examples
        # do) or a view of one: the output is still a buffer of its own, never the input's.
        with self.mode:
            self.outputs = [torch.empty(o.shape, dtype=o.dtype) for o in outs]
        return self.outputs

    def output_metas(self) -> list[TensorType]:
        return [TensorType(dtype_name(o.dtype), tuple(self.expr_or_int(d) for d in o.shape)) for o in self.outputs]

    def _symints(self) -> dict[str, torch.SymInt]:
        out = {}
        for t, meta in zip(self.inputs, self.input_metas):
            for d in t.shape:
                if isinstance(d, torch.SymInt):
                    out[str(self.rename(d.node.expr))] = d
        return out

    # -- expressions --------------------------------------------------------------------------

    def rename(self, expr: sympy.Basic) -> sympy.Basic:
        return expr.xreplace(self._names)

    def expr(self, value: Any) -> str:
        """An int or SymInt as a canonical expression string over ``i{k}_{j}``."""
        if isinstance(value, bool):
            raise TypeError("a bool is not a size")
        if isinstance(value, int):
            return str(value)
        if isinstance(value, torch.SymInt):
            e = self.rename(value.node.expr)
            if e.free_symbols - set(self._names.values()):
                raise PluginError(f"size expression {e} mentions values that are not input dimensions")
            try:
                return canonical(str(e))
            except Exception as err:
                raise PluginError(f"size expression {e} cannot be expressed for TensorRT: {err}") from err
        raise TypeError(f"{type(value).__name__} is not an integer size")

    def expr_or_int(self, value: Any) -> int | str:
        c = constant_int(value)
        return c if c is not None else self.expr(value)

    def grid(self, grid: Any, here: str) -> tuple[str, str, str]:
        """A launch grid (an int, or 1 to 3 of them) as three expressions."""
        dims = tuple(grid) if isinstance(grid, (tuple, list)) else (grid,)
        if not 1 <= len(dims) <= 3:
            raise PluginError(f"{here}: the grid {grid!r} must have 1 to 3 dimensions")
        try:
            return tuple(self.expr(g) for g in dims) + ("1",) * (3 - len(dims))  # type: ignore[return-value]
        except TypeError as e:
            raise PluginError(f"{here}: grid {grid!r} is not made of integers: {e}") from None

    def port_types(self) -> dict[str, Any]:
        """The recorded plan fields every backend shares: port dtypes, output shapes, guards."""
        return {
            "input_dtypes": tuple(dtype_name(t.dtype) for t in self.inputs),
            "output_dtypes": tuple(dtype_name(t.dtype) for t in self.outputs),
            "output_shapes": tuple(tuple(str(d) for d in m.shape) for m in self.output_metas()),
            "guards": self.guards(),
        }

    def guards(self) -> list[str]:
        """Conditions on input dims the launch code relied on (since ``mark()``), and the ranges
        a constant computed from shapes was proven over. Each must be one ``guards.py`` can
        evaluate for other sizes (TensorRT's profiles, the Inductor path's kernel choice)."""
        from .guards import GuardError, parse

        out = []
        for g in self.env.guards[self._guards_before :]:
            out.append(str(self.rename(g.expr)))
        out += [g for g in self._range_guards if g not in out]
        for g in out:
            try:
                parse(g)
            except GuardError as e:
                raise PluginError(f"the launch code relied on a condition tta cannot check for other sizes: {e}") from None
        return out

    def mark(self) -> None:
        self._guards_before = len(self.env.guards)
        self._range_guards = []

    def constant_over_ranges(self, value: torch.SymInt) -> int | None:
        """The value of a size expression that is one number over the ranges export proved for
        the dims it reads (``ranges.py``); the kernel then holds only there, so those ranges
        become guards. None when it varies or a dim it reads has no range."""
        from .ranges import constant_over

        e = self.rename(value.node.expr)
        by_name = {str(s): s for s in self._names.values()}
        ranges = {by_name[n]: r for n, r in self.ranges.items() if n in by_name}
        c = constant_over(e, ranges)
        if c is None:
            return None
        for sym in sorted(e.free_symbols, key=str):
            lo, hi = self.ranges[str(sym)]
            self._range_guards.append(f"{sym} >= {lo}")
            if hi is not None:
                self._range_guards.append(f"{sym} <= {hi}")
        return c

    # -- tensor roles -------------------------------------------------------------------------

    def tensor_role(self, t: torch.Tensor) -> tuple[str, int] | None:
        """``("input", k)`` / ``("output", k)`` when ``t`` is that port's buffer (the tensor itself,
        or a view starting at the same address, e.g. ``x.view(-1)``), else None."""
        for kind, ports in (("input", self.inputs), ("output", self.outputs)):
            for k, p in enumerate(ports):
                if t is p:
                    return kind, k
        for kind, ports in (("input", self.inputs), ("output", self.outputs)):
            for k, p in enumerate(ports):
                if _same_storage(t, p):
                    if constant_int(t.storage_offset()) != constant_int(p.storage_offset()):
                        raise PluginError(
                            f"a view of {kind} {k} at another offset ({t.storage_offset()}) is passed to the kernel; "
                            "TensorRT passes only the buffer's start: pass the tensor and add the offset in the kernel"
                        )
                    return kind, k
        return None

    def role_of(self, t: torch.Tensor, name: str, here: str) -> tuple[str, int]:
        """The port a tensor argument is; refused when it is none (TensorRT hands a plugin its
        inputs and outputs and nothing else)."""
        role = self.tensor_role(t)
        if role is None:
            raise PluginError(
                f"{here}: parameter {name!r} gets a tensor that is neither an input nor an output of the plugin "
                "(allocated in the launch function?); TensorRT AOT plugins get no scratch memory"
            )
        return role

    def constant(self, v: Any, name: str, here: str, what: str, where_from: str = "the config") -> Any:
        """The value of a compile-time parameter (``what``: the DSL's word for one, e.g.
        ``constexpr``); refused when it depends on input shapes, since one compiled kernel
        serves every shape."""
        if isinstance(v, torch.SymInt):
            c = constant_int(v)
            if c is None:
                c = self.constant_over_ranges(v)
            if c is None:
                within = ""
                if self.ranges:
                    within = (
                        " (it is not one value over the sizes export allows: "
                        + ", ".join(f"{n} in [{lo}, {'inf' if hi is None else hi}]" for n, (lo, hi) in sorted(self.ranges.items()))
                        + ")"
                    )
                raise PluginError(
                    f"{here}: {what} parameter {name!r} gets {self.expr(v)}, which depends on input shapes{within}; "
                    f"a {what} is compiled in, so it must come from {where_from} (one kernel serves every shape)"
                )
            return c
        if isinstance(v, (torch.SymFloat, torch.SymBool)):
            raise PluginError(f"{here}: {what} parameter {name!r} gets a value computed from shapes; take it from {where_from}")
        if isinstance(v, torch.Tensor):
            raise PluginError(f"{here}: {what} parameter {name!r} gets a tensor")
        return v


def _same_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    try:
        return a.untyped_storage()._cdata == b.untyped_storage()._cdata
    except Exception:
        return False


def constant_int(value: Any) -> int | None:
    """The value of an int, or of a SymInt whose expression is a number; None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, torch.SymInt):
        e = value.node.expr
        if e.is_number:
            return int(e)
    return None


def _mentions_only(text: str, names: dict) -> bool:
    """Whether ``text`` is an expression whose names are all in ``names`` (and mentions one)."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        return False
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - set(_EXPR_FUNCS)
    return bool(used) and used <= set(names)


def _floordiv(a, b):
    return a // b


def _ceildiv(a, b):
    return -((-a) // b)


# Functions an expression string may call when evaluated on SymInts (the canonical forms the
# Rust algebra prints).
_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}


def eval_shape(text: str, scope: dict) -> Any:
    """Evaluate a canonical shape expression (``src/lowering/expr.rs`` prints them) over
    ``scope``: symbols and the functions of ``_EXPR_FUNCS``. A tree walk over exactly that
    grammar, so no other Python can run."""

    def walk(n: ast.AST) -> Any:
        if isinstance(n, ast.Expression):
            return walk(n.body)
        if isinstance(n, ast.Constant) and type(n.value) is int:
            return n.value
        if isinstance(n, ast.Name) and n.id in scope:
            return scope[n.id]
        if isinstance(n, ast.BinOp) and type(n.op) in _BINOPS:
            return _BINOPS[type(n.op)](walk(n.left), walk(n.right))
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            return -walk(n.operand)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in _EXPR_FUNCS and not n.keywords:
            return scope[n.func.id](*(walk(a) for a in n.args))
        raise ValueError(f"unsupported element {ast.dump(n)[:60]} in shape expression {text!r}")

    return walk(ast.parse(text, mode="eval"))


_EXPR_FUNCS = {
    "FloorDiv": _floordiv,
    "CeilDiv": _ceildiv,
    "Mod": lambda a, b: a % b,
    "Max": lambda *xs: _fold(torch.sym_max, xs),
    "Min": lambda *xs: _fold(torch.sym_min, xs),
}


def _fold(f, xs):
    acc = xs[0]
    for x in xs[1:]:
        acc = f(acc, x)
    return acc
