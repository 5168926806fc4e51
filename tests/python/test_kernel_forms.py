"""Kernels as their authors wrote them, compiled with no edits: Liger-Kernel's RMSNorm and
SwiGLU forward kernels from the installed package (run-time float and int arguments), and an
``@triton.autotune`` + ``@triton.heuristics`` kernel with a grid lambda over ``meta``."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch
import triton
import triton.language as tl

import tta
from tta.aot.compile import compile_plugin, compile_specs
from tta.aot.session import TensorType
from tta.common import bridge as core
from tta.errors import PluginError
from tta.examples.kernels import by_name


def _kinds(k):
    (entry,) = [e for e in core.ptx_parse(k.code.decode()).entries if e.name == k.entry]
    return ["ptr" if p.ty == ".u64" and p.is_ptr else p.ty for p in entry.params]


@pytest.mark.kernels
def test_liger_rmsnorm_floats_are_bound_and_strides_split():
    import liger_kernel.ops.rms_norm as liger

    ex = by_name("triton_liger_rmsnorm")
    plugin = tta.custom_plugin(kernel=[ex.spec()], meta_impl=ex.meta, name="liger_rmsnorm_forms")
    kernels = compile_plugin(plugin, ex.input_metas(torch.float16), cache=False, progress=False)
    assert len(kernels) == 2
    for k in kernels:
        assert k.entry == liger._rms_norm_forward_kernel.fn.__name__
        # x, w; Y_row_stride, X_row_stride, n_cols (all the row length); y, rstd.
        assert k.extras == ("i0_2",) * 3
        assert _kinds(k) == ["ptr", "ptr", ".u32", ".u32", ".u32", "ptr", "ptr"]
        assert k.meta["baked"] == {"W_row_stride": 1, "RSTD_row_stride": 1, "eps": 1e-6, "offset": 0.0}
        assert "eps=1e-06" in k.meta["note"] and "W_row_stride=1" in k.meta["note"]
        assert k.output_dtypes == ("float16", "float32") and k.grid == ("i0_0*i0_1", "1", "1")
        assert "0f358637BD" in k.code.decode()  # 1e-6 as an fp32 immediate
    assert [k.block[0] for k in kernels] == [128, 256]


@pytest.mark.kernels
def test_liger_swiglu_static_row_length():
    ex = by_name("triton_liger_swiglu")
    (k,) = compile_specs([ex.spec()], ex.input_metas(torch.bfloat16), ex.meta, cache=False, progress=False)
    assert k.extras == () and _kinds(k) == ["ptr", "ptr", "ptr"]
    assert k.meta["baked"] == {"stride": 1000, "gate_multiplier": 1.0}
    # A constexpr the library computes from a dynamic dim is refused, naming it.
    with pytest.raises(PluginError, match="n_cols.*depends on input shapes"):
        compile_specs([ex.spec()], [TensorType.dynamic(torch.bfloat16, 3)] * 2, ex.meta, cache=False, progress=False)


_LIGER_INTERPRETED = r"""
import json, torch
from liger_kernel.ops.swiglu import _swiglu_forward_kernel as swiglu
from tta.aot.triton_specialize import bind_floats
from tta.examples.kernels import by_name
rows = []
ex = by_name("triton_liger_swiglu")
k = bind_floats(swiglu, {"gate_multiplier": 1.0}, set())
a, b = ex.make_inputs(ex.test_shapes[1], torch.float32, "cpu")
c = torch.empty_like(a)
k[(a.numel() // 1000,)](a, b, c, 1000, n_cols=1000, BLOCK_SIZE=1024)
rows.append([ex.compare(c, ex.reference(a, b))])
print(json.dumps(rows))
"""


def test_liger_swiglu_with_bound_float_matches_torch_under_the_interpreter():
    """The generated kernel tta compiles (floats bound) computes what torch does, on CPU.
    (RMSNorm calls libdevice's rsqrt, which the interpreter cannot run: the GPU conformance
    manifest checks it on the H200.)"""
    env = dict(os.environ, TRITON_INTERPRET="1")
    r = subprocess.run([sys.executable, "-c", _LIGER_INTERPRETED], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    rows = json.loads(r.stdout.strip().splitlines()[-1])
    assert len(rows) == 1
    for row in rows:
        for err, ok in row:
            assert ok, rows
    assert any(err > 0 for row in rows for err, _ in row)  # compared for real


@pytest.mark.kernels
def test_autotune_configs_are_the_tactics():
    ex = by_name("triton_autotuned_axpy")
    spec = ex.spec()
    assert spec.autotuned.endswith("axpy_kernel")
    assert spec.config_dicts() == [
        {"BLOCK": 256, "num_warps": 2, "num_stages": 2},
        {"BLOCK": 1024, "num_warps": 4, "num_stages": 3},
        {"BLOCK": 2048, "num_warps": 8, "num_stages": 1},
    ]
    kernels = compile_specs([spec], ex.input_metas(torch.float16), ex.meta, cache=False, progress=False)
    assert [(k.meta["num_warps"], k.meta["num_stages"], k.block[0]) for k in kernels] == [(2, 2, 64), (4, 3, 128), (8, 1, 256)]
    # The heuristic's UNROLL (from BLOCK) and the grid lambda over meta.
    assert [k.meta["constexprs"]["UNROLL"] for k in kernels] == [1, 2, 2]
    assert [k.grid[0] for k in kernels] == [
        "FloorDiv(i0_0*i0_1 + 255, 256)",
        "FloorDiv(i0_0*i0_1 + 2047, 2048)",
        "FloorDiv(i0_0*i0_1 + 4095, 4096)",
    ]
    for k in kernels:
        assert k.extras == ("i0_0*i0_1",) and _kinds(k) == ["ptr", "ptr", ".u32", "ptr"]
        assert k.meta["baked"] == {"scale": 0.5} and k.meta["configs_from"].endswith("axpy_kernel")


@triton.autotune(configs=[triton.Config({"BLOCK": 128}, pre_hook=lambda nargs: None)], key=["n"])
@triton.jit
def _hooked_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def launch_hooked(x, out):
    _hooked_kernel[lambda meta: (triton.cdiv(out.numel(), meta["BLOCK"]),)](x, out, out.numel())


def launch_hooked_with_block(x, out, *, BLOCK=64):
    _hooked_kernel[(triton.cdiv(out.numel(), BLOCK),)](x, out, out.numel(), BLOCK=BLOCK)


@triton.heuristics({"BLOCK": lambda args: args["n"]})
@triton.jit
def _shape_heuristic_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))


def launch_shape_heuristic(x, out):
    _shape_heuristic_kernel[(1,)](x, out, out.numel())


def _same(x):
    return x.new_empty(x.shape)


def test_autotune_config_with_pre_hook_is_refused():
    with pytest.raises(PluginError, match="pre_hook.*never run"):
        tta.triton(launch_hooked)


@pytest.mark.kernels
def test_user_configs_replace_the_decorators():
    spec = tta.triton(launch_hooked_with_block, configs=[{"BLOCK": 512}])
    assert not spec.autotuned
    (k,) = compile_specs([spec], [TensorType.dynamic(torch.float32, 1)], _same, cache=False, progress=False)
    assert k.meta["constexprs"]["BLOCK"] == 512 and k.grid[0] == "FloorDiv(i0_0 + 511, 512)"


@pytest.mark.kernels
def test_heuristic_of_a_dynamic_dim_is_refused():
    spec = tta.triton(launch_shape_heuristic)
    with pytest.raises(PluginError, match="BLOCK.*depends on input shapes"):
        compile_specs([spec], [TensorType.dynamic(torch.float32, 1)], _same, cache=False, progress=False)
    # With the dim static in the signature the heuristic is a constant.
    (k,) = compile_specs([spec], [TensorType.make(torch.float32, [64])], _same, cache=False, progress=False)
    assert k.meta["constexprs"]["BLOCK"] == 64


class _Gated(torch.nn.Module):
    """Regions backed by the Liger SwiGLU kernel and the autotuned kernel, through the public API."""

    def __init__(self, swiglu, axpy):
        super().__init__()
        self.swiglu, self.axpy = swiglu, axpy
        self.gate, self.up = torch.nn.Linear(16, 1000), torch.nn.Linear(16, 1000)

    def forward(self, x):
        a, b = self.gate(x), self.up(x)
        with tta.lower_as(self.swiglu):
            h = torch.nn.functional.silu(a) * b
        with tta.lower_as(self.axpy):
            return h * 0.5 + b


@pytest.mark.kernels
def test_library_and_autotuned_kernels_through_rewrite_and_compile_kernels():
    sw, ax = by_name("triton_liger_swiglu"), by_name("triton_autotuned_axpy")
    swiglu = tta.custom_plugin(kernel=tta.triton(sw.launch_fn, configs=list(sw.configs)), meta_impl=sw.meta, name="liger_swiglu_api")
    axpy = tta.custom_plugin(kernel=tta.triton(ax.launch_fn), meta_impl=ax.meta, name="autotuned_axpy_api")
    x = torch.randn(2, 3, 16)
    ep = torch.export.export(_Gated(swiglu, axpy), (x,), dynamic_shapes=({0: torch.export.Dim("batch", min=1, max=64)},))
    result = tta.rewrite(ep.run_decompositions())
    kernels = result.compile_kernels(sm=90, cache=False, pool="serial", progress=False)
    by_op = {op: ks for op, ks in kernels.items()}
    assert sorted(len(ks) for ks in by_op.values()) == [1, 3]
    (sk,) = [ks for ks in by_op.values() if len(ks) == 1][0]
    assert sk.meta["baked"]["gate_multiplier"] == 1.0 and sk.extras == ()
    tuned = [ks for ks in by_op.values() if len(ks) == 3][0]
    assert [dict(k.config)["num_warps"] for k in tuned] == [2, 4, 8]
