"""tta.lower_pattern on real models (tiny configs, random weights, CPU): Llama RMSNorm (the same
regions as by module type), GPT-2's GELU MLP, ResNet-18's conv-bn-relu and residual add+ReLU;
outputs equal to the original model's; decomposed vs not chosen explicitly."""

import warnings

import pytest
import selector_models as sm
import torch
from torch import nn
from transformers.models.llama.modeling_llama import LlamaRMSNorm

import tta
from tta.fx.selectors import is_decomposed


def rmsnorm_fn(x, w):
    # Written independently of transformers, operands in another order (mul commutes).
    return (torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * x) * w


@pytest.fixture(scope="module")
def llama_decomposed():
    return sm.export(sm.llama)


def example_rms():
    return (torch.randn(1, 8, 32), torch.randn(32))


def test_llama_rmsnorm_pattern_finds_what_the_module_type_finds(llama_decomposed):
    model, args, kwargs, ep = llama_decomposed
    by_pattern = tta.lower_pattern(rmsnorm_fn, sm.rmsnorm, example_rms()).apply(ep)
    by_type = tta.lower_modules(ep, {LlamaRMSNorm: sm.rmsnorm})
    assert len(by_pattern.outlined) == 5 and not by_pattern.refused, str(by_pattern)
    assert [r.id for r in by_pattern.outlined] == [f"pattern:rmsnorm_fn:{k}" for k in range(5)]
    # The same ops. The module also owns its `_assert_tensor_metadata` check of the input; the
    # pattern takes the checks that read inside the occurrence only.
    for p, m in zip(by_pattern.outlined, by_type.outlined):
        assert set(p.nodes) < set(m.nodes), (p.nodes, m.nodes)
        assert all(n.startswith("_assert_tensor_metadata") for n in set(m.nodes) - set(p.nodes))
        assert any(n.startswith("_assert_tensor_metadata") for n in p.nodes)
        assert p.inputs == m.inputs and p.outputs == m.outputs
    assert len(set(sm.tta_ops(by_pattern))) == 1
    sm.assert_same_outputs(model, args, kwargs, by_pattern)
    sm.assert_snapshot("llama_rmsnorm_by_pattern", by_pattern)

    # The transformers module itself as the pattern: its weight becomes an input after x.
    res = tta.lower_pattern(LlamaRMSNorm(32, eps=1e-6), sm.rmsnorm, (torch.randn(1, 8, 32),)).apply(ep)
    assert [r.nodes for r in res.outlined] == [r.nodes for r in by_pattern.outlined], str(res)


def test_decomposed_or_not_is_explicit(llama_decomposed):
    _, _, _, ep = llama_decomposed
    _, _, _, raw = sm.export(sm.llama, decompose=False)
    assert is_decomposed(ep.graph_module) and not is_decomposed(raw.graph_module)
    module_pattern = LlamaRMSNorm(32, eps=1e-6)
    sel = {d: tta.lower_pattern(module_pattern, sm.rmsnorm, (torch.randn(1, 8, 32),), decompose=d) for d in (None, True, False)}
    assert sel[None].decomposed_for(ep.graph_module) and not sel[None].decomposed_for(raw.graph_module)
    # The two forms differ: the raw one keeps `aten.to.dtype`, the decomposed one does not.
    raw_targets = {n["target"] for n in sel[False].graph_doc(False)["nodes"]}
    dec_targets = {n["target"] for n in sel[True].graph_doc(True)["nodes"]}
    assert "aten.to.dtype" in raw_targets and "aten.to.dtype" not in dec_targets
    assert len(sel[None].apply(ep).outlined) == 5
    assert len(sel[True].apply(ep).outlined) == 5
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert not sel[False].apply(ep).regions, "the raw form does not occur in a decomposed graph"
    assert any("occurs nowhere" in str(w.message) for w in caught)
    # On the raw graph the raw form is found; four of five occurrences leak the aliasing
    # `to` node to the residual add and are refused with that reason.
    res = sel[None].apply(raw, on_refused="keep")
    assert len(res.outlined) == 1 and len(res.refused) == 4, str(res)
    assert all("is also read by" in r.reason and "outside the occurrence" in r.reason for r in res.refused)


