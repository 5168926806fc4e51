"""The bridge to the Rust core: ``tta.common.bridge`` hands out typed values and GraphErrors,
never JSON text or a raw CoreError (``test_core_stub.py`` checks ``_core.pyi``)."""

from __future__ import annotations

import os

import pytest
import torch

import tta
from tta import _core
from tta.common import bridge as core


@pytest.mark.torch_independent
def test_port_shapes_cross_as_typed_dims():
    graph = {
        "format": "tta-graph",
        "version": 1,
        "regions": {"r": {"impl": "p"}},
        "nodes": [
            {"name": "x", "op": "placeholder", "target": "x", "val": {"dtype": "float32", "shape": ["s0", 4]}},
            {
                "name": "relu",
                "op": "call_function",
                "target": "aten.relu.default",
                "args": [{"ref": "x"}],
                "regions": ["r"],
                "val": {"dtype": "float32", "shape": ["s0", 4]},
            },
            {"name": "output", "op": "output", "target": "output", "args": [[{"ref": "relu"}]]},
        ],
    }
    import json

    decl = {"p": {"name": "p", "inputs": None, "launch_tensors": None, "mutates": False}}
    (summary,) = core.analyze(json.dumps(graph), decl).summary()
    assert summary.valid and summary.inputs == (core.Port("x", "tensor", dtype="float32", shape=("s0", 4)),)
    assert isinstance(summary.inputs[0].shape[1], int)
    outcome = core.analyze(json.dumps(graph), decl).outline()
    (report,) = outcome.report()
    assert report.outlined and report.origin == core.Origin("annotation") and report.outputs[0].shape == ("s0", 4)
    (edit,) = outcome.edits
    assert edit.inputs == ("x",) and edit.remove == ("relu",)


@pytest.mark.torch_independent
def test_core_errors_become_graph_errors():
    with pytest.raises(tta.GraphError) as err:
        core.eval_expr("s0 +", {"s0": 1})
    assert err.value.kind == "input"
    with pytest.raises(tta.GraphError) as err:
        core.ptx_parse("not ptx")
    assert err.value.kind == "ptx"
    assert core.eval_expr("FloorDiv(s0, 2) + s1", {"s0": 9, "s1": 1}) == 5


def test_results_are_the_extensions_typed_classes():
    """Summaries, members, reports and their ports come from the core as its classes (no JSON
    decoded in Python), and equal ones built from their fields."""
    import importlib
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures"))
    import models

    ep = torch.export.export(models.build("residual_add_relu"), models.example_inputs("residual_add_relu"))
    analysis, _ = importlib.import_module("tta.fx.pipeline")._analyze(ep.graph, None)
    members, summary = tta.find_regions(ep), analysis.summary()
    assert members and summary
    for m in members:
        assert type(m) is _core.RegionMembers and isinstance(m.nodes, tuple) and m.nodes
    for s in summary:
        assert type(s) is _core.RegionSummary and isinstance(s.inputs, tuple)
        for p in s.inputs:
            assert type(p) is _core.Port
            rebuilt = _core.Port(p.name, p.kind, dtype=p.dtype, shape=p.shape, expr=p.expr, mutated=p.mutated)
            assert rebuilt == p and hash(rebuilt) == hash(p)
