"""A copy of an fx graph, node for node, as ``copy.deepcopy(graph)`` makes it but cheaper.

``Graph.create_node`` re-checks every argument of every call (a pytree walk looking for raw
symbolic values, on recent torch), which on a model-sized graph costs more than the rest of
the rewrite; a copy of a graph that already holds those arguments learns nothing from it. So
the nodes are built the way ``create_node`` builds them, minus that check: a fresh graph has no
owning module, hence no node hooks to run. Node names stay the same, even one that shadows a
Python builtin (``input``, the argument of every ``nn.Sequential``), which fx's copy renames
but torch.export allows and the program's signature names. The source graph's names are
unique already, so they go into the new graph's namespace as they are, without
``create_name``'s per-name parsing; only live names do (a name the source graph once used and
erased stays free, as in fx's copy).
"""

from __future__ import annotations

import copy

import torch
import torch.fx
from torch.fx.node import Node, map_arg


# The graph internals the node-by-node copy fills in; a torch without them gets fx's own copy.
_INTERNALS = ("_graph_namespace", "_find_nodes_lookup_table", "_insert", "_len", "_tracer_cls", "_codegen")
_NAMESPACE_INTERNALS = ("_obj_to_name", "_used_names")


def _fx_copy(g: torch.fx.Graph) -> torch.fx.Graph:
    new = copy.deepcopy(g)
    for old, n in zip(g.nodes, new.nodes):
        if n.name != old.name:  # fx renamed a name that shadows a builtin
            n.name = old.name
            new._graph_namespace._rename_object(n, old.name)
    return new


def copy_graph(g: torch.fx.Graph) -> torch.fx.Graph:
    new = torch.fx.Graph(tracer_cls=getattr(g, "_tracer_cls", None))
    if not all(hasattr(new, a) for a in _INTERNALS) or not all(hasattr(new._graph_namespace, a) for a in _NAMESPACE_INTERNALS):
        return _fx_copy(g)
    names = new._graph_namespace
    obj_to_name, used = names._obj_to_name, names._used_names
    # The lookup table's own key, inlined (`_FindNodesLookupTable._key`) where its layout is the
    # known one.
    table = new._find_nodes_lookup_table
    rows = getattr(table, "table", None)
    insert = new._insert
    env: dict[Node, Node] = {}
    lookup = env.__getitem__
    for n in g.nodes:
        args = map_arg(n.args, lookup)
        kwargs = map_arg(n.kwargs, lookup)
        name = n.name
        node = Node(new, name, n.op, n.target, args, kwargs, n.type)
        used.add(name)
        obj_to_name[node] = name
        # A new node's meta is a fresh empty dict: filling it costs no setattr, which would
        # also look the node up in the graph's lookup table.
        node.meta.update(n.meta)
        insert(node)
        if rows is not None:
            rows[(node.op, node.target if node.op == "call_function" else None)][node] = None
        else:
            table.insert(node)
        new._len += 1
        env[n] = node
    new._codegen = copy.deepcopy(g._codegen)
    return new
