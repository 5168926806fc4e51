"""lower_pattern written the way a user first tries it: example inputs of any size and in
float32, matched against a model exported with dynamic batch and sequence, or run in bfloat16.
Sizes and dtypes that come from the examples match the target's unless pinned, and a pattern
that occurs nowhere says where its closest match diverged."""

import warnings

import pytest
import selector_models as sm
import torch
import torch.nn.functional as F
from torch.export import Dim
from transformers.models.llama.modeling_llama import LlamaMLP, LlamaRMSNorm

import tta


def silu_mlp(x, w_gate, w_up, w_down):
    # Written by hand, not taken from transformers.
    return F.linear(F.silu(F.linear(x, w_gate)) * F.linear(x, w_up), w_down)


def mlp_examples(batch=1, seq=8):
    return (torch.randn(batch, seq, 32), torch.randn(64, 32), torch.randn(64, 32), torch.randn(32, 64))


@pytest.fixture(scope="module")
def llama_dynamic():
    model, args, kwargs = sm.llama()
    ids = torch.randint(0, 64, (2, 8))
    shapes = {"input_ids": {0: Dim("batch", min=1, max=8), 1: Dim("seq", min=2, max=32)}, "use_cache": None}
    ep = torch.export.export(model, (ids,), kwargs=kwargs, dynamic_shapes=shapes, strict=False).run_decompositions()
    return model, (ids,), kwargs, ep


def rewrite_quiet(selector, ep):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = selector.apply(ep)
    return res, [str(w.message) for w in caught]


def test_silu_mlp_matches_across_symbolic_batch_and_sequence(llama_dynamic):
    model, args, kwargs, ep = llama_dynamic
    mlp = tta.custom_plugin(name="silu_mlp")
    # Batch 1 and sequence 8 in the example; the target's sizes are symbols.
    for pattern, examples in [(silu_mlp, mlp_examples()), (LlamaMLP(model.config), (torch.randn(1, 8, 32),))]:
        res, _ = rewrite_quiet(tta.lower_pattern(pattern, mlp, examples), ep)
        assert len(res.outlined) == 2 and not res.refused, str(res)
        # The pattern's inputs first, in its order; sizes the target computed outside after.
        first = res.outlined[0]
        assert first.inputs[1].name == "p_model_layers_0_mlp_gate_proj_weight", first.inputs
        assert [p.kind for p in first.inputs[:4]] == ["tensor"] * 4
        sm.assert_same_outputs(model, args, kwargs, res)
        sm.assert_same_outputs(model, (torch.randint(0, 64, (3, 5)),), kwargs, res)


def test_pinned_sizes_occur_nowhere_and_say_where(llama_dynamic):
    _, _, _, ep = llama_dynamic
    res, msgs = rewrite_quiet(tta.lower_pattern(silu_mlp, tta.custom_plugin(name="silu_mlp"), mlp_examples(), pin_sizes=True), ep)
    assert not res.regions
    (msg,) = [m for m in msgs if "occurs nowhere" in m]
    assert "closest match: all" in msg and "pattern ops line up" in msg, msg
    assert "argument 1 is `[%sym_size_int_" in msg and "where the pattern has `[1, 8, 32]`" in msg, msg
    assert "pattern silu_mlp occurs nowhere; closest match" in res.report_text


def test_sizes_bind_consistently():
    # view(x, [b*s, 32]) then back to [b, s, 32]: a target whose second view does not undo the
    # first (it swaps the two dims) is not an occurrence, though every literal is a size.
    class Swapped(torch.nn.Module):
        def forward(self, x):
            return (x.reshape(-1, 32) * 2).reshape(x.shape[1], x.shape[0], 32)

    def pattern(x):
        return (x.reshape(-1, 32) * 2).reshape(x.shape[0], x.shape[1], 32)

    x = torch.randn(2, 3, 32)
    ep = torch.export.export(Swapped(), (x,), dynamic_shapes=({0: Dim("a"), 1: Dim("b")},)).run_decompositions()
    res, msgs = rewrite_quiet(tta.lower_pattern(pattern, tta.custom_plugin(name="p"), (torch.randn(4, 5, 32),)), ep)
    assert not res.regions
    (msg,) = [m for m in msgs if "occurs nowhere" in m]
    assert "the pattern's size" in msg and "here, but the graph has" in msg, msg
    ok = torch.export.export(Same(), (x,), dynamic_shapes=({0: Dim("a"), 1: Dim("b")},)).run_decompositions()
    assert len(rewrite_quiet(tta.lower_pattern(pattern, tta.custom_plugin(name="p"), (torch.randn(4, 5, 32),)), ok)[0].outlined) == 1


class Same(torch.nn.Module):
    def forward(self, x):
        return (x.reshape(-1, 32) * 2).reshape(x.shape[0], x.shape[1], 32)


class Relu(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)


