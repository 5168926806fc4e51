"""tta ops as TensorRT AOT plugins (``tta.trt.qdp``), driven through the real ``tensorrt.plugin``
package over the native-module stand-in, the way TensorRT's builder calls it."""

import json
import os
import subprocess
import sys
import threading
from types import SimpleNamespace

import pytest
import tensorrt as trt
import tensorrt.plugin as trtp
import torch
import trt_standin
from tensorrt.plugin._lib import QDP_REGISTRY
from trt_standin.exprs import evaluate, to_text
from trt_standin.plugin_build import add_plugin_aot, build_plugin

import tta
from tta.aot.compile import compile_specs
from tta.errors import PluginError
from tta.examples.kernels import by_name
from tta.runtime.launcher import Loaded
from tta.trt import profile_tactics, qdp

HERE = os.path.dirname(os.path.abspath(__file__))
TRT_DT = {torch.float32: trt.float32, torch.float16: trt.float16, torch.bfloat16: trt.bfloat16}


def _define_example(name, dtype=torch.float16, **kw):
    """The example as a plugin offering every dtype it supports (one type combination each)."""
    ex = by_name(name)
    n_in = len(ex.input_metas(dtype))
    combos = [(str(d).removeprefix("torch."),) * n_in for d in ex.dtypes]
    pid = qdp.define(f"ex_{name}", ex.plugin(), ex.input_metas(dtype), ex.meta, dtypes=combos, **kw)
    return ex, pid


def _itensors(ex, dtype):
    ins = ex.make_inputs(ex.test_shapes[0], dtype, "meta")
    return [trt.ITensor(f"in{k}", [-1] * t.dim(), TRT_DT[dtype]) for k, t in enumerate(ins)]


def _profile(ex, dtype):
    """(min, opt, max) per input spanning the example's test sizes."""
    shapes = [[tuple(t.shape) for t in ex.make_inputs(s, dtype, "meta")] for s in ex.test_shapes]
    out = []
    for k in range(len(shapes[0])):
        dims = list(zip(*[s[k] for s in shapes]))
        out.append((tuple(min(d) for d in dims), shapes[0][k], tuple(max(d) for d in dims)))
    return out


def _build(name, dtype=torch.float16):
    ex, pid = _define_example(name, dtype)
    op = getattr(trtp.op.tta, pid.split("::")[1])
    added = add_plugin_aot(op(*_itensors(ex, dtype)))
    return ex, pid, added, build_plugin(added, _profile(ex, dtype))


@pytest.mark.parametrize("name", ["triton_softmax", "triton_rmsnorm", "triton_add_relu"])
def test_aot_impl_returns_the_compiled_kernels_and_the_runners_numbers(name):
    """Per tactic: the PTX is byte-identical to the compile path's (what build_manifest puts in
    the manifest the GPU runner validates), and grid, block, shared memory and extras evaluate
    to the runner's numbers at three sizes."""
    dtype = torch.float16
    ex, pid, added, built = _build(name, dtype)
    direct = compile_specs([ex.spec()], ex.input_metas(dtype), ex.meta)
    ids = [t for t in qdp.tactics(pid.split("::")[1], ["float16"] * len(added.input_types))]
    # The package keeps a combination's tactics in a set: TensorRT may try them in any order.
    assert sorted(k.tactic for k in built) == sorted(ids) and len(built) == len(direct) == len(ex.configs)
    by_id = dict(zip(ids, direct))
    for k in built:
        d = by_id[k.tactic]
        assert k.types == (trt.float16,) * len(k.types)
        assert k.code == d.code and k.code.startswith(b"//") and k.kernel_name == d.entry
        for shape in ex.test_shapes:
            ins = ex.make_inputs(shape, dtype, "meta")
            shapes = [tuple(t.shape) for t in ins]
            grid, extras, outs = Loaded.plan(SimpleNamespace(kernel=d), ins)
            v = k.launch_values(shapes)
            assert (v["grid_x"], v["grid_y"], v["grid_z"]) == grid
            assert (v["block_x"], v["block_y"], v["block_z"]) == d.block and v["shared_mem"] == d.shared_mem
            assert k.extra_values(shapes) == extras
            assert [tuple(evaluate(e, shapes) for e in o) for o in added.output_shapes] == outs


