"""The shortcuts ``tta.rewrite`` takes for speed give what the long way gives: meta_impls on meta
tensors (static shapes) before the program's fake mode, the verifier on the added nodes only
of a large graph, and the graph copy's namespace filled without ``create_name``."""

import copy
import importlib

import pytest
import torch
import torch.fx
from torch._export.verifier import SpecViolationError

import tta
from tta.fx import exported
from tta.fx.graph_copy import copy_graph

rewrite_module = importlib.import_module("tta.fx.pipeline")


class Deep(torch.nn.Module):
    """Forty layers and one marked region: a graph large enough for the verifier's shortcut."""

    def __init__(self, plugin, layers=40):
        super().__init__()
        self.plugin = plugin
        self.layers = torch.nn.ModuleList(torch.nn.Linear(8, 8) for _ in range(layers))

    def forward(self, x, y):
        for layer in self.layers:
            x = torch.relu(layer(x))
        with tta.lower_as(self.plugin):
            return torch.relu(x + y) * 2.0


def _plugin(name, meta_impl=lambda x, y: x.new_empty(x.shape)):
    return tta.custom_plugin(name=name, meta_impl=meta_impl)


def test_meta_impl_on_meta_tensors_agrees_with_the_fake_mode(monkeypatch):
    calls = []

    def meta(x, y):
        calls.append(x.device.type)
        return x.new_empty(x.shape[0], x.shape[1])

    x = torch.randn(4, 8)
    ep = torch.export.export(Deep(_plugin("shortcut_meta", meta), layers=1), (x, torch.randn(4, 8)))
    fast = tta.rewrite(ep)
    assert calls == ["meta"]  # static shapes: no fake mode needed
    monkeypatch.setattr(rewrite_module, "_static_metas", lambda vals: None)
    slow = tta.rewrite(ep)
    assert calls == ["meta", "cpu"]  # the fake tensors of the program say cpu
    assert [r.outputs for r in fast.regions] == [r.outputs for r in slow.regions]
    assert fast.outlined and slow.outlined


def test_meta_impl_that_needs_the_real_device_falls_back_to_the_fake_mode():
    seen = []

    def meta(x, y):
        seen.append(x.device.type)
        if x.device.type == "meta":
            raise RuntimeError("this meta_impl wants the program's device")
        return x.new_empty(x.shape)

    x = torch.randn(4, 8)
    res = tta.rewrite(torch.export.export(Deep(_plugin("device_meta", meta), layers=1), (x, torch.randn(4, 8))))
    assert seen == ["meta", "cpu"] and len(res.outlined) == 1


def test_meta_impl_on_dynamic_shapes_runs_under_the_fake_mode():
    seen = []

    def meta(x, y):
        seen.append(type(x.shape[0]).__name__)
        return x.new_empty(x.shape)

    x = torch.randn(4, 8)
    batch = torch.export.Dim("batch", min=2)
    ep = torch.export.export(Deep(_plugin("dyn_meta", meta), layers=1), (x, torch.randn(4, 8)), dynamic_shapes=({0: batch}, {0: batch}))
    res = tta.rewrite(ep)
    assert seen == ["SymInt"] and len(res.outlined) == 1
    assert isinstance(res.outlined[0].outputs[0].shape[0], str)  # the batch symbol, not a number


def test_guards_code_kept_when_no_meta_impl_ran_under_the_fake_mode(monkeypatch):
    """On static shapes the meta_impls run on meta tensors, away from the program's shape
    environment: the new program keeps the original's guards code. A meta_impl run under the
    fake mode may add guards (one that branches on a size does), so then the code is generated
    again, with that guard, on every rewrite of the program."""

    def guarding(x, y):
        if x.shape[0] > 5:  # a guard on the batch symbol, taken under the program's fake mode
            return x.new_empty(x.shape)
        return x.new_empty(x.shape)

    made = []
    real = exported._guards_code
    monkeypatch.setattr(exported, "_guards_code", lambda gm: made.append(gm) or real(gm))
    x = torch.randn(8, 8)
    ep = torch.export.export(Deep(_plugin("guard_free"), layers=1), (x, torch.randn(8, 8)))
    new = tta.rewrite(ep).program
    assert not made and new._guards_code == ep._guards_code and new._guards_code is not ep._guards_code

    batch = torch.export.Dim("batch", min=2, max=64)
    ep = torch.export.export(Deep(_plugin("guarding", guarding), layers=1), (x, torch.randn(8, 8)), dynamic_shapes=({0: batch}, {0: batch}))
    before = list(ep._guards_code)
    first, second = tta.rewrite(ep).program, tta.rewrite(ep).program  # the second finds the guard there already
    assert len(made) == 2
    added = [c for c in first._guards_code if c not in before]
    assert added and "5" in added[0], first._guards_code
    assert second._guards_code == first._guards_code
    assert ep._guards_code == before  # the original program is not changed


