"""A copy of an fx graph, node for node, as ``copy.deepcopy(graph)`` makes it but cheaper.

``Graph.create_node`` re-checks every argument of every call (a pytree walk looking for raw
symbolic values, on recent torch), which on a model-sized graph costs more than the rest of
the rewrite; a copy of a graph that already holds those arguments learns nothing from it. So
the nodes are built the way ``create_node`` builds them, minus that check: a fresh graph has no
owning module, hence no node hooks to run. Node names stay the same, even one that shadows a
Python builtin (``input``, the argument of every ``nn.Sequential``), which fx's copy renames
but torch.export allows and the program's signature names.
"""

from __future__ import annotations

import copy

import torch
import torch.fx
from torch.fx.node import Node, map_arg


# The graph internals the node-by-node copy fills in; a torch without them gets fx's own copy.
_INTERNALS = ("_graph_namespace", "_find_nodes_lookup_table", "_insert", "_len", "_tracer_cls", "_codegen")


def _fx_copy(g: torch.fx.Graph) -> torch.fx.Graph:
    new = copy.deepcopy(g)
    for old, n in zip(g.nodes, new.nodes):
        if n.name != old.name:  # fx renamed a name that shadows a builtin
            n.name = old.name
            new._graph_namespace._rename_object(n, old.name)
    return new


def copy_graph(g: torch.fx.Graph) -> torch.fx.Graph:
    new = torch.fx.Graph(tracer_cls=getattr(g, "_tracer_cls", None))
    if not all(hasattr(new, a) for a in _INTERNALS):
        return _fx_copy(g)
    names = new._graph_namespace
    table = new._find_nodes_lookup_table
    insert = new._insert
    env: dict[Node, Node] = {}
    lookup = env.__getitem__
    for n in g.nodes:
        args = map_arg(n.args, lookup)
        kwargs = map_arg(n.kwargs, lookup)
        name = names.create_name(n.name, None)
        node = Node(new, name, n.op, n.target, args, kwargs, n.type)
        names.associate_name_with_obj(name, node)
        if name != n.name:
            node.name = n.name
            names._rename_object(node, n.name)
        # A new node's meta is a fresh empty dict: filling it costs no setattr, which would
        # also look the node up in the graph's lookup table.
        node.meta.update(n.meta)
        insert(node)
        table.insert(node)
        new._len += 1
        env[n] = node
    new._codegen = copy.deepcopy(g._codegen)
    return new
