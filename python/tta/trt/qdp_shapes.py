"""tta shape expressions (over ``i{k}_{j}``: input k, dim j) as ``tensorrt.plugin`` symbolic
expressions.

The Rust core renders an expression in the arithmetic ``trtp.ShapeExpr`` supports
(``core.trtp_expr``: ``+ - * //``, ``trtp.cdiv/max/min``, never an integer on the left); this
module evaluates that rendering over the plugin's input ``ShapeExpr``s with a tree walk over
exactly that grammar. Integers reach ``tensorrt.plugin`` only as Python ``int``s: anything else
(a NumPy scalar, a float) silently becomes a null expression there.
"""

from __future__ import annotations

import ast
import operator
from typing import Any, Sequence

from ..common import bridge as core
from ..errors import GraphError, PluginError

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv}
_CALLS = ("cdiv", "max", "min")


def constant_of(text: str) -> int | None:
    """The value of an expression that mentions no symbol, else None."""
    canon = core.canonical_expr(str(text))
    try:
        return int(canon)
    except ValueError:
        return None


def symbols(inputs: Sequence[Any]) -> dict[str, Any]:
    """``{"i0_1": inputs[0].shape_expr[1], ...}`` for ``TensorDesc`` inputs."""
    return {f"i{k}_{j}": d.shape_expr[j] for k, d in enumerate(inputs) for j in range(len(d.shape_expr))}


def to_trtp(text: str | int, scope: dict[str, Any], trtp: Any, where: str) -> Any:
    """``text`` as a ``trtp`` expression over ``scope`` (symbol -> ``ShapeExpr``); a constant
    comes back as a plain ``int``."""
    if isinstance(text, int) and not isinstance(text, bool):
        return int(text)
    value = constant_of(text)
    if value is not None:
        return value
    try:
        rendered = core.trtp_expr(str(text))
    except GraphError as e:
        raise PluginError(f"{where}: {text!r} cannot be expressed in TensorRT's shape arithmetic: {e}") from None
    funcs = {name: getattr(trtp, name) for name in _CALLS}

    def walk(n: ast.AST) -> Any:
        if isinstance(n, ast.Expression):
            return walk(n.body)
        if isinstance(n, ast.Constant) and type(n.value) is int:
            return int(n.value)
        if isinstance(n, ast.Name):
            if n.id not in scope:
                raise PluginError(f"{where}: {text!r} mentions {n.id}, which is not an input dimension of the plugin")
            return scope[n.id]
        if isinstance(n, ast.BinOp) and type(n.op) in _BINOPS:
            return _BINOPS[type(n.op)](walk(n.left), walk(n.right))
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and isinstance(n.func.value, ast.Name)
            and n.func.value.id == "trtp"
            and n.func.attr in funcs
            and not n.keywords
        ):
            return funcs[n.func.attr](*(walk(a) for a in n.args))
        raise PluginError(f"{where}: unexpected element {ast.dump(n)[:60]} in the TensorRT form of {text!r}")

    return walk(ast.parse(rendered, mode="eval"))
