"""STAND-IN for TensorRT's symbolic dimension expressions (``IDimensionExpr``, ``IExprBuilder``,
``DimsExprs``), not TensorRT.

TensorRT builds a plugin's output shapes, launch grid and extra kernel arguments as expression
trees over the input dimensions and evaluates them for every runtime shape. Here each tree is
kept as explicit nodes, so tests can evaluate it at concrete input sizes (``evaluate``) or print
it in tta's shape-expression grammar (``to_text``, the one ``src/lowering/expr.rs`` parses).

The builder folds operations on two constants into a constant, as TensorRT's does, and refuses
null operands (what ``tensorrt.plugin`` silently produces from a NumPy scalar or a float).
"""

from __future__ import annotations

from typing import Iterable, Sequence

from .core import DimensionOperation

__all__ = ["IDimensionExpr", "IExprBuilder", "DimsExprs"]


class IDimensionExpr:
    """Base of every expression node."""

    def is_constant(self) -> bool:
        return False

    def get_constant_value(self) -> int:
        raise ValueError("get_constant_value() on an expression that is not a build-time constant")

    def is_size_tensor(self) -> bool:
        return False


class ConstantExpr(IDimensionExpr):
    def __init__(self, value: int) -> None:
        self.value = value

    def is_constant(self) -> bool:
        return True

    def get_constant_value(self) -> int:
        return self.value

    def __repr__(self) -> str:
        return f"Const({self.value})"


class InputDimExpr(IDimensionExpr):
    """Dimension ``dim`` of plugin input ``input``: a leaf TensorRT fills at run time."""

    def __init__(self, input: int, dim: int) -> None:  # noqa: A002
        self.input = input
        self.dim = dim

    def __repr__(self) -> str:
        return f"In{self.input}[{self.dim}]"


class OperationExpr(IDimensionExpr):
    def __init__(self, op: DimensionOperation, first: IDimensionExpr, second: IDimensionExpr) -> None:
        self.op = op
        self.first = first
        self.second = second

    def __repr__(self) -> str:
        return f"{self.op.name}({self.first!r}, {self.second!r})"


