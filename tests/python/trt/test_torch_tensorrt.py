"""``tta.compile`` and plain ``torch_tensorrt.compile(ir="dynamo")`` through Torch-TensorRT's real
Python code (lowering passes, partitioners, converter registry, interpreter, engine cache) over
the TensorRT stand-in, which records the network each engine would be built from.

The stand-in has plugin, input, constant and cast layers only, so the graphs here are plugin-only
or keep their other ATen ops in PyTorch with ``torch_executed_ops`` (with real TensorRT those
would be converted too; which ops these are is computed, not hand-picked).
"""

from __future__ import annotations

import importlib
import inspect
import json
import sys
import textwrap

import pytest
import tensorrt as trt
import torch
import torch.nn.functional as F
import torch_tensorrt
from torch import nn
from torch_tensorrt.dynamo._engine_cache import BaseEngineCache
from trt_standin import network as standin
from trt_standin import torch_tensorrt_env

torch_tensorrt_env.patch_runtime()

import tta  # noqa: E402
import tta.trt  # noqa: E402
from tta.examples.kernels import rmsnorm as rms_kernel  # noqa: E402

# The seed's example (annotation-pr.txt), as the GPU end-to-end runs use it.
from tta.tools.gpu.models import ADD_RELU as fused_add_relu  # noqa: E402
from tta.tools.gpu.models import ResidualBlock
from tta.trt import qdp  # noqa: E402

# Torch-TensorRT reads torch.cuda.mem_get_info() unless modules are offloaded to the CPU.
SETTINGS = {"offload_module_to_cpu": True}

rmsnorm = tta.custom_plugin(
    kernel=tta.triton(rms_kernel.launch_rmsnorm, configs=[{"BLOCK": 1024, "eps": 1e-6}]),
    meta_impl=lambda x, w: x.new_empty(x.shape),
    name="rmsnorm",
)


def _line_of(fn, text: str) -> str:
    lines, start = inspect.getsourcelines(fn)
    return f"{inspect.getsourcefile(fn)}:{start + next(i for i, l in enumerate(lines) if text in l)}"


RESIDUAL_SOURCE = _line_of(ResidualBlock.forward, "lower_as")


@pytest.fixture
def builds():
    standin.BUILDS.clear()
    yield standin.BUILDS
    standin.BUILDS.clear()


def _kinds(net) -> list[str]:
    return [c[0] for c in net.calls]


def _plugin_call(net, i: int = 0) -> dict:
    return [c[1] for c in net.calls if c[0] == "add_plugin"][i]


def _residual_inputs():
    g = torch.Generator().manual_seed(0)
    return torch.randn(4, 1024, generator=g), torch.randn(4, 1024, generator=g)


def _check_residual_network(net, op: str, region: str, batch: tuple[int, int, int] | None):
    assert _kinds(net) == ["add_input", "add_input", "add_plugin", "mark_output"]
    dyn = -1 if batch else 4
    assert [c[1]["name"] for c in net.calls[:2]] == ["x", "y"]
    assert all(c[1]["dtype"] == trt.DataType.FLOAT and c[1]["shape"] == (dyn, 1024) for c in net.calls[:2])
    call = _plugin_call(net)
    assert call["plugin"] == f"tta::{op}" and call["aot"] is True and call["attrs"] == {}
    assert call["inputs"] == ["x", "y"]
    layer = call["layer"]
    assert layer.name == f"tta:{region}"
    assert json.loads(layer.metadata) == {"op": f"tta::{op}", "region": region, "source": RESIDUAL_SOURCE}
    assert net.outputs == [layer.get_output(0)]
    assert net.calls[-1][1] == {"name": "output0", "dtype": trt.DataType.FLOAT, "shape": (dyn, 1024)}
    # Both configs were offered as tactics and built through aot_impl.
    assert sorted(k.tactic for k in layer.kernels[0]) == sorted(qdp.tactics(op))
    if batch:
        profile = net_config(net).profiles[0]
        assert profile.shapes["x"] == ((batch[0], 1024), (batch[1], 1024), (batch[2], 1024))


