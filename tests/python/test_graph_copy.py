"""tta's graph copy makes what ``copy.deepcopy(graph)`` makes, node names kept."""

import copy

import pytest
import torch
import torch.fx

from tta.fx import graph_copy
from tta.fx.graph_copy import copy_graph


class Seq(torch.nn.Module):
    def forward(self, input, n: int):
        y = torch.relu(input)[: input.shape[0] // 2]
        return y.sum(dim=0, keepdim=True), torch.full((2,), float(n), device=input.device)


def _graph():
    ep = torch.export.export(Seq(), (torch.randn(6, 3), 2), dynamic_shapes=({0: torch.export.Dim.AUTO}, None))
    return ep.run_decompositions().graph


def _shape(g: torch.fx.Graph) -> list:
    names = lambda a: torch.fx.node.map_arg(a, lambda n: ("node", n.name))  # noqa: E731
    return [(n.name, n.op, n.target, n.type, repr(names(n.args)), repr(names(n.kwargs)), sorted(u.name for u in n.users)) for n in g.nodes]


@pytest.mark.parametrize("c_steps", [True, False], ids=["node-c-steps", "node-constructor"])
def test_copy_equals_deepcopy_with_names_kept(monkeypatch, c_steps):
    if c_steps:
        assert graph_copy._C_STEPS, "this torch's Node constructor is one tta does not know; the copy uses it"
    monkeypatch.setattr(graph_copy, "_C_STEPS", c_steps)
    g = _graph()
    by_name = {}
    new, ref = copy_graph(g, by_name), copy.deepcopy(g)
    assert by_name == {n.name: n for n in new.nodes}
    assert "input" in [n.name for n in new.nodes]  # fx's copy renames it; the signature names it
    for n, r in zip(new.nodes, ref.nodes):
        if n.name != r.name:
            r.name = n.name
            ref._graph_namespace._rename_object(r, n.name)
    assert _shape(new) == _shape(ref) == _shape(g)
    assert new.python_code("self").src == ref.python_code("self").src
    new.lint()
    for n, old in zip(new.nodes, g.nodes):
        assert n.meta == old.meta and n.meta is not old.meta and n.graph is new
    assert [n.name for n in new.find_nodes(op="placeholder")] == [n.name for n in g.find_nodes(op="placeholder")]
    relu = next(n for n in g.nodes if n.target is torch.ops.aten.relu.default)
    assert [n.name for n in new.find_nodes(op="call_function", target=relu.target)] == [relu.name]


def test_copy_is_independent_and_names_stay_unique():
    g = _graph()
    new = copy_graph(g)
    before = _shape(g)
    out = next(n for n in new.nodes if n.op == "output")
    with new.inserting_before(out):
        added = new.call_function(torch.ops.aten.relu.default, (next(iter(new.nodes)),))
    assert added.name not in {n.name for n in g.nodes}  # the copy's namespace knows every name
    assert len({n.name for n in new.nodes}) == len(new.nodes)
    assert _shape(g) == before


def test_a_torch_without_the_graph_internals_gets_fx_copy_with_names_kept(monkeypatch):
    from tta.fx import graph_copy

    g = _graph()
    fast = copy_graph(g)
    monkeypatch.setattr(graph_copy, "_INTERNALS", graph_copy._INTERNALS + ("_not_in_any_torch",))
    slow = copy_graph(g)
    assert slow is not g and _shape(slow) == _shape(fast) == _shape(g)
    assert "input" in [n.name for n in slow.nodes]
    slow.lint()
