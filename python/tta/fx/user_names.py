"""The names the user gave what a graph holds, for messages: a value by the variable its source
line assigns it to (``scaled = x * s`` names ``mul`` ``scaled``), a size by the ``Dim`` the
user exported it with (``b`` for ``Dim("b")``, which export calls ``s77``)."""

from __future__ import annotations

import re
from typing import Any, Sequence

import torch
import torch.fx

# ``name = ...`` or ``name: T = ...``, not ``==``, ``+=``, ``a, b = ...`` or ``self.x = ...``.
_ASSIGNED = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?::[^=]+)?=(?!=)")


def _code_line(node: torch.fx.Node) -> str | None:
    trace = node.meta.get("stack_trace")
    if not trace:
        return None
    lines = [ln for ln in trace.rstrip().splitlines() if ln.strip()]
    return lines[-1] if lines and not lines[-1].lstrip().startswith("File ") else None


def value_name(node: torch.fx.Node) -> str | None:
    """The variable the node's source line assigns it to, when the node is what that line
    computes last (no reader of it comes from the same line), else None."""
    line = _code_line(node)
    if line and (";" in line or line.rstrip().endswith((",", "(", "[", "{", "\\"))):
        return None  # several statements, or a line inside a call (`scale=x * s,` is a keyword)
    m = _ASSIGNED.match(line) if line else None
    if m is None:
        return None
    trace = node.meta.get("stack_trace")
    if any(u.meta.get("stack_trace") == trace for u in node.users):
        return None  # an intermediate of the line: the name belongs to what reads it
    return m.group(1)


def output_names(nodes: Sequence[torch.fx.Node]) -> list[str]:
    """Each node by its user name where it has one and no other node of ``nodes`` has the same,
    else by its node name."""
    names = [value_name(n) or n.name for n in nodes]
    return [name if names.count(name) == 1 else n.name for name, n in zip(names, nodes)]


def dim_names(program: Any) -> dict[str, str]:
    """``{"s77": "b"}``: each size symbol of the program's inputs that the user named with a
    ``Dim``, from the shape environment of its fake tensors (export's debug names)."""
    graph = getattr(program, "graph", None)
    env = None
    for n in getattr(graph, "nodes", ()):
        if n.op != "placeholder":
            continue
        v = n.meta.get("val")
        sym = next((d for d in getattr(v, "shape", ()) if isinstance(d, torch.SymInt)), None)
        if sym is not None:
            env = sym.node.shape_env
            break
    debug = getattr(env, "source_name_to_debug_name", None) or {}
    out: dict[str, str] = {}
    for sym, sources in (getattr(env, "var_to_sources", None) or {}).items():
        for src in sources:
            name = src.name if isinstance(src.name, str) else src.name()
            if name in debug:
                out[str(sym)] = debug[name]
                break
    return out