def net_config(net):
    return next(b.config for b in standin.BUILDS if b.network is net)


def test_tta_compile_residual_block_dynamic_batch(builds):
    x, y = _residual_inputs()
    batch = torch.export.Dim("batch", min=2, max=64)
    model = tta.compile(ResidualBlock(), (x, y), ({0: batch}, {0: batch}), **SETTINGS)
    (placed,) = model.tta_report.regions
    assert placed.segment == "_run_on_acc_0" and placed.in_tensorrt
    assert placed.source == RESIDUAL_SOURCE and placed.layer == f"tta:{placed.region}"
    assert [n for n, _ in model.named_children()] == ["_run_on_acc_0"]
    assert isinstance(model._run_on_acc_0, torch_tensorrt.runtime.TorchTensorRTModule)
    (build,) = builds
    _check_residual_network(build.network, placed.op, placed.region, batch=(2, 4, 64))
    # The engine carries exactly the kernels tta.rewrite(...).compile_kernels gives for the region.
    ep = torch.export.export(ResidualBlock(), (x, y), dynamic_shapes=({0: batch}, {0: batch})).run_decompositions()
    rewritten = tta.rewrite(ep)
    assert rewritten.outlined[0].op == placed.op
    expected = rewritten.compile_kernels(sm=90)[placed.op]
    layer = _plugin_call(build.network)["layer"]
    built = {k.tactic: (k.kernel_name, k.code) for k in layer.kernels[0]}
    assert [built[t] for t in qdp.tactics(placed.op)] == [(k.entry, k.code) for k in expected]
    # The plan the stand-in serializes names the layer and both kernels.
    plan = json.loads(build.engine.serialize())
    assert [k[0] for k in plan["kernels"]] == [layer.name, layer.name]


def test_plain_torch_tensorrt_compile_outlines_regions(builds):
    """``import tta.trt`` alone: Torch-TensorRT's own compile runs tta's pass."""
    x, y = _residual_inputs()
    ep = torch.export.export(ResidualBlock(), (x, y))
    model = torch_tensorrt.compile(ep, ir="dynamo", arg_inputs=[x, y], min_block_size=1, **SETTINGS)
    assert [n for n, _ in model.named_children()] == ["_run_on_acc_0"]
    (build,) = builds
    call = _plugin_call(build.network)
    op = call["plugin"].split("::", 1)[1]
    region = json.loads(call["layer"].metadata)["region"]
    assert region.startswith("fused_add_relu:")
    _check_residual_network(build.network, op, region, batch=None)


def test_plain_compile_warns_when_min_block_size_drops_the_plugin(builds):
    x, y = _residual_inputs()
    ep = torch.export.export(ResidualBlock(), (x, y))
    with pytest.warns(UserWarning, match=r"will run in PyTorch.*min_block_size=5.*tta\.compile.*min_block_size=1"):
        model = torch_tensorrt.compile(ep, ir="dynamo", arg_inputs=[x, y], **SETTINGS)
    assert builds == []  # no engine: the plugin runs its eager implementation
    assert not any(isinstance(m, torch_tensorrt.runtime.TorchTensorRTModule) for m in model.modules())


class Mixed(nn.Module):
    """A convertible op (sin) alone between ops kept in PyTorch, then the region."""

    def forward(self, x, y):
        a = torch.sin(x * 2.0) * 3.0
        with tta.lower_as(impl=fused_add_relu):
            return torch.relu(a + y)


MUL = {torch.ops.aten.mul.Tensor}