def test_large_graph_verifies_the_added_nodes_only_and_the_result_is_valid(monkeypatch):
    x = torch.randn(4, 8)
    ep = torch.export.export(Deep(_plugin("deep_region")), (x, torch.randn(4, 8))).run_decompositions()
    checked = []
    real = torch._export.verifier.Verifier._check_graph_module

    def spy(self, gm):
        checked.append(len(gm.graph.nodes))
        return real(self, gm)

    monkeypatch.setattr(torch._export.verifier.Verifier, "_check_graph_module", spy)
    res = tta.rewrite(ep)
    assert len(res.outlined) == 1
    assert checked and max(checked) < 10, checked  # the added call and its inputs, not ~200 nodes
    checked.clear()
    res.program.validate()  # the whole program passes torch's verifier
    assert checked == [len(res.program.graph.nodes)]
    y = torch.randn(4, 8)
    torch.testing.assert_close(res.program.module()(x, y), ep.module()(x, y))


def test_an_invalid_added_node_is_caught():
    x = torch.randn(4, 8)
    ep = torch.export.export(Deep(_plugin("deep_bad")), (x, torch.randn(4, 8))).run_decompositions()
    g = copy_graph(ep.graph)
    out = next(n for n in g.nodes if n.op == "output")
    first = next(n for n in g.nodes if n.op == "placeholder" and n.name == "x")
    with g.inserting_before(out):
        bad = g.call_function(torch.ops.aten.add_.Tensor, (first, first))  # in place: not functional
    bad.meta["val"] = first.meta["val"]
    with pytest.raises(SpecViolationError, match="not functional"):
        exported.with_new_graph(ep, g, [bad])
    with pytest.raises(SpecViolationError, match="not functional"):
        exported.with_new_graph(ep, g)  # the whole graph: the same verdict


def test_the_new_program_owns_what_can_be_renamed():
    """The program ``tta.rewrite`` returns copies the original's module call graph by hand
    (entries, signatures, argument specs; the frozen pytree specs shared) and its range
    constraints: editing the new one's leaves the original as it was."""
    x = torch.randn(4, 8)
    ep = torch.export.export(
        Deep(_plugin("deep_owns")), (x, torch.randn(4, 8)), dynamic_shapes=({0: torch.export.Dim("b")}, {0: torch.export.Dim("b")})
    )
    ep = ep.run_decompositions()
    before, ranges = copy.deepcopy(ep.module_call_graph), dict(ep.range_constraints)
    new = tta.rewrite(ep).program
    assert new.module_call_graph == before and new.range_constraints == ranges and ranges
    for entry in new.module_call_graph:
        entry.fqn += ".renamed"
        sig = entry.signature
        if sig is not None:
            assert sig.in_spec is ep.module_call_graph[0].signature.in_spec  # frozen: shared
            for arg in [*sig.inputs, *sig.outputs]:
                if hasattr(arg, "name"):
                    arg.name += "_renamed"
            sig.inputs.append(torch.export.graph_signature.TensorArgument("added"))
            if sig.forward_arg_names is not None:
                sig.forward_arg_names.append("extra")
    new.range_constraints.clear()
    assert ep.module_call_graph == before and ep.range_constraints == ranges


def test_a_signature_of_unknown_fields_is_copied_in_depth():
    sig = copy.deepcopy(torch.export.export(Deep(_plugin("deep_sig")), (torch.randn(4, 8), torch.randn(4, 8))).module_call_graph[0])
    sig.signature.extra = [1]
    copied = exported._copy_call_graph([sig])[0]
    assert copied.signature.extra == [1] and copied.signature.extra is not sig.signature.extra
    assert copied.signature.in_spec is not sig.signature.in_spec  # in depth, specs too


def test_copy_keeps_erased_names_free_and_new_names_unique():
    g = torch.fx.Graph()
    x = g.placeholder("x")
    a = g.call_function(torch.ops.aten.relu.default, (x,))
    gone = g.call_function(torch.ops.aten.neg.default, (a,), name="neg_7")
    g.erase_node(gone)
    g.output((a,))
    new = copy_graph(g)
    out = next(n for n in new.nodes if n.op == "output")
    with new.inserting_before(out):
        again = new.create_node("call_function", torch.ops.aten.neg.default, (next(iter(new.nodes)),), name="neg_7")
        clash = new.create_node("call_function", torch.ops.aten.relu.default, (again,), name=a.name)
    assert again.name == "neg_7"  # erased in the source: free in the copy, as in fx's own copy
    assert clash.name != a.name and len({n.name for n in new.nodes}) == len(new.nodes)
    relu = next(n for n in new.nodes if n.name == a.name)
    relu._rename("renamed")  # the namespace knows every copied node
    assert relu.name == "renamed"


@pytest.mark.torch_independent
def test_nogc_leaves_the_objects_it_moved_collectable_and_a_callers_freeze_alone():
    import gc
    import weakref

    from tta.fx.serialize import NoGC

    class Cycle:
        pass

    assert gc.isenabled()
    with NoGC():
        assert not gc.isenabled()
        keep = [[i] for i in range(50_000)]  # enough to move: they join the oldest generation
        c = Cycle()
        c.self = c
        ref = weakref.ref(c)
        del c
    assert gc.isenabled() and gc.get_freeze_count() == 0 and gc.get_count()[0] < 1_000
    gc.collect()
    assert ref() is None, "a cycle made inside NoGC is still collected"
    del keep

    gc.freeze()  # a caller's own freeze (a server before fork): never undone
    try:
        frozen = gc.get_freeze_count()
        with NoGC():
            [[i] for i in range(50_000)]
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()
