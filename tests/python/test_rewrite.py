"""End to end on CPU: export models with regions, rewrite, and compare with the original."""

import re
import sys

import models
import pytest
import torch

import tta
from tta.runtime import ops

VALID = ["residual_add_relu", "transformer_rmsnorm", "loop12", "dynamic_batch", "multi_output", "shared_output"]
EXPECTED_OUTLINED = {
    "residual_add_relu": 1,
    "transformer_rmsnorm": 3,
    "loop12": 12,
    "dynamic_batch": 3,
    "multi_output": 1,
    "shared_output": 1,
}


def export(name, strict=False, decompose=True):
    model = models.build(name)
    ep = torch.export.export(model, models.example_inputs(name), dynamic_shapes=models.dynamic_shapes(name), strict=strict)
    return model, (ep.run_decompositions() if decompose else ep)


def tta_nodes(gm):
    return [n for n in gm.graph.nodes if n.op == "call_function" and getattr(n.target, "namespace", None) == "tta"]


@pytest.mark.parametrize("strict", [False, True], ids=["nonstrict", "strict"])
@pytest.mark.parametrize("name", VALID)
def test_rewritten_program_matches_original(name, strict):
    model, ep = export(name, strict=strict)
    res = tta.rewrite(ep)
    assert len(res.outlined) == EXPECTED_OUTLINED[name], str(res)
    assert not res.refused, str(res)
    gm = res.program.module()
    assert len(tta_nodes(res.program.graph_module)) == EXPECTED_OUTLINED[name]
    inputs = models.example_inputs(name)
    torch.testing.assert_close(gm(*inputs), model(*inputs))


def test_dynamic_dim_two_sizes_one_program():
    model, ep = export("dynamic_batch")
    gm = tta.rewrite(ep).program.module()
    for batch in (3, 11):
        inputs = models.example_inputs("dynamic_batch", batch=batch)
        torch.testing.assert_close(gm(*inputs), model(*inputs))


def test_loop_makes_distinct_regions_sharing_one_op():
    _, ep = export("loop12")
    res = tta.rewrite(ep)
    assert len({r.id for r in res.regions}) == 12
    assert len({r.op for r in res.regions}) == 1
    assert len({r.node for r in res.regions}) == 12


def test_region_output_used_by_two_consumers_and_graph_output():
    model, ep = export("shared_output")
    res = tta.rewrite(ep)
    (node,) = tta_nodes(res.program.graph_module)
    users = {u.name for u in node.users}
    assert len(users) == 3 and "output" in users, users
    out_spec = res.program.graph_signature.output_specs[0]
    assert out_spec.arg.name == node.name
    inputs = models.example_inputs("shared_output")
    for a, b in zip(res.program.module()(*inputs), model(*inputs)):
        torch.testing.assert_close(a, b)


def test_rewrite_does_not_modify_the_given_program():
    _, ep = export("residual_add_relu")
    before = str(ep.graph)
    tta.rewrite(ep)
    assert str(ep.graph) == before


def test_op_schema_and_fake_impl():
    _, ep = export("multi_output")
    res = tta.rewrite(ep)
    (node,) = tta_nodes(res.program.graph_module)
    schema = str(node.target._schema)
    assert re.search(r"\(Tensor x0, Tensor x1\) -> \(Tensor, Tensor\)", schema), schema
    with torch._subclasses.FakeTensorMode():
        a, b = torch.empty(5, 16), torch.empty(5, 16)
        s, p = node.target(a, b)
        assert s.shape == (5, 16) and p.shape == (5, 16)


def test_graph_module_input_is_rewritten_in_place():
    model, ep = export("residual_add_relu")
    gm = ep.module()
    res = tta.rewrite(gm)
    assert res.program is gm and len(tta_nodes(gm)) == 1
    inputs = models.example_inputs("residual_add_relu")
    torch.testing.assert_close(gm(*inputs), model(*inputs))


