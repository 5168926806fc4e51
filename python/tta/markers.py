"""Region markers: one ``tta_marker::region`` node per ``lower_as`` entry, carrying the region's
id, impl, source line and the inputs the user listed.

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

NAMESPACE = "tta_marker"

_lib = torch.library.Library(NAMESPACE, "FRAGMENT")  # kept alive for the whole process
_lib.define("region(str id, str impl, str source, Tensor[] inputs) -> ()")


def _nothing(id, impl, source, inputs):
    return None


_lib.impl("region", _nothing, "CompositeExplicitAutograd")
torch.library.register_fake(f"{NAMESPACE}::region", _nothing, lib=_lib)
REGION = torch.ops.tta_marker.region.default
TARGET = "tta_marker.region.default"  # its name in graph JSON
torch.fx.node.has_side_effect(REGION)


def mark(rid: str, impl: str, source: str | None, inputs) -> None:
    """Leave the marker of one region entry in whatever is being traced."""
    REGION(rid, impl, source or "", list(inputs))


@dataclass
class Marker:
    id: str
    impl: str
    source: str | None
    inputs: list[str]
    # Where the marker sat when not in the top-level graph: the submodule path of the subgraph.
    subgraph: str | None = None


def _read(n: torch.fx.Node, subgraph: str | None) -> Marker:
    from .graph import first_user_frame

    rid, impl, source, inputs = n.args
    # Under strict export the `with` line is not known at trace time; the marker's stack is.
    source = source or first_user_frame(n.meta.get("stack_trace"))
    return Marker(rid, impl, source, [i.name for i in inputs], subgraph)


def declared(found: list[Marker]) -> dict[str, dict]:
    """Region declarations the markers add to or complete (``docs/graph-format.md``)."""
    out = {}
    for m in found:
        decl = {"impl": m.impl}
        if m.source:
            decl["source"] = m.source
        if m.inputs:
            decl["inputs"] = m.inputs
        out[m.id] = decl
    return out


def drop_from_doc(doc: dict) -> None:
    """Take markers out of an already serialized graph (for callers that only inspect it)."""
    doc["nodes"] = [n for n in doc["nodes"] if n.get("target") != TARGET]


def present(g: torch.fx.Graph) -> bool:
    """Whether ``g`` has markers (``take`` would change it)."""
    return bool(g.find_nodes(op="call_function", target=REGION))


def find(g: torch.fx.Graph, root: torch.nn.Module) -> tuple[list[Marker], list[Marker]]:
    """The markers of ``g``, and those in subgraphs of ``root`` (branches of ``torch.cond`` and
    other higher-order ops). Changes nothing."""
    top = [_read(n, None) for n in g.find_nodes(op="call_function", target=REGION)]
    nested = []
    for path, mod in root.named_modules():
        if path and isinstance(mod, torch.fx.GraphModule):
            nested.extend(_read(n, path) for n in mod.graph.nodes if n.op == "call_function" and n.target is REGION)
    return top, nested


def take(g: torch.fx.Graph, root: torch.nn.Module) -> tuple[list[Marker], list[Marker]]:
    """``find``, then erase the markers from ``g`` (those in subgraphs stay where they are)."""
    found = find(g, root)
    for n in g.find_nodes(op="call_function", target=REGION):
        g.erase_node(n)
    return found
