"""The fx -> JSON serializer and the Rust verifier's errors, seen from Python."""

import json
import math

import pytest
import torch
import torch.fx

import tta
from tta.common import bridge as core
from tta.fx import serialize as graph


def _gm():
    g = torch.fx.Graph()
    x = g.placeholder("x")
    v = g.call_function(torch.ops.aten.view.dtype, (x, torch.float16))
    s = g.call_function(torch.ops.aten.slice.Tensor, (x, 0, None, 4))
    f = g.call_function(torch.ops.aten.full.default, ([2, 2], -math.inf), {"device": torch.device("cpu"), "layout": torch.strided})
    c = g.call_function(torch.ops.aten.clone.default, (x,), {"memory_format": torch.contiguous_format})
    a = g.call_function(torch.ops.aten.add_.Tensor, (c, 1))
    g.output((v, s, f, a))
    return torch.fx.GraphModule(torch.nn.Module(), g)


def test_serializer_encodes_every_literal_kind():
    doc = graph.graph_to_dict(_gm().graph)
    by = {n["name"]: n for n in doc["nodes"]}
    assert by["view_dtype"]["args"] == [{"ref": "x"}, {"dtype": "float16"}]
    assert by["view_dtype"]["target"] == "aten.view.dtype" and by["view_dtype"]["aliases"] is True
    assert by["slice_tensor"]["args"] == [{"ref": "x"}, 0, None, 4]
    assert by["full_default"]["args"][1] == {"float": "-inf"}
    assert by["full_default"]["kwargs"] == {"device": {"device": "cpu"}, "layout": {"layout": "strided"}}
    assert by["clone_default"]["kwargs"] == {"memory_format": {"memory_format": "contiguous_format"}}
    assert by["add__tensor"]["mutates"] == ["0"]
    json.dumps(doc, allow_nan=False)  # strictly valid JSON


def test_rust_reads_what_python_writes_and_writes_it_back_identically():
    text = graph.to_json(_gm().graph)
    analysis = core.analyze(text, {})
    outcome = analysis.outline()
    outcome.check_matches(text)  # no regions: the pass's graph is the input graph
    assert json.loads(outcome.graph_json()) == json.loads(text)


def _doc(nodes):
    return json.dumps({"format": "tta-graph", "version": 1, "nodes": nodes})


T = {"dtype": "float32", "shape": ["s0", 4]}


@pytest.mark.parametrize(
    "nodes,node,needle",
    [
        ([{"name": "x", "op": "placeholder", "target": "x"}, {"name": "x", "op": "output", "target": "output"}], "x", "more than one node"),
        (
            [
                {"name": "a", "op": "call_function", "target": "aten.relu.default", "args": [{"ref": "b"}]},
                {"name": "b", "op": "output", "target": "output"},
            ],
            "a",
            "not defined before",
        ),
        (
            [
                {"name": "x", "op": "placeholder", "target": "x", "val": {"dtype": "float33", "shape": [1]}},
                {"name": "o", "op": "output", "target": "output"},
            ],
            "x",
            "unknown dtype",
        ),
        (
            [
                {"name": "x", "op": "placeholder", "target": "x", "val": {"dtype": "float32", "shape": ["s0 +* 2"]}},
                {"name": "o", "op": "output", "target": "output"},
            ],
            "x",
            "does not parse",
        ),
        (
            [
                {"name": "x", "op": "placeholder", "target": "x", "regions": ["r9"], "val": T},
                {"name": "o", "op": "output", "target": "output"},
            ],
            "x",
            "no declaration",
        ),
    ],
    ids=["duplicate", "undefined-ref", "dtype", "expr", "undeclared-region"],
)
@pytest.mark.torch_independent
def test_verifier_errors_name_the_node(nodes, node, needle):
    with pytest.raises(tta.GraphError) as err:
        core.analyze(_doc(nodes), {})
    e = err.value
    assert e.kind == "verify" and e.node == node and needle in str(e), str(e)