@pytest.mark.parametrize("failure", ["registering an op", "the check"])
def test_a_failed_rewrite_leaves_the_graph_module_as_it_was(monkeypatch, failure):
    # Three regions: the failure comes after the first region's edit.
    model, ep = export("transformer_rmsnorm")
    gm = ep.module()
    before_code, before_nodes = gm.code, [(n.name, n.op, n.target, n.args) for n in gm.graph.nodes]
    rw = sys.modules["tta.fx.pipeline"]
    if failure == "registering an op":
        real_ensure = ops.ensure_op
        calls = []

        def failing_ensure(*args, **kwargs):
            calls.append(args[0])
            if len(calls) == 2:
                raise RuntimeError("registration failed")
            return real_ensure(*args, **kwargs)

        monkeypatch.setattr(rw.ops, "ensure_op", failing_ensure)
        with pytest.raises(RuntimeError, match="registration failed"):
            tta.rewrite(gm)
        assert len(calls) == 2
    else:
        real_apply = rw._apply

        def reordering_apply(g, *args):
            result = real_apply(g, *args)
            # The edits happened; now a new node moves somewhere wrong.
            call = next(n for n in g.nodes if getattr(n.target, "namespace", None) == "tta")
            [n for n in g.nodes if n.op == "placeholder"][-1].append(call)
            return result

        monkeypatch.setattr(rw, "_apply", reordering_apply)
        with pytest.raises(tta.GraphError) as err:
            tta.rewrite(gm)
        assert err.value.kind == "mismatch"
    assert gm.code == before_code
    assert [(n.name, n.op, n.target, n.args) for n in gm.graph.nodes] == before_nodes
    inputs = models.example_inputs("transformer_rmsnorm")
    torch.testing.assert_close(gm(*inputs), model(*inputs))


def _interleaved_region():
    """A GraphModule whose region {a, c} has an outside reader of `a` between its members:
    the plugin node takes `c`'s place, so that reader moves after it (a move to undo)."""
    from tta.declare.annotate import TAG_PREFIX

    plugin = tta.custom_plugin(name="interleaved", meta_impl=lambda x: (x.new_empty(x.shape), x.new_empty(x.shape)))
    aten = torch.ops.aten
    g = torch.fx.Graph()
    x = g.placeholder("x")
    tag = {TAG_PREFIX + "il:0": {"impl": plugin.key, "source": "m.py:1"}}
    a = g.call_function(aten.relu.default, (x,))
    b = g.call_function(aten.neg.default, (a,))
    c = g.call_function(aten.add.Tensor, (a, x))
    for n in (a, c):
        n.meta["custom"] = tag
    g.output((b, c))
    val = torch.empty(4, 4)
    with torch._subclasses.FakeTensorMode() as mode:
        fake = mode.from_tensor(val)
        for n in (x, a, b, c):
            n.meta["val"] = fake
    gm = torch.fx.GraphModule(torch.nn.Module(), g)
    return gm, (val.uniform_(-1, 1),)


def _state(gm):
    return gm.code, [(n.name, n.op, n.target, n.args, n.kwargs) for n in gm.graph.nodes]


def test_a_graph_module_edited_in_place_is_restored_when_a_later_step_fails(monkeypatch):
    # New nodes, a rewired reader and a moved node are all undone, and a second rewrite (whose
    # names fx saw given once already) succeeds.
    gm, inputs = _interleaved_region()
    want, before = gm(*inputs), _state(gm)
    rw = sys.modules["tta.fx.pipeline"]
    real_apply = rw._apply
    applied = []

    def failing_apply(g, nodes, root, edits, moves, *args):
        real_apply(g, nodes, root, edits, moves, *args)
        applied.append(len(moves))
        raise RuntimeError("a later step failed")

    monkeypatch.setattr(rw, "_apply", failing_apply)
    with pytest.raises(RuntimeError, match="a later step failed"):
        tta.rewrite(gm)
    assert applied and applied[0] >= 1  # the reader of `a` moved
    assert _state(gm) == before
    monkeypatch.undo()

    res = tta.rewrite(gm)
    assert res.program is gm and [n.name for n in tta_nodes(gm)] == [res.outlined[0].node]
    order = [n.name for n in gm.graph.nodes]
    neg = next(n for n in gm.graph.nodes if n.name == "neg_default")
    assert neg.args[0].args[0] is tta_nodes(gm)[0] and order.index("neg_default") > order.index(neg.args[0].name)  # moved
    torch.testing.assert_close(gm(*inputs), want)


