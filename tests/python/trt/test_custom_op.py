"""``tta.custom_op``: existing ``torch.library`` ops (``tta.examples.custom_ops``) made TensorRT AOT
plugins, compiled with plain ``torch_tensorrt.compile`` through Torch-TensorRT's real code over the
TensorRT stand-in, which records each engine's network and runs the plugin package's build."""

from __future__ import annotations

import pytest
import torch
import torch_tensorrt
from torch import nn
from trt_standin import network as standin, torch_tensorrt_env

import tensorrt as trt

torch_tensorrt_env.patch_runtime()

import tta  # noqa: E402
import tta.trt  # noqa: E402
from tta.aot.compile import compile_specs  # noqa: E402
from tta.aot.session import TensorType  # noqa: E402
from tta.examples import custom_ops as ex  # noqa: E402
from tta.trt import custom_op as co, qdp  # noqa: E402

SETTINGS = {"offload_module_to_cpu": True, "min_block_size": 1}
OPS = torch.ops.tta_examples


def _register(name, launch, configs=({"BLOCK": 256},), **kw):
    if f"tta_examples::{name}" not in co._ops:
        tta.custom_op(f"tta_examples::{name}", kernel=tta.triton(launch, configs=list(configs)), **kw)
    return co._ops[f"tta_examples::{name}"]


@pytest.fixture
def builds():
    standin.BUILDS.clear()
    yield standin.BUILDS
    standin.BUILDS.clear()


def _compile(model, inputs, dynamic_shapes=None):
    ep = torch.export.export(model, tuple(inputs), dynamic_shapes=dynamic_shapes)
    return torch_tensorrt.compile(ep, ir="dynamo", arg_inputs=list(inputs), **SETTINGS)


def _plugin_calls(builds):
    return [c[1] for b in builds for c in b.network.calls if c[0] == "add_plugin"]


def _built_kernels(call):
    return {k.tactic: k for k in call["layer"].kernels[0]}


class Axpb(nn.Module):
    def forward(self, x, y):
        # Tensors after a scalar; keyword-only arguments given at the call site; two call sites
        # with their own scalar values.
        a = OPS.axpb(0.5, x, y, n=3, relu=True, mode="sub")
        b = OPS.axpb(2.0, x, y, mode="add")
        return a, b


def test_scalars_before_tensors_kwargs_and_per_call_site_values(builds):
    op = _register("axpb", ex.launch_axpb)
    x, y = torch.randn(8, 64), torch.randn(64)
    _compile(Axpb(), (x, y))
    first, second = _plugin_calls(builds)
    # One plugin variant (same input types), two call sites with their own attribute values.
    assert first["plugin"] == second["plugin"] and first["inputs"] == second["inputs"]
    name = first["plugin"].split("::")[1]
    assert op.variants and name in op.variants.values()
    v1 = {"a": 0.5, "n": 3, "relu": True, "mode": "sub"}
    v2 = {"a": 2.0, "n": 1, "relu": False, "mode": "add"}
    assert {k: qdp._entries[name].attributes[i].decode(v) for i, (k, v) in enumerate(first["attrs"].items())} == v1
    assert {k: qdp._entries[name].attributes[i].decode(v) for i, (k, v) in enumerate(second["attrs"].items())} == v2
    # Each call site's kernel is the launch function compiled with its own values.
    for call, values in ((first, v1), (second, v2)):
        built = _built_kernels(call)
        metas = [TensorType("float32", (8, 64)), TensorType("float32", (64,))]
        spec = qdp.with_arguments(tta.triton(ex.launch_axpb, configs=[{"BLOCK": 256}]), values)
        (direct,) = compile_specs([spec], metas, [TensorType("float32", (8, 64))])
        (k,) = built.values()
        assert k.code == direct.code and k.kernel_name == direct.entry
    assert _built_kernels(first)[next(iter(_built_kernels(first)))].code != _built_kernels(second)[next(iter(_built_kernels(second)))].code
