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

# `Node.__init__` checks the target against the op (which the source graph's node passed
# already), then runs `_NodeBase.__init__` and `_update_args_kwargs`, both C. Where it reads
# exactly those names (torch 2.11 to 2.15), the copy calls the two C steps itself; a torch whose
# constructor does more gets the constructor.
_NODE_INIT_NAMES = {
    "callable",
    "ValueError",
    "torch",
    "typename",
    "_legal_ops",
    "AssertionError",
    "isinstance",
    "str",
    "super",
    "__init__",
    "_update_args_kwargs",
}
_NodeBase = getattr(torch._C, "_NodeBase", None)
_fx_map_arg = getattr(torch._C, "_fx_map_arg", None)
_C_STEPS = (
    _NodeBase is not None
    and _fx_map_arg is not None
    and Node.__bases__ == (_NodeBase,)
    and set(Node.__init__.__code__.co_names) <= _NODE_INIT_NAMES
)


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


def copy_graph(g: torch.fx.Graph, by_name: dict[str, Node] | None = None, codegen: bool = True) -> torch.fx.Graph:
    """The copy; ``by_name``, when given, is filled with its nodes by name (the rewrite looks
    nodes up by the names the pass uses, and a dict built here costs less than another walk).
    ``codegen=False`` leaves the copy fx's default code generator instead of a deep copy of
    ``g``'s, for a caller that sets its own (an ExportedProgram's graph gets a flat one) or
    generates no code."""
    new = torch.fx.Graph(tracer_cls=getattr(g, "_tracer_cls", None))
    if not all(hasattr(new, a) for a in _INTERNALS) or not all(hasattr(new._graph_namespace, a) for a in _NAMESPACE_INTERNALS):
        new = _fx_copy(g)
        if by_name is not None:
            by_name.update((n.name, n) for n in new.nodes)
        return new
    names = new._graph_namespace
    obj_to_name, used = names._obj_to_name, names._used_names
    # The lookup table's own key, inlined (`_FindNodesLookupTable._key`) where its layout is the
    # known one.
    table = new._find_nodes_lookup_table
    rows = getattr(table, "table", None)
    # `Graph._insert` is the root's `prepend`, which only calls the C `_prepend`.
    insert = new._root._prepend if _C_STEPS else new._insert
    # call_function rows by target identity: the row key hashes the target, a Python call for an
    # OpOverload. The source graph keeps its targets alive, so ids are not reused meanwhile.
    fn_rows: dict[int, dict] = {}
    env: dict[Node, Node] = {}
    lookup = env.__getitem__
    names_to = by_name if by_name is not None else {}
    map_args = _fx_map_arg if _C_STEPS else map_arg
    new_node, init = Node.__new__, _NodeBase.__init__ if _C_STEPS else None
    count = 0
    for n in g.nodes:
        args = map_args(n._args, lookup)
        kwargs = map_args(n._kwargs, lookup)
        name, op, target = n.name, n.op, n.target
        if init is not None:
            node = new_node(Node)
            init(node, new, name, op, target, n.type)
            node._update_args_kwargs(args, kwargs)
        else:
            node = Node(new, name, op, target, args, kwargs, n.type)
        used.add(name)
        obj_to_name[node] = name
        # A new node's meta is a fresh empty dict: filling it costs no setattr, which would
        # also look the node up in the graph's lookup table.
        node.meta.update(n.meta)
        insert(node)
        if rows is None:
            table.insert(node)
        elif op == "call_function":
            row = fn_rows.get(id(target))
            if row is None:
                row = fn_rows[id(target)] = rows[(op, target)]
            row[node] = None
        else:
            rows[(op, None)][node] = None
        count += 1
        env[n] = node
        names_to[name] = node
    new._len += count
    if codegen:
        new._codegen = copy.deepcopy(g._codegen)
    return new