def test_a_graph_module_gives_its_new_node_the_name_the_pass_chose_even_if_an_erased_node_had_it():
    gm, inputs = _interleaved_region()
    want = gm(*inputs)
    name = tta.find_regions(gm)[0].id  # the region exists; its node's name comes from the report
    res = tta.rewrite(_interleaved_region()[0])
    taken = res.outlined[0].node
    with gm.graph.inserting_after(next(iter(gm.graph.nodes))):
        ghost = gm.graph.call_function(torch.ops.aten.relu.default, (next(iter(gm.graph.nodes)),))
    ghost.name = taken
    gm.graph._graph_namespace._rename_object(ghost, taken)
    gm.graph.erase_node(ghost)
    assert name and taken in gm.graph._graph_namespace._used_names
    res = tta.rewrite(gm)
    assert [n.name for n in tta_nodes(gm)] == [taken] == [res.outlined[0].node]
    torch.testing.assert_close(gm(*inputs), want)


def test_threads_rewriting_one_graph_module_take_turns():
    import threading

    gm, inputs = _interleaved_region()
    want = gm(*inputs)
    results, errors = [], []

    def work():
        try:
            results.append(len(tta.rewrite(gm).outlined))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and sorted(results) == [0, 0, 0, 1]
    assert len(tta_nodes(gm)) == 1
    torch.testing.assert_close(gm(*inputs), want)


def test_decorator_form_tags_every_call():
    plugin = tta.custom_plugin(name="decorated_add", meta_impl=lambda x: x.new_empty(x.shape))

    @tta.lower_as(plugin)
    def add_two(x):
        return x + 2

    class M(torch.nn.Module):
        def forward(self, x):
            return add_two(add_two(x) * 3)

    x = torch.randn(4, 4)
    res = tta.rewrite(torch.export.export(M(), (x,)))
    assert len(res.outlined) == 2
    torch.testing.assert_close(res.program.module()(x), M()(x))


def test_nested_lower_as_names_both_lines():
    model = models.build("nested")
    with pytest.raises(tta.AnnotationError) as err:
        torch.export.export(model, models.example_inputs("nested"))
    msg = str(err.value)
    lines = re.findall(r"models\.py:(\d+)", msg)
    assert len(set(lines)) == 2, msg


def test_nested_under_strict_export_refuses_both_regions():
    _, ep = export("nested", strict=True)
    res = tta.rewrite(ep, on_refused="keep")
    assert len(res.refused) == 2 and not res.outlined
    for r in res.refused:
        assert "may not nest or overlap" in r.reason


def test_inplace_op_is_refused_with_its_source_line():
    _, ep = export("inplace", decompose=False)
    res = tta.rewrite(ep, on_refused="keep")
    (r,) = res.refused
    assert "mul_" in r.reason and "writes its input in place" in r.reason
    assert re.search(r"models\.py:\d+", r.reason), r.reason
    # Nothing is lost: the refused region's nodes are all still there.
    names = {n.name for n in res.program.graph.nodes}
    assert set(r.nodes) <= names


def test_declared_mutation_is_outlined_with_a_mutable_schema():
    plugin = tta.custom_plugin(name="scale_in_place", mutates=True)

    class M(torch.nn.Module):
        def forward(self, x):
            h = x * 2
            with tta.lower_as(plugin):
                h.mul_(3)
                z = h + 1
            return z

    x = torch.randn(3, 5)
    res = tta.rewrite(torch.export.export(M(), (x,)), on_refused="keep")
    (node,) = tta_nodes(res.program.graph_module)
    assert "Tensor(a0!)" in str(node.target._schema)
    torch.testing.assert_close(res.program.module()(x), M()(x))


def test_meta_impl_disagreeing_with_region_is_refused():
    wrong = tta.custom_plugin(name="wrong_meta", meta_impl=lambda x, y: x.new_empty(x.shape[0], 1))

    class M(torch.nn.Module):
        def forward(self, x, y):
            with tta.lower_as(wrong):
                return torch.relu(x + y)

    x = torch.randn(4, 8)
    res = tta.rewrite(torch.export.export(M(), (x, torch.randn(4, 8))), on_refused="keep")
    (r,) = res.refused
    assert "meta_impl output 0 has shape [4, 1]" in r.reason, r.reason


