"""What one call site of a ``tta.custom_op`` op gives its plugin: the input types from the
site's fake tensors and the attribute values typed as the schema types them."""

from __future__ import annotations

from typing import Any, Sequence

import torch

from ..aot.session import TensorType
from ..common.dtypes import dtype_name
from . import custom_op_schema


def input_metas(values: Sequence[Any]) -> list[TensorType]:
    """Plugin input types from a call site's fake tensors: static dims stay static; a dim equal
    to an earlier one (the same symbolic size), or an expression over earlier dims (``2*s0``),
    says so (``"i0_1"``, ``"2*i0_1"``), so that checks the fake impl makes on them hold; other
    dims get their own symbol."""
    import sympy

    from ..aot.base import input_symbol

    seen: dict[Any, str] = {}
    names: dict[Any, sympy.Symbol] = {}  # export symbol -> the i{k}_{j} it first appeared as
    out = []
    for k, v in enumerate(values):
        dims: list[int | str | None] = []
        for j, d in enumerate(v.shape):
            if isinstance(d, int) or (isinstance(d, torch.SymInt) and d.node.expr.is_number):
                dims.append(int(d))
                continue
            expr = d.node.expr
            if expr in seen:
                dims.append(seen[expr])
            elif expr.free_symbols and expr.free_symbols <= set(names):
                dims.append(str(expr.xreplace(names)))
            else:
                seen[expr] = input_symbol(k, j)
                if isinstance(expr, sympy.Symbol):
                    names[expr] = sympy.Symbol(seen[expr], integer=True, positive=True)
                dims.append(None)
        out.append(TensorType(dtype_name(v.dtype), tuple(dims)))
    return out


def coerce(arg: custom_op_schema.OpArg, value: Any) -> Any:
    """A call site's value as the schema types it (an int given to a float argument is a
    float), so the kernel it selects is the one ``aot_impl`` sees."""
    a = arg.attribute
    if a.type is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if a.type is list:
        return [float(x) if a.item is float else x for x in value]
    return value