@pytest.mark.torch_independent
def test_wrong_format_is_a_parse_error():
    with pytest.raises(tta.GraphError) as err:
        core.analyze(json.dumps({"format": "other", "version": 1, "nodes": []}), {})
    assert err.value.kind == "parse"


@pytest.mark.torch_independent
def test_first_user_frame_skips_torch_and_tta():
    trace = (
        'File "/home/u/model.py", line 10, in forward\n    y = f(x)\n'
        f'File "{torch.__file__.rsplit("/", 1)[0]}/nn/functional.py", line 99, in f\n    z\n'
    )
    assert graph.first_user_frame(trace) == "/home/u/model.py:10"


def test_symbolic_dims_serialize_as_expressions():
    class M(torch.nn.Module):
        def forward(self, x):
            return torch.cat([x, x]).sum(0)

    ep = torch.export.export(M(), (torch.randn(4, 3),), dynamic_shapes=({0: torch.export.Dim("n")},))
    doc = graph.graph_to_dict(ep.graph)
    cat = next(n for n in doc["nodes"] if n["target"] == "aten.cat.default")
    n = next(x for x in doc["nodes"] if x["op"] == "placeholder")["val"]["shape"][0]
    d0 = cat["val"]["shape"][0]
    assert isinstance(n, str) and isinstance(d0, str)
    assert core.canonical_expr(d0) == core.canonical_expr(f"{n} + {n}")


def test_symbolic_trace_graph_with_modules_and_methods_round_trips():
    import models

    gm = torch.fx.symbolic_trace(models.ModulesAndMethods())
    ops = {n.op for n in gm.graph.nodes}
    assert {"call_module", "call_method", "get_attr", "placeholder", "output"} <= ops
    text = graph.to_json(gm.graph)
    outcome = core.analyze(text, {}).outline()
    outcome.check_matches(text)


@pytest.mark.torch_independent
def test_cli_reports_a_fixture(capsys):
    import os

    from tta.tools import cli

    here = os.path.dirname(os.path.abspath(__file__))
    assert cli.main(["report", os.path.join(here, "..", "fixtures", "nonconvex.json")]) == 0
    out = capsys.readouterr().out
    assert "REFUSED: it is not convex" in out and "%mul" in out


def _tagged_chain(n_regions: int, gap: int):
    """A chain of ops with a two-op region every `gap` ops."""
    from tta.declare.annotate import TAG_PREFIX

    plugin = tta.custom_plugin(name="format_parts", meta_impl=lambda a: a.new_empty(a.shape))
    aten, val = torch.ops.aten, torch.empty(8, 8, device="meta")
    g = torch.fx.Graph()
    prev = g.placeholder("x")
    prev.meta["val"] = val
    for r in range(n_regions):
        tag = {TAG_PREFIX + f"p:{r}": {"impl": plugin.key, "source": f"m.py:{r}"}}
        for op in (aten.relu.default, aten.neg.default):
            prev = g.call_function(op, (prev,))
            prev.meta.update(val=val, custom=tag)
        for i in range(gap):
            prev = g.call_function((aten.sin.default, aten.exp.default)[i % 2], (prev,))
            prev.meta["val"] = val
    g.output((prev,))
    return g, plugin


def test_a_graph_given_as_node_texts_is_rewritten_to_the_same_text_as_the_whole_document():
    # The pass writes the nodes it left alone as the texts it was given (`Outcome::graph_json_reusing`):
    # across several parallel pieces (4096 nodes each), with the regions' readers rewired.
    g, plugin = _tagged_chain(30, 300)
    header, texts = graph.Serializer().graph_parts(g)
    impls = tta.declare.plugin.declarations({plugin.key})
    whole = header.replace('"nodes":[]', '"nodes":[' + ",".join(texts) + "]")
    from_parts = core.analyze(header, impls, nodes=texts).outline()
    from_whole = core.analyze(whole, impls).outline()
    assert len([r for r in from_parts.report() if r.outlined]) == 30
    assert from_parts.graph_json() == from_whole.graph_json()
    from_whole.check_matches(from_parts.graph_json())
