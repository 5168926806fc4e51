"""``tta.custom_op`` as a drop-in for Torch-TensorRT's ``custom_op``: its arguments, positional or
by name (what tta cannot honour refused), a list of kernel specs (one tactic per spec and
config), ``supports_dynamic_shapes`` as Torch-TensorRT means it, a ``SymInt`` argument given a
constant, and broadcasting over dynamic dims in the fake impl. Through Torch-TensorRT's real code over the TensorRT stand-in."""

from __future__ import annotations

import inspect

import pytest
import torch
import torch_tensorrt
from torch import nn

import tta
import tta.trt
from tta.aot.compile import compile_specs
from tta.aot.session import TensorType
from tta.examples import custom_ops as ex
from tta.trt import custom_op as co
from tta.trt import qdp

_lib = torch.library.Library("tta_api", "FRAGMENT")
for _name in ("mul_specs", "mul_static", "mul_kwargs", "mul_positional", "mul_documented", "mul_again"):
    _lib.define(f"{_name}(Tensor x, Tensor y) -> Tensor")
    _lib.impl(_name, lambda x, y: x * y, "CompositeExplicitAutograd")
    torch.library.register_fake(f"tta_api::{_name}", lambda x, y: torch.empty_like(x), lib=_lib)
_lib.define("scale_by(Tensor x, SymInt k) -> Tensor")
_lib.impl("scale_by", lambda x, k: x * k, "CompositeExplicitAutograd")
torch.library.register_fake("tta_api::scale_by", lambda x, k: torch.empty_like(x), lib=_lib)


class Calls(nn.Module):
    def __init__(self, op):
        super().__init__()
        self.op = op

    def forward(self, x, y):
        return self.op(x, y)


def launch_pair_twice_per_program(x, y, out, *, BLOCK):
    """Another launch function of the same kernel: a spec of its own."""
    ex.launch_pair(x, y, out, BLOCK=2 * BLOCK)


def test_a_list_of_specs_is_one_tactic_per_spec_and_config(standin_trt):
    specs = [
        tta.triton(ex.launch_pair, configs=[{"BLOCK": 128}, {"BLOCK": 256}]),
        tta.triton(launch_pair_twice_per_program, configs=[{"BLOCK": 256}]),
    ]
    op = tta.custom_op("tta_api::mul_specs", kernel=specs)
    x, y = torch.randn(4, 100), torch.randn(4, 100)
    standin_trt.compile(Calls(torch.ops.tta_api.mul_specs), (x, y))
    (call,) = standin_trt.plugin_calls()
    built = {k.tactic: k for k in call["layer"].kernels[0]}
    (variant,) = op.variants.values()
    ids = qdp._entries[variant].tactic_ids
    assert sorted(built) == sorted(ids) and len(ids) == 3
    # In spec then config order: 400 elements in blocks of 128, 256, and 2*256.
    assert [built[t].launch_values([(4, 100), (4, 100)])["grid_x"] for t in ids] == [4, 2, 1]


def test_the_signature_is_torch_tensorrts_plus_kernel():
    # Same names, order and kinds as torch_tensorrt.dynamo.conversion.plugins.custom_op, so a
    # call to it is a call to tta.custom_op; kernel= is the one addition, keyword-only.
    theirs = inspect.signature(torch_tensorrt.dynamo.conversion.plugins.custom_op).parameters
    ours = dict(inspect.signature(tta.custom_op).parameters)
    assert ours.pop("kernel").kind is inspect.Parameter.KEYWORD_ONLY
    assert [(p.name, p.kind) for p in ours.values()] == [(p.name, p.kind) for p in theirs.values()]
    # Same defaults but one: tta's plugins take any input shape, so dynamic shapes are supported
    # unless the caller says otherwise.
    differ = {n for n in theirs if theirs[n].default != ours[n].default}
    assert differ == {"supports_dynamic_shapes"} and ours["supports_dynamic_shapes"].default is True