class SizeTensorExpr(IDimensionExpr):
    """A data-dependent extent, written by the plugin into output ``output`` at run time."""

    def __init__(self, output: int, opt: IDimensionExpr, upper_bound: IDimensionExpr) -> None:
        self.output = output
        self.opt = opt
        self.upper_bound = upper_bound

    def is_size_tensor(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"SizeTensor(out{self.output}, opt={self.opt!r}, ub={self.upper_bound!r})"


def _floordiv(a: int, b: int) -> int:
    return a // b


def _ceildiv(a: int, b: int) -> int:
    return -((-a) // b)


_APPLY = {
    DimensionOperation.SUM: lambda a, b: a + b,
    DimensionOperation.PROD: lambda a, b: a * b,
    DimensionOperation.MAX: max,
    DimensionOperation.MIN: min,
    DimensionOperation.SUB: lambda a, b: a - b,
    DimensionOperation.EQUAL: lambda a, b: int(a == b),
    DimensionOperation.LESS: lambda a, b: int(a < b),
    DimensionOperation.FLOOR_DIV: _floordiv,
    DimensionOperation.CEIL_DIV: _ceildiv,
}


def _require(expr, what: str) -> IDimensionExpr:
    if not isinstance(expr, IDimensionExpr):
        raise TypeError(f"{what}: expected an IDimensionExpr, got {expr!r} (a null expression)")
    return expr


class IExprBuilder:
    """``constant``, ``operation`` and ``declare_size_tensor``; remembers every node it made."""

    def __init__(self) -> None:
        self.made: list[IDimensionExpr] = []

    def constant(self, value: int) -> IDimensionExpr:
        if type(value) is not int:  # noqa: E721 - the bindings take a C++ int64, never a float or None
            raise TypeError(f"IExprBuilder.constant takes an int, got {type(value).__name__} {value!r}")
        node = ConstantExpr(value)
        self.made.append(node)
        return node

    def operation(self, op: DimensionOperation, first: IDimensionExpr, second: IDimensionExpr) -> IDimensionExpr:
        if not isinstance(op, DimensionOperation):
            raise TypeError(f"IExprBuilder.operation: {op!r} is not a DimensionOperation")
        _require(first, f"{op.name} first operand")
        _require(second, f"{op.name} second operand")
        if first.is_constant() and second.is_constant():
            a, b = first.get_constant_value(), second.get_constant_value()
            if op in (DimensionOperation.FLOOR_DIV, DimensionOperation.CEIL_DIV) and b == 0:
                raise ZeroDivisionError(f"{op.name}({a}, 0)")
            node: IDimensionExpr = ConstantExpr(_APPLY[op](a, b))
        else:
            node = OperationExpr(op, first, second)
        self.made.append(node)
        return node

    def declare_size_tensor(self, output_index: int, opt: IDimensionExpr, upper: IDimensionExpr) -> IDimensionExpr:
        node = SizeTensorExpr(output_index, _require(opt, "size tensor opt"), _require(upper, "size tensor upper bound"))
        self.made.append(node)
        return node


class DimsExprs:
    """``tensorrt.DimsExprs(n)``: n expression slots; a slot must be set to a real expression."""

    def __init__(self, n: int | Iterable[IDimensionExpr] = 0) -> None:
        if isinstance(n, int):
            self._items: list[IDimensionExpr | None] = [None] * n
        else:
            self._items = [_require(e, "DimsExprs element") for e in n]

    @property
    def nbDims(self) -> int:
        return len(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, i: int) -> IDimensionExpr:
        return self._items[i]  # type: ignore[return-value]

    def __setitem__(self, i: int, value: IDimensionExpr) -> None:
        self._items[i] = _require(value, f"DimsExprs[{i}]")

    def __iter__(self):
        return iter(self._items)

    def __repr__(self) -> str:
        return f"DimsExprs({self._items!r})"


def input_dims(shapes_or_ranks: Sequence[int | Sequence[int]]) -> list[DimsExprs]:
    """The ``DimsExprs`` TensorRT hands a plugin for its inputs: one leaf per dimension (every
    dimension its own symbol; a static size is still a leaf, as TensorRT does not promise to fold
    it)."""
    out = []
    for k, s in enumerate(shapes_or_ranks):
        rank = s if isinstance(s, int) else len(s)
        out.append(DimsExprs([InputDimExpr(k, j) for j in range(rank)]))
    return out


def evaluate(expr: IDimensionExpr, input_shapes: Sequence[Sequence[int]], size_tensors: dict[int, int] | None = None) -> int:
    """The value of ``expr`` when the plugin's inputs have these shapes."""
    _require(expr, "evaluate")
    if isinstance(expr, ConstantExpr):
        return expr.value
    if isinstance(expr, InputDimExpr):
        return int(input_shapes[expr.input][expr.dim])
    if isinstance(expr, OperationExpr):
        a = evaluate(expr.first, input_shapes, size_tensors)
        b = evaluate(expr.second, input_shapes, size_tensors)
        if expr.op in (DimensionOperation.FLOOR_DIV, DimensionOperation.CEIL_DIV) and b == 0:
            raise ZeroDivisionError(f"{expr!r} divides by zero at {list(map(tuple, input_shapes))}")
        return _APPLY[expr.op](a, b)
    if isinstance(expr, SizeTensorExpr):
        if not size_tensors or expr.output not in size_tensors:
            raise ValueError(f"{expr!r} is data-dependent: its value is known only at run time")
        return size_tensors[expr.output]
    raise TypeError(f"unknown expression node {expr!r}")


_TEXT = {
    DimensionOperation.SUM: "({} + {})",
    DimensionOperation.SUB: "({} - {})",
    DimensionOperation.PROD: "({} * {})",
    DimensionOperation.FLOOR_DIV: "FloorDiv({}, {})",
    DimensionOperation.CEIL_DIV: "CeilDiv({}, {})",
    DimensionOperation.MAX: "Max({}, {})",
    DimensionOperation.MIN: "Min({}, {})",
}


def to_text(expr: IDimensionExpr) -> str:
    """``expr`` in tta's shape grammar over ``i{k}_{j}`` (input k, dim j)."""
    _require(expr, "to_text")
    if isinstance(expr, ConstantExpr):
        return str(expr.value) if expr.value >= 0 else f"(0 - {-expr.value})"
    if isinstance(expr, InputDimExpr):
        return f"i{expr.input}_{expr.dim}"
    if isinstance(expr, OperationExpr):
        if expr.op not in _TEXT:
            raise ValueError(f"{expr.op.name} has no tta shape-expression form")
        return _TEXT[expr.op].format(to_text(expr.first), to_text(expr.second))
    raise ValueError(f"{expr!r} has no tta shape-expression form")
