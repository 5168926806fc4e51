"""A plugin op's outputs are contiguous, as its kernel writes them, in the graph's vals, the fake
impl and the eager impl; the nodes after the region are traced again to match. An attention
region (SDPA's output is a transposed buffer) followed by HF's ``transpose(1, 2).reshape(...)``
runs, exports again and compiles."""

import pytest
import torch
import torch.nn.functional as F

import tta

B, H, S, D = 2, 4, 8, 16


class Attention(torch.nn.Module):
    def __init__(self, plugin, causal=False):
        super().__init__()
        self.plugin, self.causal = plugin, causal

    def forward(self, q, k, v):
        with tta.lower_as(self.plugin):
            o = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        b, h, s, d = q.shape
        # As HF's attention does: `.contiguous()` is a no-op on SDPA's transposed output at
        # trace time, so export records the reshape as a view of the transpose.
        return o.transpose(1, 2).contiguous().reshape(b, s, h * d)


def _qkv(seq=S, device="cpu", dtype=torch.float32):
    g = torch.Generator().manual_seed(0)
    return tuple(torch.randn(B, H, seq, D, generator=g).to(device=device, dtype=dtype) for _ in range(3))


def _op_node(program):
    (node,) = [n for n in program.graph.nodes if getattr(n.target, "namespace", None) == "tta"]
    return node


def _export(model, inputs, decompose, dynamic):
    shapes = ({2: torch.export.Dim("seq", min=2, max=64)},) * 3 if dynamic else None
    ep = torch.export.export(model, inputs, dynamic_shapes=shapes)
    return ep.run_decompositions() if decompose else ep


@pytest.mark.parametrize("meta_impl", [None, lambda q, k, v: q.new_empty(q.shape)], ids=["body", "meta_impl"])
@pytest.mark.parametrize("decompose", [False, True], ids=["aten", "decomposed"])
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_attention_output_is_contiguous_and_the_graph_after_it_runs(meta_impl, decompose, dynamic):
    model = Attention(tta.custom_plugin(name="sdpa_layout", meta_impl=meta_impl))
    inputs = _qkv()
    ep = _export(model, inputs, decompose, dynamic)
    region_out = [n for n in ep.graph.nodes if n.meta.get("custom")][-1].meta["val"]
    res = tta.rewrite(ep)
    node = _op_node(res.program)
    val = node.meta["val"]
    assert val.is_contiguous() and tuple(val.shape) == tuple(region_out.shape)
    # The eager impl (the region body on CPU) and the fake impl give what the kernel writes.
    op = node.target
    assert op(*inputs).is_contiguous()
    with torch._subclasses.fake_tensor.FakeTensorMode() as mode:
        assert op(*(mode.from_tensor(t) for t in inputs)).is_contiguous()
    # Every val after the op says what running it gives: no view of a non-viewable layout.
    for n in res.program.graph.nodes:
        if n.op == "call_function" and n.target in (torch.ops.aten.view.default, torch.ops.aten._unsafe_view.default):
            src = n.args[0].meta["val"]
            assert src.is_contiguous() or n.args[0].target is not torch.ops.aten.permute.default, n
    for seq in (S, 13) if dynamic else (S,):
        qkv = _qkv(seq)
        torch.testing.assert_close(res.program.module()(*qkv), model(*qkv))
    # Export again, decompose, run.
    again = torch.export.export(
        res.program.module(), inputs, dynamic_shapes=({2: torch.export.Dim("seq", min=2, max=64)},) * 3 if dynamic else None
    )
    torch.testing.assert_close(again.run_decompositions().module()(*inputs), model(*inputs))


def test_a_contiguous_output_changes_nothing_after_the_region():
    plugin = tta.custom_plugin(name="dense_already")

    class M(torch.nn.Module):
        def forward(self, x):
            with tta.lower_as(plugin):
                y = x.exp()
            return y.transpose(0, 1).reshape(-1)

    ep = torch.export.export(M(), (torch.randn(3, 5),)).run_decompositions()
    before = [(n.name, n.meta.get("val").stride() if isinstance(n.meta.get("val"), torch.Tensor) else None) for n in ep.graph.nodes]
    res = tta.rewrite(ep)
    after = {n.name: n.meta.get("val").stride() if isinstance(n.meta.get("val"), torch.Tensor) else None for n in res.program.graph.nodes}
    assert all(after[name] == stride for name, stride in before if name in after)
    # No node added but the op: the clone export made for the reshape is still the only one.
    assert set(after) - {name for name, _ in before} == {_op_node(res.program).name}


@pytest.mark.kernels
def test_the_inductor_backend_compiles_the_attention_region():
    model = Attention(tta.custom_plugin(name="sdpa_inductor", meta_impl=lambda q, k, v: q.new_empty(q.shape)))
    inputs = _qkv()
    compiled = tta.compile(model, inputs, backend="inductor")
    torch.testing.assert_close(compiled(*inputs), model(*inputs))


@pytest.mark.gpu
@pytest.mark.parametrize("decompose", [False, True], ids=["aten", "decomposed"])
def test_flash_attention_kernel_region_then_transpose_reshape_on_cuda(decompose):
    # The failure this fixes: the op node kept SDPA's transposed stride, the kernel wrote a
    # contiguous buffer, and the `view` after `transpose(1, 2)` failed on the GPU.
    from tta.runtime import eager_stats
    from tta.tools.gpu.models import ATTENTION  # the flash-attention Triton kernel (causal)

    model = Attention(ATTENTION, causal=True)
    inputs = _qkv(64, device="cuda", dtype=torch.float16)
    ep = _export(model, inputs, decompose, dynamic=False)
    res = tta.rewrite(ep)
    node = _op_node(res.program)
    assert node.meta["val"].is_contiguous()
    want = model(*inputs)
    eager_stats.reset()
    torch.testing.assert_close(res.program.module()(*inputs), want, atol=1e-2, rtol=1e-2)
    assert eager_stats.eager_paths()[node.target._opname] == {eager_stats.KERNEL: 1}  # the kernel ran
    again = torch.export.export(res.program.module(), inputs).run_decompositions()
    torch.testing.assert_close(again.module()(*inputs), want, atol=1e-2, rtol=1e-2)
    compiled = tta.compile(model, inputs, backend="inductor")
    torch.testing.assert_close(compiled(*inputs), want, atol=1e-2, rtol=1e-2)


def test_strides_read_after_a_non_contiguous_region_output_are_an_error():
    plugin = tta.custom_plugin(name="strided_reader")

    class M(torch.nn.Module):
        def forward(self, x):
            with tta.lower_as(plugin):
                o = (x * 2).t()
            return torch.as_strided(o, (3, 2), (1, 3))  # strides of the transposed buffer

    ep = torch.export.export(M(), (torch.randn(2, 3),))
    with pytest.raises(tta.GraphError, match=r"kernel writes a contiguous buffer") as err:
        tta.rewrite(ep)
    assert err.value.source and "test_output_layout.py" in err.value.source