def test_a_positional_call_as_in_torch_tensorrt_is_honoured(standin_trt):
    from torch_tensorrt.dynamo.conversion._ConverterRegistry import DYNAMO_ATEN_CONVERTERS, ConverterPriority, dynamo_tensorrt_converter

    def only_wide(node, settings):
        return node.args[0].meta["val"].shape[-1] >= 32

    overload = torch.ops.tta_api.mul_positional.default

    @dynamo_tensorrt_converter(overload, supports_dynamic_shapes=True, capability_validator=lambda node, settings: False)
    def generic(ctx, target, args, kwargs, name):
        raise AssertionError("declines every node")

    # custom_op(op_name, capability_validator, priority, supports_dynamic_shapes, requires_output_allocator)
    tta.custom_op(
        "tta_api::mul_positional",
        only_wide,
        ConverterPriority.HIGH,
        False,
        False,
        kernel=tta.triton(ex.launch_pair, configs=[{"BLOCK": 256}]),
    )
    # HIGH: before the converter registered earlier; static shapes only.
    first = DYNAMO_ATEN_CONVERTERS[overload][0]
    assert first.capability_validator is only_wide and first.supports_dynamic_shapes is False
    model = Calls(torch.ops.tta_api.mul_positional)
    standin_trt.compile(model, (torch.randn(2, 8), torch.randn(2, 8)))  # declined by the validator
    batch = torch.export.Dim("batch", min=2, max=8)
    standin_trt.compile(model, (torch.randn(4, 64), torch.randn(4, 64)), ({0: batch}, {0: batch}))  # dynamic
    assert standin_trt.plugin_calls() == []
    standin_trt.compile(model, (torch.randn(4, 64), torch.randn(4, 64)))
    (call,) = standin_trt.plugin_calls()
    assert call["layer"].name.startswith("tta_api::mul_positional/")


def test_torch_tensorrt_keywords_are_accepted_by_name(standin_trt):
    from torch_tensorrt.dynamo.conversion._ConverterRegistry import ConverterPriority

    # As Torch-TensorRT's documentation calls it, every keyword given, plus kernel=.
    tta.custom_op(
        "tta_api::mul_documented",
        capability_validator=None,
        priority=ConverterPriority.STANDARD,
        supports_dynamic_shapes=True,
        requires_output_allocator=False,
        use_aot_if_available=True,
        kernel=tta.triton(ex.launch_pair, configs=[{"BLOCK": 256}]),
    )
    batch = torch.export.Dim("batch", min=2, max=8)
    standin_trt.compile(Calls(torch.ops.tta_api.mul_documented), (torch.randn(4, 16), torch.randn(4, 16)), ({0: batch}, {0: batch}))
    (call,) = standin_trt.plugin_calls()
    assert call["layer"].name.startswith("tta_api::mul_documented/")


@pytest.mark.parametrize(
    "args, kwargs, message",
    [
        ((), {"requires_output_allocator": True}, r"requires_output_allocator=True means data-dependent output shapes"),
        ((None, None, True, True), {}, r"requires_output_allocator=True means data-dependent output shapes"),
        ((), {"use_aot_if_available": False}, r"use_aot_if_available=False asks for a JIT plugin.*ahead-of-time only"),
        ((), {"_aot_register": lambda: None}, r"_aot_register registers another aot_impl.*leave _aot_register out"),
        ((), {"capability_validator": "wide"}, r"capability_validator must be a function"),
    ],
    ids=["output_allocator", "output_allocator_positional", "jit", "aot_register", "validator"],
)
def test_what_tta_cannot_honour_is_refused_by_name(args, kwargs, message):
    spec = tta.triton(ex.launch_pair, configs=[{"BLOCK": 256}])
    with pytest.raises(tta.PluginError, match=r"tta\.custom_op\('tta_api::mul_kwargs'\): " + message):
        tta.custom_op("tta_api::mul_kwargs", *args, kernel=spec, **kwargs)
    assert "tta_api::mul_kwargs" not in co._ops


def test_a_kernel_given_where_torch_tensorrt_has_the_validator_is_refused():
    spec = tta.triton(ex.launch_pair, configs=[{"BLOCK": 256}])
    with pytest.raises(tta.PluginError, match=r"give kernel=.*second positional argument is capability_validator"):
        tta.custom_op("tta_api::mul_kwargs", spec)


