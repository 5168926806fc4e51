"""The Rust reader of fx graphs (``core.FxReader``, what ``tta.rewrite`` hands the pass) reads
every graph exactly as the Python serializer writes it, and the check after the edits re-reads
what changed, the node values included."""

import importlib
import json
import math
import os
import sys

import pytest
import torch
import torch.fx

import tta
from tta.declare import markers
from tta.fx import serialize as graph
from tta.fx.graph_copy import copy_graph

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures"))
import models  # noqa: E402


def _literals() -> torch.fx.Graph:
    """Every kind of argument the graph format knows, and some it keeps opaque."""
    g = torch.fx.Graph()
    x = g.placeholder("x")
    x.meta["val"] = torch.empty(2, 4, device="meta")
    v = g.call_function(torch.ops.aten.view.dtype, (x, torch.float16))
    s = g.call_function(torch.ops.aten.slice.Tensor, (x, 0, None, 4))
    f = g.call_function(torch.ops.aten.full.default, ([2, 2], -math.inf), {"device": torch.device("cpu"), "layout": torch.strided})
    c = g.call_function(torch.ops.aten.clone.default, (x,), {"memory_format": torch.contiguous_format})
    a = g.call_function(torch.ops.aten.add_.Tensor, (c, 1))
    odd = g.call_function(
        torch.ops.aten.add.Tensor,
        (x, [True, 2**70, -0.0, math.nan, math.inf, "text", "ünïcode", None, (1, [2, 3])]),
        {"slice": slice(None, x, 2), "opaque": {"a": 1}, "size": torch.Size([2, 3])},
    )
    odd.meta["val"] = (torch.empty(3, device="meta"), 7, 2.5, math.nan, True, None, "s")
    # Values alike but for layout, strides or dtype: the reader's cache keys keep them apart.
    for n, val in [
        (v, torch.empty(2, 4, device="meta")),
        (s, torch.empty(2, 4).to_sparse()),
        (f, torch.empty(4, 2, device="meta").t()),
        (c, torch.empty(2, 4, dtype=torch.float16, device="meta")),
        (a, torch.empty(2, 4, device="meta")),
    ]:
        n.meta["val"] = val
        # A user's own custom metadata that does not compare to a bool (the reader compares a
        # node's with the last few nodes' to skip reading the tags again).
        n.meta["custom"] = {"user": torch.ones(2)}
    g.output((v, s, f, a, odd))
    return g


