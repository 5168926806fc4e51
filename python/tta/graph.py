"""torch.fx graph -> graph JSON (docs/graph-format.md), the input of the Rust pass.

Written for speed: 100k-node graphs serialize in well under a second. Per-target facts (the
qualified name, which arguments the op writes, whether it returns a view) are computed once
per target; stack traces are parsed once per distinct string.
"""

from __future__ import annotations

import json
import math
import os
import re
from typing import Any

import torch
import torch.fx

from .annotate import TAG_PREFIX

FORMAT = "tta-graph"
VERSION = 1

_FRAME = re.compile(r'File "([^"]+)", line (\d+)')
_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_TTA_DIR = os.path.dirname(__file__) + os.sep


def target_name(target: Any) -> str:
    """Qualified name of a node target: ``aten.add.Tensor``, ``_operator.getitem``, ..."""
    if isinstance(target, str):
        return target
    if isinstance(target, torch._ops.OpOverload):
        ns, rest = target.name().split("::", 1)
        name, _, overload = rest.partition(".")
        return f"{ns}.{name}.{overload or 'default'}"
    if isinstance(target, torch._ops.HigherOrderOperator):
        return f"higher_order.{target.name()}"
    module = getattr(target, "__module__", None) or "builtins"
    return f"{module}.{getattr(target, '__qualname__', getattr(target, '__name__', repr(target)))}"


def _schema_effects(target: Any) -> tuple[list[str], bool]:
    """(arguments the op writes, whether an output aliases an input) from the op schema."""
    schema = getattr(target, "_schema", None)
    if schema is None:
        return [], False
    writes = []
    for i, a in enumerate(schema.arguments):
        if a.alias_info is not None and a.alias_info.is_write:
            writes.append(a.name if a.kwarg_only else str(i))
    aliases = any(r.alias_info is not None for r in schema.returns)
    return writes, aliases


def first_user_frame(stack_trace: str | None, _cache: dict = {}) -> str | None:
    """Innermost frame of the stack trace that is not torch's or tta's code, as ``file:line``."""
    if not stack_trace:
        return None
    hit = _cache.get(stack_trace)
    if hit is None and stack_trace not in _cache:
        for m in reversed(list(_FRAME.finditer(stack_trace))):
            path = m.group(1)
            if not path.startswith((_TORCH_DIR, _TTA_DIR)):
                hit = f"{path}:{m.group(2)}"
                break
        _cache[stack_trace] = hit
    return hit


def _dtype(d: torch.dtype) -> str:
    return str(d)[6:]  # "torch.float32" -> "float32"


def _dim(d) -> int | str:
    if isinstance(d, int):
        return d
    expr = d.node.expr
    return int(expr) if expr.is_number else str(expr)


def encode_value(v: Any) -> Any:
    """``node.meta["val"]`` -> JSON."""
    if isinstance(v, torch.Tensor):
        out = {"dtype": _dtype(v.dtype), "shape": [_dim(d) for d in v.shape]}
        if v.layout == torch.strided:
            out["stride"] = [_dim(s) for s in v.stride()]
        return out
    if v is None or isinstance(v, (bool, str)):
        return v if not isinstance(v, str) else {"opaque": v}
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else {"float": _special(v)}
    if isinstance(v, (list, tuple)):
        return [encode_value(x) for x in v]
    if isinstance(v, torch.SymInt):
        d = _dim(v)
        return d if isinstance(d, int) else {"sym": d}
    return {"opaque": type(v).__name__}


def _special(x: float) -> str:
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")


def encode_arg(a: Any) -> Any:
    """A node argument -> JSON."""
    if isinstance(a, torch.fx.Node):
        return {"ref": a.name}
    if a is None or isinstance(a, (bool, int, str)):
        return a
    if isinstance(a, float):
        return a if math.isfinite(a) else {"float": _special(a)}
    if isinstance(a, (list, tuple)):
        return [encode_arg(x) for x in a]
    if isinstance(a, torch.dtype):
        return {"dtype": _dtype(a)}
    if isinstance(a, torch.device):
        return {"device": str(a)}
    if isinstance(a, torch.layout):
        return {"layout": str(a)[6:]}
    if isinstance(a, torch.memory_format):
        return {"memory_format": str(a)[6:]}
    if isinstance(a, slice):
        return {"slice": [encode_arg(a.start), encode_arg(a.stop), encode_arg(a.step)]}
    return {"opaque": repr(a)[:200]}


def _module_type(t: Any) -> str:
    if isinstance(t, str):
        return t
    return f"{t.__module__}.{t.__qualname__}"


class _TargetInfo:
    __slots__ = ("name", "writes", "aliases")

    def __init__(self, target: Any):
        self.name = target_name(target)
        self.writes, self.aliases = _schema_effects(target)


def graph_to_dict(graph: torch.fx.Graph) -> dict:
    """The graph as a JSON-ready dict."""
    infos: dict[Any, _TargetInfo] = {}
    regions: dict[str, dict] = {}
    nodes = []
    stack_cache: dict[int, tuple[dict, list]] = {}
    for n in graph.nodes:
        op = n.op
        if op in ("call_function", "call_method", "call_module", "get_attr"):
            info = infos.get(n.target)
            if info is None:
                try:
                    info = infos[n.target] = _TargetInfo(n.target)
                except TypeError:  # unhashable target
                    info = _TargetInfo(n.target)
            d = {"name": n.name, "op": op, "target": info.name}
        else:
            info = None
            d = {"name": n.name, "op": op, "target": n.target if op == "placeholder" else "output"}
        if n.args:
            d["args"] = [encode_arg(a) for a in n.args]
        if n.kwargs:
            d["kwargs"] = {k: encode_arg(v) for k, v in n.kwargs.items()}
        meta = n.meta
        val = meta.get("val")
        if val is not None:
            d["val"] = encode_value(val)
        custom = meta.get("custom")
        if custom:
            tags = [k[len(TAG_PREFIX):] for k in custom if k.startswith(TAG_PREFIX)]
            if tags:
                d["regions"] = tags
                for t in tags:
                    if t not in regions:
                        decl = custom[TAG_PREFIX + t]
                        regions[t] = {"impl": decl["impl"]} if decl.get("source") is None else dict(decl)
        stack = meta.get("nn_module_stack")
        if stack:
            key = id(stack)
            cached = stack_cache.get(key)
            if cached is None or cached[0] is not stack:
                entries = [{"path": p, "type": _module_type(t)} for p, t in stack.values()]
                cached = stack_cache[key] = (stack, entries)
            entries = cached[1]
            d["module"] = entries[-1]
            d["module_stack"] = entries
        src = first_user_frame(meta.get("stack_trace"))
        if src is not None:
            d["source"] = src
        if info is not None:
            if info.writes:
                d["mutates"] = info.writes
            if info.aliases:
                d["aliases"] = True
        nodes.append(d)
    out = {"format": FORMAT, "version": VERSION, "nodes": nodes}
    if regions:
        out["regions"] = regions
    return out


def to_json(graph: torch.fx.Graph) -> str:
    return json.dumps(graph_to_dict(graph), separators=(",", ":"), allow_nan=False)