def gpt2_mlp_pattern():
    from transformers import GPT2Config
    from transformers.models.gpt2.modeling_gpt2 import GPT2MLP

    cfg = GPT2Config(vocab_size=64, n_positions=32, n_embd=32, n_layer=2, n_head=4, bos_token_id=0, eos_token_id=0)
    return GPT2MLP(4 * 32, cfg).eval()


def test_gpt2_gelu_mlp_by_pattern():
    model, args, kwargs, ep = sm.export(sm.gpt2)
    mlp = tta.custom_plugin(name="gelu_mlp")
    # Conv1D reshapes with literal sizes: the example input has the target's shape.
    res = tta.lower_pattern(gpt2_mlp_pattern(), mlp, (torch.randn(1, 8, 32),)).apply(ep)
    assert [r.id for r in res.outlined] == ["pattern:GPT2MLP:0", "pattern:GPT2MLP:1"], str(res)
    assert not res.refused
    first = res.outlined[0]
    assert len(first.nodes) == 14 and any(n.startswith("tanh") for n in first.nodes), first.nodes
    # x, then the weights in the module's parameter order.
    assert [p.name for p in first.inputs][1:] == [
        "p_transformer_h_0_mlp_c_fc_weight",
        "p_transformer_h_0_mlp_c_fc_bias",
        "p_transformer_h_0_mlp_c_proj_weight",
        "p_transformer_h_0_mlp_c_proj_bias",
    ]
    sm.assert_same_outputs(model, args, kwargs, res)
    sm.assert_snapshot("gpt2_gelu_mlp_by_pattern", res)
    # Conv1D's reshape sizes come from the example's dims: another batch and sequence length
    # match the same, unless the user pins the sizes.
    other = tta.lower_pattern(gpt2_mlp_pattern(), mlp, (torch.randn(3, 4, 32),)).apply(ep)
    assert [r.nodes for r in other.outlined] == [r.nodes for r in res.outlined]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert not tta.lower_pattern(gpt2_mlp_pattern(), mlp, (torch.randn(1, 4, 32),), pin_sizes=True).apply(ep).regions
    # ... and the warning says where the closest match diverged.
    msg = next(str(w.message) for w in caught if "occurs nowhere" in str(w.message))
    assert "closest match: all 14 pattern ops line up" in msg and "argument 1 is `[1, 8, 32]` where the pattern has `[1, 4, 32]`" in msg, (
        msg
    )