def _symbolic_values() -> torch.fx.Graph:
    """Values with symbolic sizes as the reader writes them itself: tensors (strided or not),
    SymInts, and tuples and lists of them, next to a tuple it leaves to the serializer."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv, StatelessSymbolicContext

    mode = FakeTensorMode(shape_env=ShapeEnv())
    ctx = StatelessSymbolicContext(dynamic_sizes=[DimDynamic.DYNAMIC, DimDynamic.DYNAMIC])
    t = mode.from_tensor(torch.empty(3, 4), symbolic_context=ctx)
    with mode:
        vals = [t, t.shape[0], t.t(), (t, t.shape[1] * 2 + 1), [t * 2, t.shape[0] * t.shape[1]], (t, None), torch.empty(2, 4).to_sparse()]
    g = torch.fx.Graph()
    x = g.placeholder("x")
    nodes = [g.call_function(torch.ops.aten.clone.default, (x,)) for _ in vals]
    for n, val in zip([x, *nodes[1:]], vals):
        n.meta["val"] = val
    g.output(tuple(nodes))
    return g


def _symbolic_trace() -> torch.fx.Graph:
    return torch.fx.symbolic_trace(models.ModulesAndMethods()).graph


def _exported(name: str):
    ep = torch.export.export(models.build(name), models.example_inputs(name), dynamic_shapes=models.dynamic_shapes(name))
    return ep.run_decompositions()


def _both(g: torch.fx.Graph, weights=frozenset(), declared=None) -> tuple[dict, dict]:
    """(what the serializer writes, what the reader reads) as graph documents."""
    written = json.loads(graph.Serializer(weights, declared).graph_json(g, declare_all=True))
    s = graph.Serializer(weights, declared)
    reader = s.reader()
    reader.read(g.nodes)
    read = json.loads(s.header(declare_all=True))
    read["nodes"] = reader.nodes()
    return written, read


@pytest.mark.parametrize(
    "name",
    [
        "literals",
        "symbolic_values",
        "symbolic_trace",
        *[
            f"model:{m}"
            for m in (
                "residual_add_relu",
                "transformer_rmsnorm",
                "loop12",
                "dynamic_batch",
                "multi_output",
                "shared_output",
                "inplace",
                "nonconvex",
            )
        ],
    ],
)
def test_reader_reads_what_the_serializer_writes(name):
    if name == "literals":
        written, read = _both(_literals())
        vals = [n.get("val") for n in written["nodes"][1:6]]
        assert len({json.dumps(v, sort_keys=True) for v in vals}) == 4 and "stride" not in vals[1], vals
    elif name == "symbolic_values":
        written, read = _both(_symbolic_values())
        vals = [n.get("val") for n in written["nodes"]]
        syms = [v for v in vals if isinstance(v, dict) and "sym" in v]
        shapes = [v["shape"] for v in vals if isinstance(v, dict) and "shape" in v]
        assert syms and any(isinstance(d, str) for shape in shapes for d in shape), vals
    elif name == "symbolic_trace":
        written, read = _both(_symbolic_trace())
    else:
        ep = _exported(name.split(":")[1])
        g = copy_graph(ep.graph)
        found, _ = markers.take(g, ep.graph_module)
        weights = frozenset(s.arg.name for s in ep.graph_signature.input_specs if s.kind.name != "USER_INPUT")
        written, read = _both(g, weights, markers.declared(found))
        if name == "model:transformer_rmsnorm":  # what exported graphs carry besides ops
            nodes = written["nodes"]
            assert written["regions"] and any(n.get("weight") for n in nodes) and any(n.get("module_stack") for n in nodes)
            assert any(n.get("source") for n in nodes) and any(n.get("regions") for n in nodes)
    assert read == written
    assert len(read["nodes"]) > 3


def test_stacks_and_traces_like_the_previous_node_are_told_apart_by_order_and_content():
    g = torch.fx.Graph()
    x = g.placeholder("x")
    outer, inner = ("L__self__a", ("a", "pkg.Outer")), ("L__self__a_b", ("a.b", "pkg.Inner"))
    stacks = [
        dict([outer, inner]),
        dict([outer, inner]),
        dict([inner, outer]),
        dict([outer]),
        dict([outer, ("L__self__a_b@1", ("a.b", "pkg.Inner"))]),
    ]
    traces = ['File "/m.py", line 3, in f\n', 'File "/m.py", line 3, in f\n', 'File "/m.py", line 4, in f\n', "", None]
    prev = x
    for stack, trace in zip(stacks, traces):
        prev = g.call_function(torch.ops.aten.relu.default, (prev,))
        prev.meta["nn_module_stack"] = stack
        prev.meta["stack_trace"] = "".join(trace) if trace else trace  # equal texts, distinct objects
    g.output((prev,))
    written, read = _both(g)
    assert read == written
    got = [(n.get("module_stack"), n.get("source")) for n in read["nodes"][1:-1]]
    assert got[0] == got[1] and got[2][0] == list(reversed(got[0][0])) and got[2][1] == "/m.py:4"
    assert got[4][0][1]["call"] == 1 and got[3][1] is None


def test_reader_refuses_a_second_analyze_and_an_unread_graph():
    s = graph.Serializer()
    reader = s.reader()
    with pytest.raises(tta.GraphError, match="call read"):
        tta.common.bridge.analyze(s.header(), {}, reader=reader)
    reader.read(_symbolic_trace().nodes)
    tta.common.bridge.analyze(s.header(), {}, reader=reader)
    with pytest.raises(tta.GraphError, match="holds no nodes"):
        tta.common.bridge.analyze(s.header(), {}, reader=reader)


def test_check_catches_a_changed_value_on_an_untouched_node(monkeypatch):
    rw = importlib.import_module("tta.fx.pipeline")
    real_apply = rw._apply

    def bad_apply(g, *args):
        added, members = real_apply(g, *args)
        other = next(n for n in g.nodes if n.op == "call_function" and n not in added and "val" in n.meta)
        other.meta["val"] = other.meta["val"].new_empty((*other.meta["val"].shape, 1))
        return added, members

    monkeypatch.setattr(rw, "_apply", bad_apply)
    with pytest.raises(tta.GraphError) as err:
        tta.rewrite(_exported("transformer_rmsnorm"))
    assert err.value.kind == "mismatch" and "changed in the fx graph but the pass did not change it" in str(err.value)