def test_rmsnorm_traced_in_float32_matches_a_bfloat16_model():
    model, args, kwargs = sm.llama(layers=1)
    model = model.to(torch.bfloat16)
    ep = torch.export.export(model, args, kwargs=kwargs, strict=False).run_decompositions()
    norm = tta.custom_plugin(name="rmsnorm_any_dtype")
    res, _ = rewrite_quiet(tta.lower_pattern(LlamaRMSNorm(32, eps=1e-6), norm, (torch.randn(1, 8, 32),)), ep)
    assert len(res.outlined) == 3 and not res.refused, str(res)
    assert res.outlined[0].inputs[0].dtype == "bfloat16"
    # The region bodies compute what the decomposed program did, bit for bit.
    with torch.no_grad():
        assert torch.equal(res.program.module()(*args, **kwargs).logits, ep.module()(*args, **kwargs).logits)
    # Pinned to the example's float32, the pattern has no conversions and the model's norms do.
    res, msgs = rewrite_quiet(tta.lower_pattern(LlamaRMSNorm(32, eps=1e-6), norm, (torch.randn(1, 8, 32),), pin_dtypes=True), ep)
    assert not res.regions
    (msg,) = [m for m in msgs if "occurs nowhere" in m]
    assert "closest match:" in msg and "aten._to_copy.default" in msg, msg


def test_a_pattern_whose_ops_are_absent_names_the_missing_op():
    ep = torch.export.export(Relu(), (torch.randn(4),)).run_decompositions()
    res, msgs = rewrite_quiet(tta.lower_pattern(lambda a: torch.tanh(a), tta.custom_plugin(name="t"), (torch.randn(4),), name="tanh"), ep)
    assert not res.regions
    assert any("occurs nowhere in the graph; no node in the graph is `aten.tanh.default`" in m for m in msgs), msgs


class Nonzero(torch.nn.Module):
    def forward(self, x):
        return torch.nonzero(x).view(-1, 2) * 2


def test_a_data_dependent_size_is_matched_as_an_op():
    # nonzero's count is no function of the input's dims: it stays an op of the pattern.
    ep = torch.export.export(Nonzero(), (torch.randn(3, 5),)).run_decompositions()
    selector = tta.lower_pattern(Nonzero(), tta.custom_plugin(name="nz"), (torch.randn(2, 4),))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = selector.apply(ep, on_refused="keep")
    msgs = [str(w.message) for w in caught]
    assert len(res.regions) == 1 and not [m for m in msgs if "occurs nowhere" in m], (str(res), msgs)
    # Export's runtime checks on the unbacked count (`sym_size` -> `ge`/`le` -> `_assert_scalar`)
    # read only the occurrence: they join it.
    (region,) = res.outlined
    assert any(n.startswith("sym_size") for n in region.nodes) and any(n.startswith("_assert_scalar") for n in region.nodes), region.nodes
    x = torch.randn(3, 5)
    assert torch.equal(res.program.module()(x), Nonzero()(x))


def test_qwen2_in_bfloat16_with_dynamic_batch_and_sequence():
    # Both at once, on another family: float32 examples of any size, a bf16 model with
    # symbolic batch and sequence.
    from transformers import Qwen2Config, Qwen2ForCausalLM
    from transformers.models.qwen2.modeling_qwen2 import Qwen2RMSNorm

    torch.manual_seed(0)
    cfg = Qwen2Config(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    model = Qwen2ForCausalLM(cfg).eval().to(torch.bfloat16)
    ids = torch.randint(0, 64, (2, 8))
    shapes = {"input_ids": {0: Dim("batch", max=8), 1: Dim("seq", min=2, max=32)}, "use_cache": None}
    ep = torch.export.export(model, (ids,), kwargs={"use_cache": False}, dynamic_shapes=shapes, strict=False).run_decompositions()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = tta.rewrite(
            ep,
            selectors=[
                tta.lower_pattern(silu_mlp, tta.custom_plugin(name="silu_mlp"), mlp_examples(seq=4)),
                tta.lower_pattern(Qwen2RMSNorm(32), tta.custom_plugin(name="rms"), (torch.randn(1, 4, 32),)),
            ],
        )
    kinds = [r.origin.pattern for r in res.outlined]
    assert kinds.count("silu_mlp") == 2 and kinds.count("Qwen2RMSNorm") == 5 and not res.refused, str(res)
    assert not [w for w in caught if "occurs nowhere" in str(w.message)]
    other = (torch.randint(0, 64, (3, 5)),)
    with torch.no_grad():
        assert torch.equal(res.program.module()(*other, use_cache=False).logits, ep.module()(*other, use_cache=False).logits)


def rope(q, cos, sin):
    from transformers.models.llama.modeling_llama import rotate_half

    return q * cos + rotate_half(q) * sin


def test_rotary_embedding_with_slices_matches_static_and_symbolic_targets(llama_dynamic):
    # rotate_half slices to `dim // 2`: traced with symbolic sizes the slice records fewer
    # arguments than with literal ones, so the example's own sizes are matched too.
    q, cs = torch.randn(1, 4, 8, 8), torch.randn(1, 1, 8, 8)
    sel = tta.lower_pattern(rope, tta.custom_plugin(name="rope"), (q, cs, cs.clone()))
    _, _, _, static = sm.export(sm.llama)
    _, _, _, dynamic = llama_dynamic
    for ep in (static, dynamic):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            found = tta.find_regions(ep, [sel])
        assert len(found) == 4 and not any(r.reason for r in found), found