def test_resnet_conv_bn_relu_and_residual_add_relu_by_pattern():
    model, args, kwargs, ep = sm.export(sm.resnet18)
    conv_bn_relu = nn.Sequential(nn.Conv2d(64, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU()).eval()
    cbr = tta.custom_plugin(name="conv_bn_relu")
    add_relu = tta.custom_plugin(name="add_relu")
    x = torch.randn(2, 64, 8, 8)
    res = tta.rewrite(
        ep,
        selectors=[
            tta.lower_pattern(conv_bn_relu, cbr, (x,), name="conv_bn_relu"),
            tta.lower_pattern(lambda a, b: torch.relu(a + b), add_relu, (x, x.clone()), name="add_relu"),
        ],
    )
    kinds = [r.origin.pattern for r in res.outlined]
    # 3x3 stride-1 convs followed by bn+relu: the first conv of 5 blocks (stride-2 ones differ
    # in a literal); every block ends in add+ReLU.
    assert kinds.count("conv_bn_relu") == 5 and kinds.count("add_relu") == 8, str(res)
    assert not res.refused
    sm.assert_same_outputs(model, args, kwargs, res)
    sm.assert_snapshot("resnet18_patterns", res)


def test_pattern_port_order_and_overlaps(llama_decomposed):
    model, args, kwargs, ep = llama_decomposed

    def weight_first(w, x):
        return rmsnorm_fn(x, w)

    seen = []

    def meta(w, x):
        seen.append((tuple(w.shape), tuple(x.shape)))
        return x.new_empty(x.shape)

    impl = tta.custom_plugin(meta_impl=meta, name="rms_w_first")
    res = tta.lower_pattern(weight_first, impl, example_rms()[::-1]).apply(ep)
    assert len(res.outlined) == 5 and seen[0] == ((32,), (1, 8, 32)), str(res)
    assert res.outlined[0].inputs[0].name == "p_model_layers_0_input_layernorm_weight"
    sm.assert_same_outputs(model, args, kwargs, res)

    # A module selector and a pattern choosing the same ops: both refused, the rest outlined.
    res = tta.lower_modules(
        ep, {"model.norm": sm.rmsnorm}, selectors=[tta.lower_pattern(rmsnorm_fn, sm.rmsnorm, example_rms())], on_refused="keep"
    )
    refused = sorted(r.id for r in res.refused)
    assert refused == ["module:model.norm", "pattern:rmsnorm_fn:4"], str(res)
    assert len(res.outlined) == 4
    sm.assert_same_outputs(model, args, kwargs, res)


def test_pattern_argument_errors():
    x = torch.randn(4)
    with pytest.raises(TypeError, match="same tensor"):
        tta.lower_pattern(lambda a, b: a + b, sm.rmsnorm, (x, x))
    with pytest.raises(tta.PluginError):
        tta.lower_pattern(lambda a: a, "not a plugin", (x,))
    with pytest.raises(TypeError, match="decompose"):
        tta.lower_pattern(lambda a: a.relu(), sm.rmsnorm, (x,), decompose="yes")
    # A pattern that returns its input unchanged is refused by the pass, naming the pattern.
    ep = torch.export.export(nn.ReLU(), (x,)).run_decompositions()
    with pytest.raises(tta.GraphError, match="pattern `ident`: it returns"):
        tta.lower_pattern(lambda a, b: (a.relu(), b), sm.rmsnorm, (x, x.clone()), name="ident").apply(ep)


def test_find_regions_reports_without_rewriting():
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU())
    x = torch.randn(4, 8)

    class Leaky(nn.Module):
        def forward(self, a, b):
            s = a + b
            return torch.relu(s), s * 2  # the sum is read outside the add+relu occurrence

    ep = torch.export.export(Leaky(), (x, x.clone())).run_decompositions()
    before = [n.name for n in ep.graph.nodes]
    add_relu = tta.lower_pattern(lambda a, b: torch.relu(a + b), tta.custom_plugin(name="add_relu"), (x, x.clone()), name="add_relu")
    regions = tta.find_regions(ep, [add_relu])
    assert [n.name for n in ep.graph.nodes] == before, "nothing is rewritten"
    assert len(regions) == 1 and regions[0].id == "pattern:add_relu:0"
    assert regions[0].nodes == ("add", "relu")
    assert "`add` (aten.add.Tensor" in regions[0].reason and "is also read by `mul`" in regions[0].reason

    ep = torch.export.export(model, (x,)).run_decompositions()
    found = tta.find_regions(ep, [{nn.ReLU: sm.rmsnorm}, {nn.Linear: sm.rmsnorm}])
    assert [(r.id, r.reason) for r in found] == [("module:0", None), ("module:1", None)]