def test_supports_dynamic_shapes_false_declines_dynamic_call_sites(standin_trt):
    tta.custom_op("tta_api::mul_static", kernel=tta.triton(ex.launch_pair, configs=[{"BLOCK": 256}]), supports_dynamic_shapes=False)
    model = Calls(torch.ops.tta_api.mul_static)
    x, y = torch.randn(4, 16), torch.randn(4, 16)
    batch = torch.export.Dim("batch", min=2, max=8)
    # As in Torch-TensorRT: a converter without dynamic-shape support is not used on a node with
    # dynamic shapes; the op runs in PyTorch.
    standin_trt.compile(model, (x, y), ({0: batch}, {0: batch}))
    assert standin_trt.plugin_calls() == []
    standin_trt.compile(model, (x, y))
    (call,) = standin_trt.plugin_calls()
    assert call["layer"].name.startswith("tta_api::mul_static/")


def test_a_symint_argument_given_a_constant_is_an_attribute(standin_trt):
    spec = tta.triton(ex.launch_tri_scale, configs=[{"BLOCK": 256}])
    tta.custom_op("tta_api::scale_by", kernel=spec)

    class M(nn.Module):
        def forward(self, x):
            return torch.ops.tta_api.scale_by(x, 3), torch.ops.tta_api.scale_by(x, 5)

    x = torch.randn(3, 40)
    standin_trt.compile(M(), (x,))
    for call, k in zip(standin_trt.plugin_calls(), (3, 5)):
        name = call["plugin"].split("::")[1]
        assert qdp._entries[name].attributes[0].decode(call["attrs"]["k"]) == k
        (built,) = call["layer"].kernels[0]
        (direct,) = compile_specs([qdp.with_arguments(spec, {"k": k})], [TensorType("float32", (3, 40))], [TensorType("float32", (3, 40))])
        assert built.code == direct.code


def test_broadcasting_over_dynamic_dims_shares_the_symbol(standin_trt):
    if "tta_examples::axpb" not in co._ops:
        tta.custom_op("tta_examples::axpb", kernel=tta.triton(ex.launch_axpb, configs=[{"BLOCK": 256}]))

    class M(nn.Module):
        def forward(self, x, y):
            return torch.ops.tta_examples.axpb(2.0, x, y)

    b, c = torch.export.Dim("b", min=2, max=64), torch.export.Dim("c", min=2, max=512)
    x, y = torch.randn(8, 48), torch.randn(48)
    standin_trt.compile(M(), (x, y), ({0: b, 1: c}, {0: c}))
    (build,) = standin_trt.builds
    (call,) = standin_trt.plugin_calls()
    entry = qdp._entries[call["plugin"].split("::")[1]]
    # y's only dim is x's dim 1 (the broadcast the fake impl computes needs them equal); each
    # other dim has its own symbol, and the output is (i0_0, i0_1).
    assert [m.shape for m in entry.input_metas] == [(None, None), ("i0_1",)]
    assert entry.signature({"a": 2.0, "n": 1, "relu": False, "mode": "add"})[1] == [("i0_0", "i0_1")]
    assert tuple(build.network.outputs[0].shape) == (-1, -1)
    (k,) = call["layer"].kernels[0]
    for rows, cols in ((2, 2), (64, 512), (7, 33)):
        assert k.launch_values([(rows, cols), (cols,)])["grid_x"] == -(-rows * cols // 256)


def test_calling_again_with_other_converter_arguments_is_refused():
    from torch_tensorrt.dynamo.conversion._ConverterRegistry import ConverterPriority

    # The converter is registered once per process: other arguments would not take effect.
    spec = tta.triton(ex.launch_pair, configs=[{"BLOCK": 256}])
    first = tta.custom_op("tta_api::mul_again", kernel=spec)
    assert tta.custom_op("tta_api::mul_again", None, ConverterPriority.STANDARD, True, kernel=spec) is first
    for args in ((lambda node, settings: True,), (None, ConverterPriority.HIGH), (None, ConverterPriority.STANDARD, False)):
        with pytest.raises(tta.PluginError, match=r"tta_api::mul_again.*already called with other converter arguments"):
            tta.custom_op("tta_api::mul_again", *args, kernel=spec)