def test_tta_compile_keeps_plugin_in_tensorrt_and_the_rest_as_before(builds):
    x, y = _residual_inputs()
    model = tta.compile(Mixed(), (x, y), torch_executed_ops=MUL, **SETTINGS)
    (placed,) = model.tta_report.regions
    assert placed.in_tensorrt and placed.segment.startswith("_run_on_acc")
    # sin is a block of one convertible op: below min_block_size it stays in PyTorch, as it
    # would without tta (the stand-in has no layer for it, so converting it would fail here).
    pytorch = [m for n, m in model.named_children() if n.startswith("_run_on_gpu")]
    assert any(n.target is torch.ops.aten.sin.default for m in pytorch for n in m.graph.nodes)
    (build,) = builds
    assert _kinds(build.network) == ["add_input", "add_input", "add_plugin", "mark_output"]
    # Plain Torch-TensorRT with the same settings leaves the plugin to PyTorch, and says so.
    ep = torch.export.export(Mixed(), (x, y))
    builds.clear()
    with pytest.warns(UserWarning, match="will run in PyTorch"):
        torch_tensorrt.compile(ep, ir="dynamo", arg_inputs=[x, y], torch_executed_ops=MUL, **SETTINGS)
    assert builds == []


def test_marked_region_that_cannot_be_lowered_is_an_error(builds):
    class Wrong(nn.Module):
        def forward(self, x, y):
            with tta.lower_as(impl=fused_add_relu):
                return torch.relu(x + 1.0)  # reads one input; the plugin takes two

    x, y = _residual_inputs()
    with pytest.raises(tta.PluginError, match=r"(?s)cannot be lowered.*takes 2 input"):
        tta.compile(Wrong(), (x, y), **SETTINGS)
    assert builds == []


