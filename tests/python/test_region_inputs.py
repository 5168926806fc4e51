"""The plugin's input order: stable across export modes and decompositions, fixable by the user."""

import pytest
import torch
import torch.nn.functional as F

import tta

gelu_linear = tta.custom_plugin(name="gelu_linear")


class GeluLinear(torch.nn.Module):
    def __init__(self, pinned=False):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)
        self.pinned = pinned

    def forward(self, x):
        pinned = (self.lin.bias, x, self.lin.weight) if self.pinned else None
        with tta.lower_as(gelu_linear, inputs=pinned):
            return F.gelu(self.lin(x))


def _region(model, strict, decompose):
    x = torch.randn(2, 8)
    # A dynamic dim: torch names its symbol differently under strict and non-strict export.
    ep = torch.export.export(model, (x,), dynamic_shapes=({0: torch.export.Dim("batch", max=64)},), strict=strict)
    res = tta.rewrite(ep.run_decompositions() if decompose else ep)
    torch.testing.assert_close(res.program.module()(x), model(x))
    (r,) = res.outlined
    return r


@pytest.mark.parametrize("pinned", [False, True], ids=["default", "pinned"])
def test_input_order_is_the_same_under_every_export(pinned):
    model = GeluLinear(pinned)
    seen = {(strict, dec): _region(model, strict, dec) for strict in (False, True) for dec in (False, True)}
    want = ["p_lin_bias", "x", "p_lin_weight"] if pinned else ["x", "p_lin_weight", "p_lin_bias"]
    for key, r in seen.items():
        assert [p.name for p in r.inputs] == want, key
    # The op name depends on the body (decomposed or not), never on the export mode.
    for dec in (False, True):
        assert seen[(False, dec)].op == seen[(True, dec)].op


def test_pinned_inputs_must_name_every_value_the_region_reads():
    plugin = tta.custom_plugin(name="partly_pinned")

    class M(torch.nn.Module):
        def forward(self, x, y):
            with tta.lower_as(plugin, inputs=(x,)):
                return x * y

    ep = torch.export.export(M(), (torch.randn(3), torch.randn(3)))
    with pytest.raises(tta.RegionRefusedError, match=r"reads `y`, which lower_as\(inputs=...\) does not list"):
        tta.rewrite(ep)


@pytest.mark.torch_independent
def test_pinned_inputs_take_tensors_only():
    with pytest.raises(tta.AnnotationError, match="input 0 is int"):
        tta.lower_as(gelu_linear, inputs=(3,))


@pytest.mark.parametrize("strict", [False, True], ids=["nonstrict", "strict"])
def test_sizes_of_region_inputs_are_derived_not_inputs(strict):
    attn = tta.custom_plugin(name="attention", meta_impl=lambda q, k, v: q.new_empty(q.shape))

    class Attention(torch.nn.Module):
        def forward(self, q, k, v):
            with tta.lower_as(attn):
                return F.scaled_dot_product_attention(q, k, v)

    def qkv(seq):
        return tuple(torch.randn(1, 2, seq, 16) for _ in range(3))

    seq = torch.export.Dim("seq", min=2, max=64)
    ep = torch.export.export(Attention(), qkv(8), dynamic_shapes=({2: seq},) * 3, strict=strict).run_decompositions()
    res = tta.rewrite(ep)
    (r,) = res.outlined
    assert [p.name for p in r.inputs] == ["q", "k", "v"] and all(p.is_tensor for p in r.inputs)
    (node,) = [n for n in res.program.graph.nodes if getattr(n.target, "namespace", None) == "tta"]
    assert len(node.args) == 3
    for n in (5, 13):
        inputs = qkv(n)
        torch.testing.assert_close(res.program.module()(*inputs), Attention()(*inputs))


def _refusal(model, *inputs, plugin_kw):
    plugin = tta.custom_plugin(**plugin_kw)
    model.plugin = plugin
    with pytest.raises(tta.RegionRefusedError) as err:
        tta.rewrite(torch.export.export(model, inputs))
    return err.value.regions[0].reason


class _Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.rand(8, 8))

    def forward(self, x):
        with tta.lower_as(self.plugin):
            return x @ self.w, x.sum(0)


def test_meta_impl_returning_a_non_tensor_says_what_to_return():
    why = _refusal(_Scaled(), torch.randn(2, 8), plugin_kw=dict(name="symint_meta", meta_impl=lambda x, w: (x.shape[0], x)))
    assert "must return a tensor, or a tuple of tensors" in why, why
    assert "returned a SymInt" in why or "returned a int" in why, why


def test_output_order_mismatch_names_the_ports():
    why = _refusal(
        _Scaled(), torch.randn(2, 8), plugin_kw=dict(name="swapped_out", meta_impl=lambda x, w: (x.new_empty(8), x.new_empty(2, 8)))
    )
    assert "matches region output 1" in why and "in another order" in why, why


def test_input_order_mismatch_names_the_ports():
    why = _refusal(
        _Scaled(), torch.randn(2, 8), plugin_kw=dict(name="swapped_in", meta_impl=lambda w, x: (x.new_empty(x.shape), x.new_empty(8)))
    )
    assert "that of input 1 (`p_w`)" in why and "input 0 (`x`)" in why and "inputs=" in why, why
