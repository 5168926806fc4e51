"""``tta.custom_op`` as a drop-in for Torch-TensorRT's ``custom_op``: its keyword arguments, a list
of kernel specs (one tactic per spec and config), ``supports_dynamic_shapes`` as Torch-TensorRT
means it, a ``SymInt`` argument given a constant, and broadcasting over dynamic dims in the fake
impl. Through Torch-TensorRT's real code over the TensorRT stand-in."""

from __future__ import annotations

import pytest
import torch
import torch_tensorrt
from torch import nn
from trt_standin import network as standin, torch_tensorrt_env

torch_tensorrt_env.patch_runtime()

import tta  # noqa: E402
import tta.trt  # noqa: E402
from tta.aot.compile import compile_specs  # noqa: E402
from tta.aot.session import TensorType  # noqa: E402
from tta.examples import custom_ops as ex  # noqa: E402
from tta.trt import custom_op as co, qdp  # noqa: E402

SETTINGS = {"offload_module_to_cpu": True, "min_block_size": 1}

_lib = torch.library.Library("tta_api", "FRAGMENT")
for _name in ("mul_specs", "mul_static", "mul_kwargs"):
    _lib.define(f"{_name}(Tensor x, Tensor y) -> Tensor")
    _lib.impl(_name, lambda x, y: x * y, "CompositeExplicitAutograd")
    torch.library.register_fake(f"tta_api::{_name}", lambda x, y: torch.empty_like(x), lib=_lib)
_lib.define("scale_by(Tensor x, SymInt k) -> Tensor")
_lib.impl("scale_by", lambda x, k: x * k, "CompositeExplicitAutograd")
torch.library.register_fake("tta_api::scale_by", lambda x, k: torch.empty_like(x), lib=_lib)


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


class Calls(nn.Module):
    def __init__(self, op):
        super().__init__()
        self.op = op

    def forward(self, x, y):
        return self.op(x, y)


def launch_pair_twice_per_program(x, y, out, *, BLOCK):
    """Another launch function of the same kernel: a spec of its own."""
    ex.launch_pair(x, y, out, BLOCK=2 * BLOCK)


def test_a_list_of_specs_is_one_tactic_per_spec_and_config(builds):
    specs = [tta.triton(ex.launch_pair, configs=[{"BLOCK": 128}, {"BLOCK": 256}]), tta.triton(launch_pair_twice_per_program, configs=[{"BLOCK": 256}])]
    op = tta.custom_op("tta_api::mul_specs", kernel=specs)
    x, y = torch.randn(4, 100), torch.randn(4, 100)
    _compile(Calls(torch.ops.tta_api.mul_specs), (x, y))
    (call,) = _plugin_calls(builds)
    built = {k.tactic: k for k in call["layer"].kernels[0]}
    (variant,) = op.variants.values()
    ids = qdp._entries[variant].tactic_ids
    assert sorted(built) == sorted(ids) and len(ids) == 3
    # In spec then config order: 400 elements in blocks of 128, 256, and 2*256.
    assert [built[t].launch_values([(4, 100), (4, 100)])["grid_x"] for t in ids] == [4, 2, 1]


def test_torch_tensorrt_keywords_are_accepted_by_name():
    # The keywords of torch_tensorrt.dynamo.conversion.plugins.custom_op, given as there.
    tta.custom_op(
        "tta_api::mul_kwargs",
        kernel=tta.triton(ex.launch_pair, configs=[{"BLOCK": 256}]),
        capability_validator=None,
        supports_dynamic_shapes=True,
        requires_output_allocator=False,
        use_aot_if_available=True,
    )
    with pytest.raises(tta.PluginError, match=r"tta_api::mul_kwargs.*requires_output_allocator=True means data-dependent output shapes"):
        tta.custom_op("tta_api::mul_kwargs", kernel=tta.triton(ex.launch_pair, configs=[{"BLOCK": 256}]), requires_output_allocator=True)


def test_supports_dynamic_shapes_false_declines_dynamic_call_sites(builds):
    tta.custom_op("tta_api::mul_static", kernel=tta.triton(ex.launch_pair, configs=[{"BLOCK": 256}]), supports_dynamic_shapes=False)
    model = Calls(torch.ops.tta_api.mul_static)
    x, y = torch.randn(4, 16), torch.randn(4, 16)
    batch = torch.export.Dim("batch", min=2, max=8)
    # As in Torch-TensorRT: a converter without dynamic-shape support is not used on a node with
    # dynamic shapes; the op runs in PyTorch.
    _compile(model, (x, y), ({0: batch}, {0: batch}))
    assert _plugin_calls(builds) == []
    _compile(model, (x, y))
    (call,) = _plugin_calls(builds)
    assert call["layer"].name.startswith("tta_api::mul_static/")


def test_a_symint_argument_given_a_constant_is_an_attribute(builds):
    spec = tta.triton(ex.launch_tri_scale, configs=[{"BLOCK": 256}])
    tta.custom_op("tta_api::scale_by", kernel=spec)

    class M(nn.Module):
        def forward(self, x):
            return torch.ops.tta_api.scale_by(x, 3), torch.ops.tta_api.scale_by(x, 5)

    x = torch.randn(3, 40)
    _compile(M(), (x,))
    for call, k in zip(_plugin_calls(builds), (3, 5)):
        name = call["plugin"].split("::")[1]
        assert qdp._entries[name].attributes[0].decode(call["attrs"]["k"]) == k
        (built,) = call["layer"].kernels[0]
        (direct,) = compile_specs([qdp.with_arguments(spec, {"k": k})], [TensorType("float32", (3, 40))], [TensorType("float32", (3, 40))])
        assert built.code == direct.code


def test_broadcasting_over_dynamic_dims_shares_the_symbol(builds):
    if "tta_examples::axpb" not in co._ops:
        tta.custom_op("tta_examples::axpb", kernel=tta.triton(ex.launch_axpb, configs=[{"BLOCK": 256}]))

    class M(nn.Module):
        def forward(self, x, y):
            return torch.ops.tta_examples.axpb(2.0, x, y)

    b, c = torch.export.Dim("b", min=2, max=64), torch.export.Dim("c", min=2, max=512)
    x, y = torch.randn(8, 48), torch.randn(48)
    _compile(M(), (x, y), ({0: b, 1: c}, {0: c}))
    (build,) = builds
    (call,) = _plugin_calls(builds)
    entry = qdp._entries[call["plugin"].split("::")[1]]
    # y's only dim is x's dim 1 (the broadcast the fake impl computes needs them equal); each
    # other dim has its own symbol, and the output is (i0_0, i0_1).
    assert [m.shape for m in entry.input_metas] == [(None, None), ("i0_1",)]
    assert entry.signature({"a": 2.0, "n": 1, "relu": False, "mode": "add"})[1] == [("i0_0", "i0_1")]
    assert tuple(build.network.outputs[0].shape) == (-1, -1)
    (k,) = call["layer"].kernels[0]
    for rows, cols in ((2, 2), (64, 512), (7, 33)):
        assert k.launch_values([(rows, cols), (cols,)])["grid_x"] == -(-rows * cols // 256)
