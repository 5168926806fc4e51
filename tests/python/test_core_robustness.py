"""The Rust core's error boundary from Python: no panic, crash or wrapped number reaches the
caller, and non-finite literals survive the rewrite and its check."""

import json

import pytest
import torch

import tta
from tta import _core


class NanFill(torch.nn.Module):
    def forward(self, x):
        with tta.lower_as(tta.custom_plugin(name="nan_fill_region", meta_impl=lambda a: a.new_empty(a.shape))):
            y = torch.relu(x) + float("nan")
        z = torch.clamp(y, float("-inf"), float("inf"))
        return torch.where(torch.isnan(z), torch.full_like(z, float("nan")), z * float("inf"))


@pytest.mark.parametrize("check", [True, "full"])
def test_nan_and_inf_literals_pass_the_rewrite_check(check):
    ep = torch.export.export(NanFill(), (torch.randn(4, 8),))
    res = tta.rewrite(ep, check=check)
    assert len(res.outlined) == 1, str(res)
    x = torch.randn(4, 8)
    torch.testing.assert_close(res.program.module()(x), NanFill()(x), equal_nan=True)


def test_graph_json_encodes_non_finite_floats_as_tagged_strings():
    from tta.fx import serialize as graph

    ep = torch.export.export(NanFill(), (torch.randn(4, 8),))
    text = graph.to_json(ep.graph)
    assert '{"float":"nan"}' in text and '{"float":"inf"}' in text and '{"float":"-inf"}' in text
    json.loads(text)  # strict JSON: no bare NaN or Infinity


@pytest.mark.parametrize(
    "text",
    ["9223372036854775807 + 1", "s0*9223372036854775807*2", "s0**16**16", "FloorDiv(-9223372036854775807 - 1, -1)"],
)
@pytest.mark.torch_independent
def test_overflow_is_an_error(text):
    with pytest.raises(_core.CoreError) as e:
        _core.canonical_expr(text)
    assert e.value.args[0] == "input" and "overflow" in e.value.args[1] and text in e.value.args[1]


@pytest.mark.torch_independent
def test_eval_overflow_and_bad_characters_are_errors():
    with pytest.raises(_core.CoreError, match="overflow"):
        _core.eval_expr("FloorDiv(s0, s1)", json.dumps({"s0": -(2**63), "s1": -1}))
    with pytest.raises(_core.CoreError) as e:
        _core.canonical_expr("s0+é")
    assert e.value.args[1] == 'shape expression "s0+é": unexpected character `é`'


@pytest.mark.torch_independent
def test_deep_nesting_and_large_expansions_are_refused_quickly():
    with pytest.raises(_core.CoreError, match="nests deeper"):
        _core.canonical_expr("(" * 10_000 + "s0" + ")" * 10_000)
    with pytest.raises(_core.CoreError, match="terms"):
        _core.canonical_expr("(s0+s1+s2+s3+s4+s5)**12")


@pytest.mark.torch_independent
def test_deep_nesting_inside_a_graph_is_a_verify_error():
    shape = "(" * 3000 + "s0" + ")" * 3000
    doc = {
        "format": "tta-graph",
        "version": 1,
        "nodes": [
            {"name": "x", "op": "placeholder", "target": "x", "val": {"dtype": "float32", "shape": [shape]}},
            {"name": "output", "op": "output", "target": "output", "args": [[{"ref": "x"}]]},
        ],
    }
    with pytest.raises(_core.CoreError) as e:
        _core.analyze(json.dumps(doc), "{}")
    assert e.value.args[0] == "verify" and e.value.args[2] == "x"


@pytest.mark.torch_independent
def test_malformed_cubin_and_ptx_are_errors():
    for blob in (b"", b"\x7fELF" + b"\xff" * 60, bytes(range(256)) * 4):
        with pytest.raises(_core.CoreError):
            _core.ptx_from_cubin(blob)
        with pytest.raises(_core.CoreError):
            _core.ptx_cubin_params(blob, "k")
    with pytest.raises(_core.CoreError):
        _core.ptx_parse(".version 9.0\n.target sm_90a\n.entry é(")