# -- a Llama-style decoder block: RMSNorm regions, dynamic batch --------------------------------


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6, marked: bool = True):
        super().__init__()
        self.eps, self.marked = eps, marked
        self.weight = nn.Parameter(torch.rand(dim) + 0.5)

    def forward(self, x):
        if not self.marked:
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight
        with tta.lower_as(impl=rmsnorm):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class LlamaBlock(nn.Module):
    def __init__(self, dim: int = 64, heads: int = 4, hidden: int = 128, marked: bool = True):
        super().__init__()
        self.heads = heads
        self.input_layernorm = RMSNorm(dim, marked=marked)
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = (nn.Linear(dim, dim, bias=False) for _ in range(4))
        self.post_attention_layernorm = RMSNorm(dim, marked=marked)
        self.gate_proj, self.up_proj = nn.Linear(dim, hidden, bias=False), nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        b, t, d = x.shape
        h = self.input_layernorm(x)
        q, k, v = (p(h).view(b, t, self.heads, d // self.heads).transpose(1, 2) for p in (self.q_proj, self.k_proj, self.v_proj))
        scores = (q @ k.transpose(-1, -2)) / (d // self.heads) ** 0.5
        mask = torch.ones(t, t, dtype=torch.bool).tril()
        attn = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1) @ v
        x = x + self.o_proj(attn.transpose(1, 2).reshape(b, t, d))
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


def _aten_ops(model, x, dynamic_shapes) -> set:
    """Every ATen op of the model as Torch-TensorRT lowers it, except those inside RMSNorm
    regions: with the stand-in they must run in PyTorch (real TensorRT converts them)."""
    from torch_tensorrt.dynamo.lowering import get_decompositions

    ep = torch.export.export(model, (x,), dynamic_shapes=dynamic_shapes).run_decompositions(get_decompositions())
    return {n.target for n in ep.graph.nodes if n.op == "call_function" and isinstance(n.target, torch._ops.OpOverload)}


def _check_rmsnorm_engines(builds, report, n_batch: tuple[int, int, int]):
    assert len(report.regions) == 2 and all(r.in_tensorrt for r in report.regions)
    assert len({r.segment for r in report.regions}) == 2  # attention runs between them
    assert len(builds) == 2
    for build, placed in zip(builds, report.regions):
        net = build.network
        # x (dynamic batch) is an engine input, the weight a constant layer feeding the plugin.
        assert _kinds(net) == ["add_input", "add_constant", "add_plugin", "mark_output"]
        assert net.calls[0][1]["shape"] == (-1, 16, 64) and net.calls[1][1]["shape"] == (64,)
        call = _plugin_call(net)
        assert call["plugin"] == f"tta::{placed.op}" and call["aot"] is True and call["attrs"] == {}
        layer = call["layer"]
        assert layer.name == f"tta:{placed.region}"
        assert json.loads(layer.metadata)["region"] == placed.region
        assert tuple(net.outputs[0].shape) == (-1, 16, 64)
        (profile,) = build.config.profiles
        assert list(profile.shapes.values()) == [tuple((b, 16, 64) for b in n_batch)]
        # One program per row: the grid is batch * 16 rows at every size of the profile.
        (kernel,) = layer.kernels[0]
        for b in n_batch:
            assert kernel.launch_values([(b, 16, 64), (64,)])["grid_x"] == b * 16


def test_llama_block_rmsnorm_regions_dynamic_batch(builds):
    torch.manual_seed(0)
    model = LlamaBlock().eval()
    x = torch.randn(3, 16, 64)
    dyn = ({0: torch.export.Dim("batch", min=2, max=32)},)
    with torch.no_grad():
        compiled = tta.compile(model, (x,), dyn, torch_executed_ops=_aten_ops(model, x, dyn), **SETTINGS)
    report = compiled.tta_report
    assert [r.region.split(":")[0] for r in report.regions] == ["rmsnorm", "rmsnorm"]
    sources = {r.source for r in report.regions}
    assert sources == {_line_of(RMSNorm.forward, "lower_as")}
    _check_rmsnorm_engines(builds, report, (2, 3, 32))


def test_llama_block_selected_by_module_type(builds):
    """A model nobody annotated: ``selectors`` choose every RMSNorm instance."""
    torch.manual_seed(0)
    model = LlamaBlock(marked=False).eval()
    x = torch.randn(3, 16, 64)
    dyn = ({0: torch.export.Dim("batch", min=2, max=32)},)
    with torch.no_grad():
        compiled = tta.compile(model, (x,), dyn, selectors=[{RMSNorm: rmsnorm}], torch_executed_ops=_aten_ops(model, x, dyn), **SETTINGS)
    assert [r.region for r in compiled.tta_report.regions] == ["module:input_layernorm", "module:post_attention_layernorm"]
    _check_rmsnorm_engines(builds, compiled.tta_report, (2, 3, 32))


# -- engine cache ---------------------------------------------------------------------------------


class RecordingCache(BaseEngineCache):
    """Torch-TensorRT's custom engine cache interface; keeps the keys it was given."""

    def __init__(self):
        self.saved: dict[str, bytes] = {}

    def save(self, hash, blob, *args, **kwargs):  # noqa: A002
        self.saved[hash] = blob

    def load(self, hash, *args, **kwargs):  # noqa: A002
        return self.saved.get(hash)


KERNEL_MODULE = """
import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    out = {body}
    tl.store(out_ptr + offs, out, mask=mask)


def launch(x, y, out, *, BLOCK: int = 256):
    kernel[(triton.cdiv(out.numel(), BLOCK),)](x, y, out, out.numel(), BLOCK=BLOCK)
"""


def _engine_key(plugin, check_kernels: bool = True) -> str:
    class Block(nn.Module):
        def forward(self, x, y):
            with tta.lower_as(impl=plugin):
                return torch.relu(x + y)

    x, y = _residual_inputs()
    cache = RecordingCache()
    tta.compile(
        Block(),
        (x, y),
        cache_built_engines=True,
        immutable_weights=False,
        custom_engine_cache=cache,
        check_kernels=check_kernels,
        **SETTINGS,
    )
    (key,) = cache.saved
    return key


def test_engine_cache_key_changes_with_the_kernel(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    src = tmp_path / "tta_cache_key_kernel.py"
    src.write_text(
        textwrap.dedent(KERNEL_MODULE.format(body="tl.maximum(tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), 0.0)"))
    )
    mod = importlib.import_module("tta_cache_key_kernel")
    try:
        meta = lambda x, y: x.new_empty(x.shape)  # noqa: E731

        def plugin(configs):
            return tta.custom_plugin(kernel=tta.triton(mod.launch, configs=configs), meta_impl=meta, name="cache_probe")

        base = _engine_key(plugin([{"BLOCK": 256}]))
        assert _engine_key(plugin([{"BLOCK": 256}])) == base  # same kernel, same key: the cache can hit
        assert _engine_key(plugin([{"BLOCK": 512}])) != base  # another config
        # The same launch function calling an edited kernel (the file changed, module reloaded).
        src.write_text(textwrap.dedent(KERNEL_MODULE.format(body="tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask)")))
        importlib.reload(mod)
        # The edited kernel drops the relu, so it no longer computes the region: tta.compile's
        # kernel check refuses it, which is not what this test is about.
        with pytest.raises(tta.KernelCheckError, match="cache_probe"):
            _engine_key(plugin([{"BLOCK": 256}]))
        assert _engine_key(plugin([{"BLOCK": 256}]), check_kernels=False) != base
    finally:
        sys.modules.pop("tta_cache_key_kernel", None)


# -- several outputs, guards over the profile, target SM -----------------------------------------


def test_region_with_two_outputs(builds):
    import two_outputs

    def launch(x, a, b, *, BLOCK: int = 256):
        two_outputs.launch(x, a, b, BLOCK)

    both = tta.custom_plugin(kernel=tta.triton(launch, configs=[{"BLOCK": 256}]), meta_impl=two_outputs.meta, name="two_out")

    class TwoOut(nn.Module):
        def forward(self, x):
            with tta.lower_as(impl=both):
                a, b = x + 1, (x * 2).flatten()
            return a, b

    x = torch.randn(4, 8)  # static: a dynamic flatten would make the region read the size too
    model = tta.compile(TwoOut(), (x,), **SETTINGS)
    (placed,) = model.tta_report.regions
    assert placed.in_tensorrt
    (build,) = builds
    net = build.network
    assert _kinds(net) == ["add_input", "add_plugin", "mark_output", "mark_output"]
    layer = _plugin_call(net)["layer"]
    assert net.outputs == [layer.get_output(0), layer.get_output(1)]
    assert [c[1]["shape"] for c in net.calls[2:]] == [(4, 8), (32,)]


def _rms(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


def _rms_model(plugin):
    class Norm(nn.Module):
        def forward(self, x, w):
            with tta.lower_as(impl=plugin):
                return _rms(x, w)

    return Norm()


def _rms_plugin(blocks, name):
    return tta.custom_plugin(
        kernel=tta.triton(rms_kernel.launch_rmsnorm, configs=[{"BLOCK": b, "eps": 1e-6} for b in blocks]),
        meta_impl=lambda x, w: x.new_empty(x.shape),
        name=name,
    )


def test_only_configs_whose_guards_hold_over_the_profile_are_offered(builds):
    """The kernel needs the row length <= BLOCK: with rows up to 2048 long, only BLOCK=4096 may
    be offered to TensorRT; with BLOCK=1024 alone the compile is refused, naming range and guard."""
    n = torch.export.Dim("n", min=16, max=2048)
    x, w = torch.randn(4, 64), torch.randn(64)
    dyn = ({1: n}, {0: n})
    model = tta.compile(_rms_model(_rms_plugin([1024, 4096], "rms_guarded")), (x, w), dyn, **SETTINGS)
    (placed,) = model.tta_report.regions
    layer = _plugin_call(builds[0].network)["layer"]
    offered = [t for t, k in qdp.tactics(placed.op).items() if dict(k.config)["BLOCK"] == 4096]
    assert [k.tactic for k in layer.kernels[0]] == offered
    builds.clear()
    with pytest.raises(tta.PluginError, match=r"(?s)no kernel config.*2048.*1024"):
        tta.compile(_rms_model(_rms_plugin([1024], "rms_too_small")), (x, w), dyn, **SETTINGS)
    assert builds == []


# Plugins of their own: ops other tests compiled in this process would already hold kernels.
_PREFETCH_ADD_RELU = tta.custom_plugin(kernel=fused_add_relu.kernels, meta_impl=fused_add_relu.meta_impl, name="prefetch_add_relu")
_PREFETCH_RMSNORM = tta.custom_plugin(kernel=rmsnorm.kernels, meta_impl=rmsnorm.meta_impl, name="prefetch_rmsnorm")


class AddReluThenRMSNorm(nn.Module):
    """Two regions with two plugins: their kernels compile in one pool before the engine build."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(1024) + 0.5)

    def forward(self, x, y):
        with tta.lower_as(impl=_PREFETCH_ADD_RELU):
            h = torch.relu(x + y)
        with tta.lower_as(impl=_PREFETCH_RMSNORM):
            return h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight


def test_every_plugins_kernels_compile_in_one_pool_before_the_engine_build(builds, monkeypatch, tmp_path):
    import tta.aot.compile as aot_compile

    monkeypatch.setenv("TTA_CACHE_DIR", str(tmp_path))  # empty: every kernel is a miss
    pools = []
    real = aot_compile.run_tasks

    def recording(tasks, *args, **kwargs):
        if tasks:
            pools.append(sorted({t.spec.launch_fn.__name__ for t in tasks}))
        return real(tasks, *args, **kwargs)

    monkeypatch.setattr(aot_compile, "run_tasks", recording)
    x, y = _residual_inputs()
    model = tta.compile(AddReluThenRMSNorm(), (x, y), check_kernels=False, **SETTINGS)
    assert [r.in_tensorrt for r in model.tta_report.regions] == [True, True]
    # One pool for both plugins' configs; the converters and aot_impl then compiled nothing.
    assert pools == [["launch_add_relu", "launch_rmsnorm"]]
    assert len([c for b in builds for c in b.network.calls if c[0] == "add_plugin"]) == 2


def test_kernels_target_the_given_sm(builds):
    x, y = _residual_inputs()
    tta.compile(ResidualBlock(), (x, y), sm=80, **SETTINGS)
    layer = _plugin_call(builds[0].network)["layer"]
    assert all(b".target sm_80" in k.code for k in layer.kernels[0])
    builds.clear()
    tta.compile(ResidualBlock(), (x, y), **SETTINGS)  # default: the compile device's (9, 0)
    layer = _plugin_call(builds[0].network)["layer"]
    assert all(b".target sm_90" in k.code for k in layer.kernels[0])


def test_example_script():
    import os
    import subprocess

    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(repo, "python"), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run(
        [sys.executable, os.path.join(repo, "examples", "trt_residual.py")], capture_output=True, text=True, env=env, timeout=600
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert "1/1 region(s) in TensorRT" in r.stdout
    assert "add_plugin(tta::fused_add_relu_" in r.stdout and "mark_output(output0, FLOAT, shape (-1, 1024))" in r.stdout


def test_ops_that_cannot_be_plugins_still_rewrite_but_do_not_compile(builds):
    """With tta.trt imported, tta.rewrite of a plugin without kernels works as before; compiling
    it for TensorRT says why it cannot."""
    shape_only = tta.custom_plugin(meta_impl=lambda x, y: x.new_empty(x.shape), name="no_kernels")

    class Block(nn.Module):
        def forward(self, x, y):
            with tta.lower_as(impl=shape_only):
                return torch.relu(x + y)

    x, y = _residual_inputs()
    result = tta.rewrite(torch.export.export(Block(), (x, y)))
    assert len(result.outlined) == 1
    torch.testing.assert_close(result.program.module()(x, y), torch.relu(x + y))
    with pytest.raises(tta.PluginError, match="has no kernels"):
        tta.compile(Block(), (x, y), **SETTINGS)
    assert builds == []


def test_program_rewritten_before_torch_tensorrt(builds):
    """``tta.rewrite(ep).program`` handed to Torch-TensorRT: its retracing drops tta's node
    metadata, so the layer is named after the op and node, its source taken from the stack trace."""
    x, y = _residual_inputs()
    result = tta.rewrite(torch.export.export(ResidualBlock(), (x, y)))
    (region,) = result.outlined
    torch_tensorrt.compile(result.program, ir="dynamo", arg_inputs=[x, y], min_block_size=1, **SETTINGS)
    call = _plugin_call(builds[0].network)
    assert call["plugin"] == f"tta::{region.op}"
    layer = call["layer"]
    assert layer.name.startswith(f"tta:{region.op}/")
    meta = json.loads(layer.metadata)
    assert meta["op"] == f"tta::{region.op}" and meta["source"] == _line_of(ResidualBlock.forward, "torch.relu")


def test_dynamic_dim_without_maximum_is_refused(builds):
    x, y = _residual_inputs()
    batch = torch.export.Dim("batch")
    with pytest.raises(tta.PluginError, match=r"input 'x' dim 0 is dynamic without a maximum"):
        tta.compile(ResidualBlock(), (x, y), ({0: batch}, {0: batch}), **SETTINGS)
    assert builds == []


class PlainNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(64) + 0.5)

    def forward(self, x):
        return _rms(x, self.weight)


class HasNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = PlainNorm()

    def forward(self, x):
        return self.norm(x)


def test_selectors_registered_for_plain_torch_tensorrt_compile(builds):
    x = torch.randn(8, 64)
    ep = torch.export.export(HasNorm(), (x,))
    tta.trt.use_selectors({PlainNorm: rmsnorm})
    try:
        torch_tensorrt.compile(ep, ir="dynamo", arg_inputs=[x], min_block_size=1, **SETTINGS)
    finally:
        tta.trt.clear_selectors()
    (build,) = builds
    assert _kinds(build.network) == ["add_input", "add_constant", "add_plugin", "mark_output"]
    assert json.loads(_plugin_call(build.network)["layer"].metadata)["region"] == "module:norm"
    builds.clear()
    torch_tensorrt.compile(ep, ir="dynamo", arg_inputs=[x], min_block_size=1, torch_executed_ops=_aten_ops(HasNorm(), x, None), **SETTINGS)
    assert builds == []  # without the selector nothing is outlined


def test_every_tta_op_gets_its_converter_and_plugin():
    """Ops made by tta.rewrite, before or after ``import tta.trt``, are registered with
    Torch-TensorRT's converter registry and tensorrt.plugin."""
    import os
    import subprocess

    script = textwrap.dedent(
        """
        import sys, torch
        sys.path.insert(0, sys.argv[1])
        import trt_standin
        trt_standin.install("11.1")
        import tta
        from tta.examples.kernels import add_relu
        p = tta.custom_plugin(kernel=tta.triton(add_relu.launch_add_relu), meta_impl=lambda x, y: x.new_empty(x.shape), name="early")
        class M(torch.nn.Module):
            def forward(self, x, y):
                with tta.lower_as(impl=p):
                    return torch.relu(x + y)
        x = torch.randn(2, 8)
        (before,) = tta.rewrite(torch.export.export(M(), (x, x + 1))).outlined
        import tta.trt
        from torch_tensorrt.dynamo.conversion._ConverterRegistry import DYNAMO_CONVERTERS
        from tensorrt.plugin._lib import QDP_REGISTRY
        (after,) = tta.rewrite(torch.export.export(M(), (torch.randn(3, 5), torch.randn(3, 5)))).outlined
        for r in (before, after):
            target = getattr(torch.ops.tta, r.op).default
            assert target in DYNAMO_CONVERTERS, r.op
            assert "tta::" + r.op in QDP_REGISTRY, r.op
        print("registered", before.op != after.op)
        """
    )
    tests = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    r = subprocess.run([sys.executable, "-c", script, tests], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "registered True" in r.stdout