def test_meta_impl_that_raises_is_reported():
    def broken(x, y):
        raise ValueError("nope")

    plugin = tta.custom_plugin(name="broken_meta", meta_impl=broken)

    class M(torch.nn.Module):
        def forward(self, x, y):
            with tta.lower_as(plugin):
                return x * y

    x = torch.randn(4, 8)
    (r,) = tta.rewrite(torch.export.export(M(), (x, torch.randn(4, 8))), on_refused="keep").refused
    assert "ValueError: nope" in r.reason


def test_meta_arity_mismatch_is_refused():
    plugin = tta.custom_plugin(name="one_input", meta_impl=lambda x: x.new_empty(x.shape))

    class M(torch.nn.Module):
        def forward(self, x, y):
            with tta.lower_as(plugin):
                return x * y

    x = torch.randn(4, 8)
    (r,) = tta.rewrite(torch.export.export(M(), (x, torch.randn(4, 8))), on_refused="keep").refused
    assert "takes 1 input(s) but the region reads 2" in r.reason


def test_region_reading_a_tuple_is_refused_with_a_hint():
    plugin = tta.custom_plugin(name="needs_tuple")

    class M(torch.nn.Module):
        def forward(self, x):
            parts = torch.ops.aten.var_mean.correction(x, [1], correction=0, keepdim=True)
            with tta.lower_as(plugin):
                return x - parts[1]

    x = torch.randn(4, 8)
    res = tta.rewrite(torch.export.export(M(), (x,)), on_refused="keep")
    assert res.outlined or "tuple" in res.refused[0].reason


def test_op_names_are_deterministic_across_processes():
    import subprocess
    import sys

    code = (
        "import sys; sys.path.insert(0, %r); import models, torch, tta;"
        "ep = torch.export.export(models.build('transformer_rmsnorm'), models.example_inputs('transformer_rmsnorm')).run_decompositions();"
        "print(sorted({r.op for r in tta.rewrite(ep).regions}))"
    ) % models.__file__.rsplit("/", 1)[0]
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout for _ in range(2)]
    assert runs[0] == runs[1] and "rmsnorm_" in runs[0]


def test_body_fallback_is_registered_and_runs():
    _, ep = export("residual_add_relu")
    res = tta.rewrite(ep)
    op = res.regions[0].op
    body = ops.body_of(op)
    x, y = torch.randn(3, 16), torch.randn(3, 16)
    torch.testing.assert_close(body(x, y), torch.relu(x + y))


def test_unregistered_impl_key_is_refused():
    _, ep = export("residual_add_relu")
    for n in ep.graph.nodes:
        for k in list(n.meta.get("custom", {})):
            if k.startswith("tta_region:"):
                n.meta["custom"][k] = {"impl": "ghost@0000000000", "source": None}
    (r,) = tta.rewrite(ep, on_refused="keep").refused
    assert "ghost@0000000000" in r.reason and "not registered" in r.reason


@pytest.mark.parametrize("mode", [True, "full"], ids=["delta", "full"])
@pytest.mark.parametrize("corruption", ["rewire", "reorder", "untouched-node"])
def test_check_catches_a_wrong_apply(monkeypatch, mode, corruption):
    rw = sys.modules["tta.fx.pipeline"]
    real_apply = rw._apply

    def bad_apply(g, *args):
        result = real_apply(g, *args)
        call = [n for n in g.nodes if getattr(n.target, "namespace", None) == "tta" and len(n.args) == 2][-1]
        if corruption == "rewire":  # the new node reads the wrong input
            call.args = (call.args[1], call.args[0])
        elif corruption == "reorder":  # the new node moves
            last_placeholder = [n for n in g.nodes if n.op == "placeholder"][-1]
            last_placeholder.append(call)
        else:  # a node the pass did not touch changes
            other = next(n for n in g.nodes if n.op == "call_function" and n is not call)
            other.args = tuple(other.args)
            other.kwargs = {**other.kwargs, "alpha": 2}
        return result

    monkeypatch.setattr(rw, "_apply", bad_apply)
    _, ep = export("transformer_rmsnorm")
    with pytest.raises(tta.GraphError) as err:
        tta.rewrite(ep, check=mode)
    assert err.value.kind == "mismatch", str(err.value)