def test_a_pattern_name_given_twice_is_labelled_by_the_pass():
    x = torch.randn(4, 8)

    class TwoOps(nn.Module):
        def forward(self, a, b):
            return torch.relu(a + b), torch.tanh(a * b)

    ep = torch.export.export(TwoOps(), (x, x.clone())).run_decompositions()
    add_relu = tta.lower_pattern(lambda a, b: torch.relu(a + b), tta.custom_plugin(name="add_relu"), (x, x.clone()), name="op")
    mul_tanh = tta.lower_pattern(lambda a, b: torch.tanh(a * b), tta.custom_plugin(name="mul_tanh"), (x, x.clone()), name="op")
    sigmoid = tta.lower_pattern(lambda a: torch.sigmoid(a), tta.custom_plugin(name="sig"), (x,), name="op")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = tta.rewrite(ep, selectors=[add_relu, mul_tanh, sigmoid])
    assert [r.id for r in res.outlined] == ["pattern:op:0", "pattern:op#2:0"], str(res)
    msgs = [str(w.message) for w in caught if "occurs nowhere" in str(w.message)]
    assert len(msgs) == 1 and msgs[0].startswith("tta: pattern 'op#3' occurs nowhere in the graph; "), msgs


def _count_exports(monkeypatch) -> list:
    """The names of the pattern selectors that export, in order, from now on."""
    from tta.fx.patterns import PatternSelector

    exports = []
    real = PatternSelector._export

    def counting(self, *args):
        exports.append(self.name)
        return real(self, *args)

    monkeypatch.setattr(PatternSelector, "_export", counting)
    return exports


def _fresh_rms():
    def rms(x, w):  # a fresh function: nothing cached from other tests
        return (torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * x) * w

    return rms


def test_a_second_rewrite_with_the_same_pattern_reuses_its_export(llama_decomposed, monkeypatch):
    _, _, _, ep = llama_decomposed
    exports = _count_exports(monkeypatch)
    rms = _fresh_rms()

    first = tta.lower_pattern(rms, sm.rmsnorm, example_rms()).apply(ep)
    n = len(exports)
    assert n >= 1 and len(first.outlined) == 5
    again = tta.lower_pattern(rms, sm.rmsnorm, example_rms()).apply(ep)  # new selector, new tensors
    assert len(exports) == n, "the same pattern and examples were exported again"
    assert [r.nodes for r in again.outlined] == [r.nodes for r in first.outlined]
    # Other example shapes, another pattern object, a module pattern with other weights: exported anew.
    tta.lower_pattern(rms, sm.rmsnorm, (torch.randn(2, 4, 16), torch.randn(16))).apply(ep, on_refused="keep")
    assert len(exports) > n
    n = len(exports)
    tta.lower_pattern(lambda x, w: rms(x, w), sm.rmsnorm, example_rms(), name="rms").apply(ep)
    assert len(exports) > n
    module = LlamaRMSNorm(32, eps=1e-6)
    tta.lower_pattern(module, sm.rmsnorm, (torch.randn(1, 8, 32),)).apply(ep)
    n = len(exports)
    tta.lower_pattern(module, sm.rmsnorm, (torch.randn(1, 8, 32),)).apply(ep)
    assert len(exports) == n
    module.weight = nn.Parameter(torch.ones(16))  # other weight shapes: another graph
    tta.lower_pattern(module, sm.rmsnorm, (torch.randn(1, 8, 16),)).graph_doc(True)
    assert len(exports) == n + 1


def test_a_pattern_changed_in_place_is_exported_again(llama_decomposed, monkeypatch):
    _, _, _, ep = llama_decomposed
    exports = _count_exports(monkeypatch)
    rms = _fresh_rms()

    def not_in_llama(x, w):
        return torch.relu(x) * w

    sel = tta.lower_pattern(rms, sm.rmsnorm, example_rms())
    assert len(sel.apply(ep).outlined) == 5
    n = len(exports)
    assert len(sel.apply(ep).outlined) == 5 and len(exports) == n  # unchanged: the export is reused
    rms.__code__ = not_in_llama.__code__
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the new pattern occurs nowhere
        assert sel.apply(ep, on_refused="keep").outlined == []
    assert len(exports) > n, "the changed function was not exported again"
