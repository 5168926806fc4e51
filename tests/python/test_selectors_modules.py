"""tta.lower_modules on real models (tiny configs, random weights, CPU): regions by module type
and path prefix, one per module call, outputs equal to the original model's."""

import warnings

import pytest
import selector_models as sm
import torch
from torch import nn
from transformers.models.llama.modeling_llama import LlamaRMSNorm

import tta
from tta.common.bridge import Origin


@pytest.fixture(scope="module")
def llama_decomposed():
    return sm.export(sm.llama)


def test_every_llama_rmsnorm_lowered_by_type(llama_decomposed):
    model, args, kwargs, ep = llama_decomposed
    res = tta.lower_modules(ep, {LlamaRMSNorm: sm.rmsnorm})
    assert [r.id for r in res.outlined] == [
        "module:model.layers.0.input_layernorm",
        "module:model.layers.0.post_attention_layernorm",
        "module:model.layers.1.input_layernorm",
        "module:model.layers.1.post_attention_layernorm",
        "module:model.norm",
    ], str(res)
    assert not res.refused
    # Ports: the hidden states, then the module's weight (the meta_impl checks the order too).
    assert all(r.inputs[1].name.endswith("norm_weight") for r in res.outlined)
    assert len(set(sm.tta_ops(res))) == 1 and len(sm.tta_ops(res)) == 5, "identical norms share one op"
    assert all(
        r.origin == Origin("module", selector="transformers.models.llama.modeling_llama.LlamaRMSNorm", path=r.id[7:]) for r in res.outlined
    )
    sm.assert_same_outputs(model, args, kwargs, res)
    sm.assert_snapshot("llama_rmsnorm_by_type", res)


def test_lower_modules_on_a_plain_module_exports_it_first():
    model, args, kwargs = sm.llama()
    res = tta.lower_modules(model, {"model.layers": tta.custom_plugin(name="decoder_layer")}, example_inputs=args, example_kwargs=kwargs)
    assert isinstance(res, tta.RewriteResult)
    assert isinstance(res.program, torch.export.ExportedProgram)
    # A path prefix: each layer of the ModuleList is one region, its submodules inside it.
    assert [r.id for r in res.outlined] == ["module:model.layers.0", "module:model.layers.1"], str(res)
    assert len(res.outlined[0].nodes) > 50
    sm.assert_same_outputs(model, args, kwargs, res)
    with pytest.raises(TypeError, match="needs example_inputs"):
        tta.lower_modules(model, {LlamaRMSNorm: sm.rmsnorm})


def test_non_decomposed_llama_norms_are_refused_with_the_reason():
    # Without run_decompositions, `hidden_states.to(float32)` stays as an aliasing node that the
    # residual connection reads: the module has two outputs, and its 1-output impl refuses it.
    model, args, kwargs, ep = sm.export(sm.llama, decompose=False)
    res = tta.lower_modules(ep, {LlamaRMSNorm: sm.rmsnorm}, on_refused="keep")
    assert len(res.refused) == 4 and [r.id for r in res.outlined] == ["module:model.norm"], str(res)
    for r in res.refused:
        assert "returns 1 output(s) but the region produces 2" in r.reason
        assert [o.name for o in r.outputs][0].startswith("to_"), r.outputs
    sm.assert_same_outputs(model, args, kwargs, res)


def test_each_call_of_a_reused_module_is_a_region():
    # torchvision's BasicBlock calls its one ReLU module twice.
    model, args, kwargs, ep = sm.export(sm.resnet18)
    relu = tta.custom_plugin(name="relu")
    res = tta.lower_modules(ep, {nn.ReLU: relu})
    ids = [r.id for r in res.outlined]
    assert len(ids) == 17 and not res.refused, str(res)
    assert ids[:3] == ["module:relu", "module:layer1.0.relu", "module:layer1.0.relu@1"]
    sm.assert_same_outputs(model, args, kwargs, res)

    # A whole residual block (convs, norms, the downsample branch and both ReLU calls).
    from torchvision.models.resnet import BasicBlock

    res = tta.lower_modules(ep, {BasicBlock: tta.custom_plugin(name="basic_block")})
    assert len(res.outlined) == 8 and not res.refused, str(res)
    sm.assert_same_outputs(model, args, kwargs, res)
    sm.assert_snapshot("resnet18_basic_blocks", res)


class _Norm(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(8) + 0.5)

    def forward(self, x):
        with tta.lower_as(sm.rmsnorm):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight


class _Two(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = _Norm(), _Norm()

    def forward(self, x):
        return self.b(self.a(x).sin())


def test_module_regions_overlapping_annotations_are_refused():
    model = _Two()
    x = torch.randn(4, 8)
    ep = torch.export.export(model, (x,), strict=False).run_decompositions()
    res = tta.lower_modules(ep, {"a": sm.rmsnorm}, on_refused="keep")
    refused = {r.id: r.reason for r in res.refused}
    assert "module:a" in refused and len(refused) == 2, str(res)
    assert all("may not nest or overlap" in why for why in refused.values())
    assert len(res.outlined) == 1 and res.outlined[0].origin.kind == "annotation"
    torch.testing.assert_close(res.program.module()(x), model(x))


def test_bad_selectors_and_silent_misses():
    _, _, _, ep = sm.export(sm.resnet18)
    with pytest.raises(TypeError, match="nn.Module classes or dotted path prefixes"):
        tta.lower_modules(ep, {42: sm.rmsnorm})
    with pytest.raises(tta.PluginError, match="custom_plugin"):
        tta.lower_modules(ep, {nn.ReLU: lambda x: x})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = tta.lower_modules(ep, {"layer9": sm.rmsnorm, nn.GELU: sm.rmsnorm})
    assert not res.regions
    msgs = sorted(str(w.message) for w in caught)
    assert msgs == [
        "tta: no module in the graph matches 'layer9'",
        "tta: no module in the graph matches 'torch.nn.modules.activation.GELU'",
    ]