@pytest.mark.parametrize("name", ["triton_softmax", "triton_rmsnorm", "triton_add_relu"])
def test_output_shapes_equal_the_fake_shapes(name):
    dtype = torch.bfloat16
    ex, pid, added, _ = _build(name, dtype)
    assert added.output_types == [trt.bfloat16]
    for shape in ex.test_shapes:
        ins = ex.make_inputs(shape, dtype, "meta")
        fakes = ex.meta(*ins)
        fakes = fakes if isinstance(fakes, (list, tuple)) else [fakes]
        got = [tuple(evaluate(e, [tuple(t.shape) for t in ins]) for e in o) for o in added.output_shapes]
        assert got == [tuple(f.shape) for f in fakes]


def test_several_outputs():
    sys.path.insert(0, HERE)
    import two_outputs

    plugin = tta.custom_plugin(kernel=tta.triton(two_outputs.launch, configs=[{"BLOCK": 256}]), meta_impl=two_outputs.meta, name="two_out")
    from tta.aot.session import TensorType

    pid = qdp.define("two_out", plugin, [TensorType.dynamic("float32", 2)], two_outputs.meta)
    assert QDP_REGISTRY[pid].num_outputs == 2
    added = add_plugin_aot(trtp.op.tta.two_out(trt.ITensor("x", (-1, -1), trt.float32)))
    assert added.output_types == [trt.float32, trt.float32]
    assert [[to_text(e) for e in o] for o in added.output_shapes] == [["i0_0", "i0_1"], ["(i0_0 * i0_1)"]]
    (k,) = build_plugin(added, [((1, 1), (4, 100), (64, 4096))])
    assert len(k.types) == 3
    for shape in [(3, 5), (7, 129), (64, 4096)]:
        assert k.extra_values([shape]) == [shape[0] * shape[1]]
        assert k.launch_values([shape])["grid_x"] == -(-shape[0] * shape[1] // 256)
    ptx = k.code.decode()
    from tta.common import bridge as core

    params = core.ptx_parse(ptx).entry(k.kernel_name.decode() if isinstance(k.kernel_name, bytes) else k.kernel_name).params
    assert len(params) == 4  # x, n, a, b: inputs, extras, outputs


def test_tactics_unique_nonzero_and_stable_across_processes():
    ex, pid = _define_example("triton_rmsnorm")
    ids = list(qdp.tactics(pid.split("::")[1]))
    assert len(set(ids)) == len(ids) == len(ex.configs)
    assert all(0 < t < 2**31 for t in ids)
    code = (
        "import sys, json; sys.path.insert(0, sys.argv[1]); import trt_standin; trt_standin.install(sys.argv[2]);"
        "from tta.trt import qdp; from tta.examples.kernels import by_name; import torch;"
        "ex = by_name('triton_rmsnorm'); qdp.define('ex_triton_rmsnorm', ex.plugin(), ex.input_metas(torch.float16), ex.meta);"
        "print(json.dumps(qdp._entries['ex_triton_rmsnorm'].tactic_ids))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, os.path.dirname(os.path.dirname(HERE)), trt_standin.installed_version()],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == ids


def test_autotune_offers_the_compiled_types_and_every_tactic():
    ex, pid = _define_example("triton_add_relu", torch.float32)
    entry = qdp._entries[pid.split("::")[1]]
    combos = qdp._autotune(entry)
    assert len(combos) == len(ex.dtypes) == 3
    added = add_plugin_aot(trtp.op.tta.ex_triton_add_relu(*_itensors(ex, torch.float32)))
    built = build_plugin(added, _profile(ex, torch.float32))
    assert {k.tactic for k in built} == set(entry.tactic_ids)
    assert {k.types for k in built} == {(trt.float32,) * 3}
    # A network whose inputs have other types finds no kernel.
    ints = trt.ITensor("h", (-1, -1), trt.int32)
    with pytest.raises(PluginError, match="int32/int32 were not compiled for"):
        add_plugin_aot(trtp.op.tta.ex_triton_add_relu(ints, ints))


def test_guards_restrict_the_offered_tactics():
    ex, pid = _define_example("triton_softmax")
    name = pid.split("::")[1]
    small, large = qdp.tactics(name)
    assert profile_tactics.restrict_tactics(name, [[(1, 64), (1, 1024)]]) == [small, large]
    assert profile_tactics.restrict_tactics(name, [[(1, 64), (1000, 2048)]]) == [large]
    # A layer that may run only the large tactic gets a plugin of its own; the op's plugin still
    # offers both (another layer may have the small ranges).
    assert profile_tactics.restricted(name, [small, large]) == name
    only_large = profile_tactics.restricted(name, [large])
    assert only_large != name and profile_tactics.restricted(name, [large]) == only_large
    profile = [((1, 1000), (8, 1500), (64, 2048))]
    added = add_plugin_aot(getattr(trtp.op.tta, only_large)(*_itensors(ex, torch.float16)))
    assert [k.tactic for k in build_plugin(added, profile)] == [large]
    added = add_plugin_aot(trtp.op.tta.ex_triton_softmax(*_itensors(ex, torch.float16)))
    assert [k.tactic for k in build_plugin(added, profile)] == [small, large]
    with pytest.raises(PluginError) as e:
        profile_tactics.restrict_tactics(name, [[(1, 64), (1, 4096)]])
    msg = str(e.value)
    assert "input 0 dim 1 (i0_1) in [1, 4096]" in msg and "needs i0_1 <= 2048, which fails at {'i0_1': 2049}" in msg
    assert profile_tactics.restrict_tactics(name, [[(1, 64), (1, 1024)]]) == [small, large]


def test_cubin_is_refused_unless_asked_for():
    ex, pid = _define_example("triton_add_relu", torch.float32)
    name = pid.split("::")[1]
    entry = qdp._entries[name]
    kernels = qdp.tactics(name, ["float32", "float32"])
    fake = {
        t: k.__class__(**{**k.__dict__, "code": b"\x7fELF cubin", "code_format": "cubin", "backend": "cutile"}) for t, k in kernels.items()
    }
    keys = [(("float32", "float32"), entry.sm, entry.max_ptx, allow) for allow in (False, True)]
    saved = {key: entry.compiled.get(key) for key in keys}
    for key in keys:
        entry.compiled[key] = fake
    try:
        added = add_plugin_aot(trtp.op.tta.ex_triton_add_relu(*_itensors(ex, torch.float32)))
        with pytest.raises(PluginError, match="TensorRT documents only PTX for AOT plugins"):
            build_plugin(added, _profile(ex, torch.float32))
        qdp.define(name, entry.plugin, entry.input_metas, entry.output_fn, allow_cubin=True)
        assert all(k.code == b"\x7fELF cubin" for k in build_plugin(added, _profile(ex, torch.float32)))
    finally:
        for key, value in saved.items():
            if value is None:
                entry.compiled.pop(key, None)
            else:
                entry.compiled[key] = value
        qdp.define(name, entry.plugin, entry.input_metas, entry.output_fn, allow_cubin=False)


class _Block(torch.nn.Module):
    def __init__(self, dim=64):
        super().__init__()
        from tta.examples.kernels import add_relu, rmsnorm

        self.rms = tta.custom_plugin(
            kernel=tta.triton(rmsnorm.launch_rmsnorm, configs=rmsnorm.CONFIGS), meta_impl=lambda x, w: x.new_empty(x.shape), name="rmsnorm"
        )
        self.res = tta.custom_plugin(
            kernel=tta.triton(add_relu.launch_add_relu, configs=add_relu.CONFIGS),
            meta_impl=lambda x, y: x.new_empty(x.shape),
            name="residual",
        )
        self.weight = torch.nn.Parameter(torch.rand(dim) + 0.5)
        self.up = torch.nn.Linear(dim, dim)

    def forward(self, x):
        with tta.lower_as(self.rms):
            h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight
        h = self.up(h)
        with tta.lower_as(self.res):
            return torch.relu(x + h)


@pytest.fixture(scope="module")
def rewritten():
    batch = torch.export.Dim("batch", min=1, max=64)
    ep = torch.export.export(_Block().eval(), (torch.randn(4, 16, 64),), dynamic_shapes=({0: batch},))
    return tta.rewrite(ep.run_decompositions())


# Seen compiling one Triton kernel twice in the full `-m trt` run (never alone): threads register
# the ops at once, and their kernels compile both in compile_kernels' forked pool and for the QDP
# entries.
@pytest.mark.compiles_again
def test_region_ops_register_concurrently_and_match_compile_kernels(rewritten):
    ops = [r.op for r in rewritten.outlined]
    assert len(ops) == 2
    results, errors = [], []

    def worker(op):
        try:
            results.append(qdp.register(op))
        except Exception as e:  # collected, asserted below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(ops[i % 2],)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and sorted(set(results)) == sorted(f"tta::{op}" for op in ops)
    expected = rewritten.compile_kernels()
    for op in ops:
        pd = QDP_REGISTRY[f"tta::{op}"]
        assert pd.aot_impl_func is not None and pd.autotune_func is not None
        assert [k.code for k in qdp.tactics(op).values()] == [k.code for k in expected[op]]
        region = next(r for r in rewritten.outlined if r.op == op)
        itensors = [trt.ITensor(p.name, [d if isinstance(d, int) else -1 for d in p.shape], trt.float32) for p in region.inputs]
        added = add_plugin_aot(getattr(trtp.op.tta, op)(*itensors))
        # The batch dim is dynamic: at three batch sizes the plugin's output shapes are the region's.
        for b in (1, 7, 64):
            shapes = [tuple(d if isinstance(d, int) else b for d in p.shape) for p in region.inputs]
            assert [tuple(evaluate(e, shapes) for e in o) for o in added.output_shapes] == [(b, 16, 64)]


def test_rmsnorm_region_profile_beyond_its_block_is_refused(rewritten):
    op = next(r.op for r in rewritten.outlined if r.impl.startswith("rmsnorm"))
    qdp.register(op)
    from tta.examples.kernels import rmsnorm

    # Every config's BLOCK holds rows of 64.
    assert len(profile_tactics.restrict_tactics(op, [[(1, 64), (16, 16), (64, 64)], [(64, 64)]])) == len(rmsnorm.CONFIGS)
    with pytest.raises(PluginError, match="input 0 dim 2 was 64 when the kernels were compiled"):
        profile_tactics.restrict_tactics(op, [[(1, 64), (16, 16), (1, 8192)], [(64, 64)]])


def test_a_later_register_keeps_the_target_it_is_not_given():
    ex, pid = _define_example("triton_softmax")
    name = pid.split("::")[1]
    entry = qdp._entries[name]
    try:
        qdp.define(name, entry.plugin, entry.input_metas, entry.output_fn, sm=100, max_ptx=None)
        qdp.define(name, entry.plugin, entry.input_metas, entry.output_fn)
        assert (entry.sm, entry.max_ptx, entry.allow_cubin) == (100, None, False)
    finally:
        qdp.define(name, entry.plugin, entry.input_metas, entry.output_fn, sm=90, max_ptx=90)


def test_str_and_bool_attributes_reach_aot_impl():
    ex = by_name("triton_add_relu")
    attrs = [qdp.Attribute("mode", str), qdp.Attribute("flag", bool)]
    qdp.define("ex_attrs", ex.plugin(), ex.input_metas(torch.float32), ex.meta, attributes=attrs)
    seen = []
    original = qdp._aot_impl
    qdp._aot_impl = lambda entry, inputs, values, outputs, tactic: seen.append(values) or original(entry, inputs, values, outputs, tactic)
    try:
        x = _itensors(ex, torch.float32)
        added = add_plugin_aot(trtp.op.tta.ex_attrs(*x, mode="fast", flag=True))
        assert added.plugin.attrs == {"mode": "fast", "flag": True}
        assert len(build_plugin(added, _profile(ex, torch.float32))) == len(ex.configs)
    finally:
        qdp._aot_impl = original
    assert seen and all(v == {"mode": "fast", "flag": True} for v in seen)
    with pytest.raises(ValueError, match="Unexpected schema"):
        trtp.op.tta.ex_attrs(*x, flag=True, mode="fast")


def test_unknown_op_and_attribute_rules():
    with pytest.raises(PluginError, match="not a tta op of this process"):
        qdp.register("no_such_op")
    ex = by_name("triton_softmax")
    bad = [qdp.Attribute("tactic", str)]
    with pytest.raises(PluginError, match="cannot be a plugin attribute name"):
        qdp.define("ex_bad_attr", ex.plugin(), ex.input_metas(torch.float16), ex.meta, attributes=bad)
    import numpy as np

    if trt.__version__.startswith("11.1") and int(np.__version__.split(".")[1]) >= 4:
        with pytest.raises(PluginError, match="fixed in TensorRT 11.2"):
            qdp.define("ex_int_attr", ex.plugin(), ex.input_metas(torch.float16), ex.meta, attributes=[qdp.Attribute("n", int)])


@pytest.mark.skipif(trt_standin.installed_version() != "11.1", reason="runs the 11.4 suite from the 11.1 run")
def test_plugin_package_11_4():
    env = dict(os.environ, TTA_TRT_PLUGIN="11.4")
    # cuTile and CuTeDSL are not in this venv: their custom-op tests run from .venv (scripts/test.sh).
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-x",
            "-p",
            "no:cacheprovider",
            HERE,
            "-k",
            "not test_plugin_package_11_4",
            "-m",
            "not cutile and not cutedsl",
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "11.4.0.106" in r.stdout and " passed" in r.stdout and "skipped" not in r.stdout.split("\n")[-2]
