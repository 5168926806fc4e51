"""Region markers: one ``tta_marker::region`` node per ``lower_as`` entry, carrying the region's
id, impl, source line and the inputs the user listed, and one ``tta_marker::outputs`` node per
entry whose output order the user chose (``outputs=``, or a decorated function's return).

Tags on the ops a region traces (``annotate.py``) say which nodes it holds; they cannot say that
a region traced nothing, that it landed in a ``torch.cond`` branch (a subgraph the pass does
not outline), or in which order the user wants its inputs. The marker is a real node, declared
side-effecting so that export and ``run_decompositions`` keep it although nothing reads it, and
``tta.rewrite`` takes every marker out of the graph before anything else looks at it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.fx

from ..common.source import first_user_frame

NAMESPACE = "tta_marker"
# The key of a region tag in node.meta["custom"] (``annotate.py`` writes it): TAG_PREFIX + id.
TAG_PREFIX = "tta_region:"

_lib = torch.library.Library(NAMESPACE, "FRAGMENT")  # kept alive for the whole process
_lib.define("region(str id, str impl, str source, Tensor[] inputs) -> ()")
# Left when the region exits, on its outputs. ``exact``: the user listed them (lower_as(outputs=
# ...)), and they must be the region's outputs; else a decorated function returned them.
_lib.define("outputs(str id, bool exact, Tensor[] outputs) -> ()")


def _nothing(*args):
    return None


for _name in ("region", "outputs"):
    _lib.impl(_name, _nothing, "CompositeExplicitAutograd")
    torch.library.register_fake(f"{NAMESPACE}::{_name}", _nothing, lib=_lib)
REGION = torch.ops.tta_marker.region.default
OUTPUTS = torch.ops.tta_marker.outputs.default
TARGET = "tta_marker.region.default"  # its name in graph JSON
TARGETS = (TARGET, "tta_marker.outputs.default")
torch.fx.node.has_side_effect(REGION)
torch.fx.node.has_side_effect(OUTPUTS)
_KINDS = (REGION, OUTPUTS)


def mark(rid: str, impl: str, source: str | None, inputs) -> None:
    """Leave the marker of one region entry in whatever is being traced."""
    REGION(rid, impl, source or "", list(inputs))


def mark_outputs(rid: str, outputs, exact: bool) -> None:
    """Leave the order of one region entry's outputs (``exact``: from ``lower_as(outputs=...)``)."""
    OUTPUTS(rid, exact, list(outputs))


@dataclass
class Marker:
    id: str
    impl: str
    source: str | None
    inputs: list[str]
    # Where the marker sat when not in the top-level graph: the submodule path of the subgraph.
    subgraph: str | None = None
    # The outputs' order, by node name, when the user chose it; ``exact``: listed by outputs=
    # (every output, nothing else), else returned by a decorated function.
    outputs: list[str] | None = None
    exact: bool = False


def _read(nodes, subgraph: str | None) -> list[Marker]:
    found: dict[str, Marker] = {}
    orders = []
    for n in nodes:
        if n.target is OUTPUTS:
            orders.append(n)
            continue
        rid, impl, source, inputs = n.args
        # Under strict export the `with` line is not known at trace time; the marker's stack is.
        source = source or first_user_frame(n.meta.get("stack_trace"))
        found[rid] = Marker(rid, impl, source, [i.name for i in inputs], subgraph)
    for n in orders:
        rid, exact, outputs = n.args
        m = found.get(rid)
        if m is not None:
            m.outputs, m.exact = [o.name for o in outputs], bool(exact)
    return list(found.values())


def declared(found: list[Marker]) -> dict[str, dict]:
    """Region declarations the markers add to or complete (``docs/graph-format.md``)."""
    out = {}
    for m in found:
        decl = {"impl": m.impl}
        if m.source:
            decl["source"] = m.source
        if m.inputs:
            decl["inputs"] = m.inputs
        if m.outputs is not None:
            decl["outputs" if m.exact else "returns"] = m.outputs
        out[m.id] = decl
    return out


def drop_from_doc(doc: dict) -> None:
    """Take markers out of an already serialized graph (for callers that only inspect it)."""
    doc["nodes"] = [n for n in doc["nodes"] if n.get("target") not in TARGETS]


def _in(g: torch.fx.Graph) -> list[torch.fx.Node]:
    """The markers of ``g``, in graph order."""
    found = [n for t in _KINDS for n in g.find_nodes(op="call_function", target=t)]
    if len(found) > 1:
        order = {n: i for i, n in enumerate(g.nodes)}
        found.sort(key=order.__getitem__)
    return found


def present(g: torch.fx.Graph) -> bool:
    """Whether ``g`` has markers (``take`` would change it)."""
    return any(g.find_nodes(op="call_function", target=t) for t in _KINDS)


def find(g: torch.fx.Graph, root: torch.nn.Module) -> tuple[list[Marker], list[Marker]]:
    """The markers of ``g``, and those in subgraphs of ``root`` (branches of ``torch.cond`` and
    other higher-order ops). Changes nothing."""
    top = _read(_in(g), None)
    nested = []
    for path, mod in root.named_modules():
        if path and isinstance(mod, torch.fx.GraphModule):
            nested.extend(_read([n for n in mod.graph.nodes if n.op == "call_function" and n.target in _KINDS], path))
    return top, nested


def take(g: torch.fx.Graph, root: torch.nn.Module) -> tuple[list[Marker], list[Marker]]:
    """``find``, then erase the markers from ``g`` (those in subgraphs stay where they are)."""
    found = find(g, root)
    # The outputs markers read region outputs: erased first (last in graph order first).
    for n in reversed(_in(g)):
        g.erase_node(n)
    return found
