"""The bridge to the Rust core: ``_core.pyi`` names exactly what the extension exposes, and
``tta.common.bridge`` hands out typed values and GraphErrors, never JSON text or a raw CoreError."""

from __future__ import annotations

import ast
import os

import pytest
import torch

import tta
from tta import _core
from tta.common import bridge as core


def _stub_names() -> dict[str, set[str]]:
    path = os.path.join(os.path.dirname(_core.__file__), "_core.pyi")
    tree = ast.parse(open(path).read())
    out: dict[str, set[str]] = {"": set()}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            out[""].add(node.name)
        elif isinstance(node, ast.ClassDef):
            out[""].add(node.name)
            out[node.name] = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
    return out


def test_stub_matches_the_extension():
    stub = _stub_names()
    public = {n for n in dir(_core) if not n.startswith("_")}
    assert stub[""] == public
    for cls in ("Analysis", "Outcome"):
        methods = {n for n in dir(getattr(_core, cls)) if not n.startswith("_")}
        assert stub[cls] == methods, cls


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


def test_core_errors_become_graph_errors():
    with pytest.raises(tta.GraphError) as err:
        core.eval_expr("s0 +", {"s0": 1})
    assert err.value.kind == "input"
    with pytest.raises(tta.GraphError) as err:
        core.ptx_parse("not ptx")
    assert err.value.kind == "ptx"
    assert core.eval_expr("FloorDiv(s0, 2) + s1", {"s0": 9, "s1": 1}) == 5


def test_decoded_dataclasses_have_every_field_their_constructor_sets():
    """Ports, origins, summaries and members are decoded without their __init__ (`core._frozen`):
    each must still carry every field, equal and hash like one built by its constructor."""
    import dataclasses

    from tta.common import bridge as core

    tensor = core.Port.decode({"name": "x", "kind": "tensor", "dtype": "float32", "shape": [2, "s0"]})
    sym = core.Port.decode({"name": "n", "kind": "sym_int", "expr": "s0", "mutated": True})
    built = [
        (tensor, core.Port("x", "tensor", dtype="float32", shape=(2, "s0"))),
        (sym, core.Port("n", "sym_int", expr="s0", mutated=True)),
        (core.Origin.decode({"kind": "module", "path": "m"}), core.Origin("module", path="m")),
    ]
    for decoded, made in built:
        assert vars(decoded) == vars(made) and decoded == made and hash(decoded) == hash(made)
    import importlib
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures"))
    import models

    ep = torch.export.export(models.build("residual_add_relu"), models.example_inputs("residual_add_relu"))
    analysis, _ = importlib.import_module("tta.fx.pipeline")._analyze(ep.graph, None)
    members, summary = tta.find_regions(ep), analysis.summary()
    assert members and summary
    for decoded in [*members, *summary, *summary[0].inputs]:
        assert set(vars(decoded)) == {f.name for f in dataclasses.fields(type(decoded))}, decoded
