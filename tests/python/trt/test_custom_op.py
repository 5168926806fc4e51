"""``tta.custom_op``: existing ``torch.library`` ops (``tta.examples.custom_ops``) made TensorRT AOT
plugins, compiled with plain ``torch_tensorrt.compile`` through Torch-TensorRT's real code over the
TensorRT stand-in, which records each engine's network and runs the plugin package's build."""

from __future__ import annotations

import pytest
import tensorrt as trt
import torch
from torch import nn

import tta
import tta.trt
from tta.aot.compile import compile_specs
from tta.aot.session import TensorType
from tta.examples import custom_ops as ex
from tta.trt import custom_op as co
from tta.trt import qdp

OPS = torch.ops.tta_examples


def _register(name, launch, configs=({"BLOCK": 256},), **kw):
    if f"tta_examples::{name}" not in co._ops:
        tta.custom_op(f"tta_examples::{name}", kernel=tta.triton(launch, configs=list(configs)), **kw)
    return co._ops[f"tta_examples::{name}"]


def _built_kernels(call):
    return {k.tactic: k for k in call["layer"].kernels[0]}


class Axpb(nn.Module):
    def forward(self, x, y):
        # Tensors after a scalar; keyword-only arguments given at the call site; two call sites
        # with their own scalar values.
        a = OPS.axpb(0.5, x, y, n=3, relu=True, mode="sub")
        b = OPS.axpb(2.0, x, y, mode="add")
        return a, b


def test_scalars_before_tensors_kwargs_and_per_call_site_values(standin_trt):
    op = _register("axpb", ex.launch_axpb)
    x, y = torch.randn(8, 64), torch.randn(64)
    standin_trt.compile(Axpb(), (x, y))
    first, second = standin_trt.plugin_calls()
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


def test_optional_tensor_present_and_absent_are_two_variants(standin_trt):
    op = _register("add_bias", ex.launch_bias)

    class M(nn.Module):
        def forward(self, x, b):
            return OPS.add_bias(x, b), OPS.add_bias(x, bias=None), OPS.add_bias(x)

    x, b = torch.randn(4, 32), torch.randn(32)
    standin_trt.compile(M(), (x, b))
    with_bias, without, default = standin_trt.plugin_calls()
    assert with_bias["inputs"] == ["x", "b"] and without["inputs"] == ["x"] and default["inputs"] == ["x"]
    assert without["plugin"] == default["plugin"] != with_bias["plugin"]
    assert len(op.variants) == 2
    # Without the bias the kernel takes one input pointer: the compiled HAS_BIAS=False branch.
    (k,) = _built_kernels(without).values()
    assert k.code.count(b".param .u64") < next(iter(_built_kernels(with_bias).values())).code.count(b".param .u64")


def test_dtype_changing_op_with_two_outputs(standin_trt):
    _register("split_sign", ex.launch_split)

    class M(nn.Module):
        def forward(self, x):
            return OPS.split_sign(x)

    x = torch.randn(6, 10)
    standin_trt.compile(M(), (x,), ({0: torch.export.Dim("b", min=2, max=32)},))
    (build,) = standin_trt.builds
    (call,) = standin_trt.plugin_calls()
    layer = call["layer"]
    # Output types from the fake impl (float16, int32), never input 0's float32.
    assert [layer.get_output(i).dtype for i in range(2)] == [trt.float16, trt.int32]
    assert [tuple(t.shape) for t in build.network.outputs] == [(-1, 10), (-1, 10)]
    assert [c[1]["dtype"] for c in build.network.calls if c[0] == "mark_output"] == [trt.DataType.HALF, trt.DataType.INT32]


def test_shape_check_in_the_fake_impl_unifies_dims(standin_trt):
    _register("pair_mul", ex.launch_pair)

    class M(nn.Module):
        def forward(self, x, y):
            return OPS.pair_mul(x, y)

    batch = torch.export.Dim("batch", min=2, max=64)
    x, y = torch.randn(4, 16), torch.randn(4, 16)
    standin_trt.compile(M(), (x, y), ({0: batch}, {0: batch}))
    (call,) = standin_trt.plugin_calls()
    name = call["plugin"].split("::")[1]
    # y's batch dim is x's symbol: torch._check(x.shape == y.shape) holds instead of failing on
    # two distinct hints.
    assert [m.shape for m in qdp._entries[name].input_metas] == [(None, 16), ("i0_0", 16)]
    (k,) = _built_kernels(call).values()
    for b in (2, 5, 64):
        assert k.launch_values([(b, 16), (b, 16)])["grid_x"] == -(-b * 16 // 256)


def test_dims_related_by_an_expression_keep_the_relation(standin_trt):
    _register("add_tiled", ex.launch_tiled)

    class M(nn.Module):
        def forward(self, x, y):
            return OPS.add_tiled(x, y)

    b = torch.export.Dim("b", min=2, max=32)
    x, y = torch.randn(3, 16), torch.randn(6, 16)
    standin_trt.compile(M(), (x, y), ({0: b}, {0: 2 * b}))
    (call,) = standin_trt.plugin_calls()
    name = call["plugin"].split("::")[1]
    # y's rows are 2*i0_0, as the export knows, so torch._check(y.shape[0] == 2 * x.shape[0]) holds.
    assert [m.shape for m in qdp._entries[name].input_metas] == [(None, 16), ("2*i0_0", 16)]
    (k,) = _built_kernels(call).values()
    assert k.launch_values([(5, 16), (10, 16)])["grid_x"] == -(-10 * 16 // 256)


def test_broadcasting_and_reshape_in_the_fake_impl(standin_trt):
    _register("flatten_scale", ex.launch_flatten_scale)

    class M(nn.Module):
        def forward(self, x):
            return OPS.flatten_scale(x, 3)

    x = torch.randn(4, 6, 8)
    standin_trt.compile(M(), (x,), ({0: torch.export.Dim("b", min=1, max=16), 1: torch.export.Dim("c", min=2, max=16)},))
    (build,) = standin_trt.builds
    assert tuple(build.network.outputs[0].shape) == (-1, -1)
    (call,) = standin_trt.plugin_calls()
    name = call["plugin"].split("::")[1]
    # One symbol per input dim; the output is (i0_0, i0_1*8).
    assert qdp._entries[name].signature({"k": 3})[1] == [("i0_0", "8*i0_1")]


def test_triton_op(standin_trt):
    _register("tri_scale", ex.launch_tri_scale)

    class M(nn.Module):
        def forward(self, x):
            return OPS.tri_scale(x, 5)

    x = torch.randn(3, 40)
    standin_trt.compile(M(), (x,))
    (call,) = standin_trt.plugin_calls()
    assert call["aot"] is True and call["layer"].name.startswith("tta_examples::tri_scale/")
    (k,) = _built_kernels(call).values()
    assert k.code.startswith(b"//")


# -- refusals, each naming the op and the argument ---------------------------------------------

_lib = torch.library.Library("tta_refused", "FRAGMENT")
_lib.define("inplace(Tensor(a!) x, int n) -> Tensor")
_lib.define("opt_scalar(Tensor x, int? n) -> Tensor")
_lib.define("cast(Tensor x, ScalarType dtype) -> Tensor")
_lib.define("nonzero_like(Tensor x) -> Tensor")
_lib.define("tagged(Tensor x) -> Tensor", tags=(torch.Tag.dynamic_output_shape,))
_lib.define("sized(Tensor x, SymInt n) -> Tensor")
_lib.impl("sized", lambda x, n: x * n, "CompositeExplicitAutograd")
torch.library.register_fake("tta_refused::sized", lambda x, n: torch.empty_like(x), lib=_lib)


@torch.library.register_fake("tta_refused::nonzero_like", lib=_lib)
def _nonzero_fake(x):
    return x.new_empty(torch.library.get_ctx().new_dynamic_size())


SPEC = tta.triton(ex.launch_pair, configs=[{"BLOCK": 256}])


@pytest.mark.parametrize(
    "op, pattern",
    [
        ("tta_refused::inplace", r"tta_refused::inplace.*argument 'x' is mutated"),
        ("tta_refused::opt_scalar", r"tta_refused::opt_scalar.*argument 'n' is Optional\[int\]: .*cannot be None"),
        ("tta_refused::cast", r"tta_refused::cast.*argument 'dtype' has type ScalarType"),
        ("tta_refused::tagged", r"tta_refused::tagged.*tagged dynamic_output_shape"),
        ("tta_refused::no_such_op", r"no such torch op"),
    ],
)
def test_refused_at_registration(op, pattern):
    with pytest.raises(tta.PluginError, match=pattern):
        tta.custom_op(op, kernel=SPEC)


def test_data_dependent_output_refused_when_compiled(standin_trt):
    _lib.impl("nonzero_like", lambda x: x.flatten()[: int((x > 0).sum())].clone(), "CompositeExplicitAutograd")
    tta.custom_op("tta_refused::nonzero_like", kernel=tta.triton(ex.launch_tri_scale, configs=[{"BLOCK": 256, "k": 1}]))

    class M(nn.Module):
        def forward(self, x):
            return torch.ops.tta_refused.nonzero_like(x)

    with pytest.raises(tta.PluginError, match=r"tta_refused::nonzero_like.*output 0 dim 0 is data-dependent"):
        standin_trt.compile(M(), (torch.randn(4, 4),))
    assert standin_trt.builds == []


def test_int_argument_computed_from_shapes_refused():
    """An int argument that is a shape at this call site reaches the converter as a TensorRT
    tensor: an attribute must be fixed when the engine is built."""
    from types import SimpleNamespace

    from tta.trt import converter

    op = tta.custom_op("tta_refused::sized", kernel=tta.triton(ex.launch_flatten_scale, configs=[{"BLOCK": 256}]))

    class M(nn.Module):
        def forward(self, x):
            return torch.ops.tta_refused.sized(x, x.shape[0])

    ep = torch.export.export(M(), (torch.randn(4, 4),), dynamic_shapes=({0: torch.export.Dim("b", min=2, max=8)},))
    (node,) = [n for n in ep.graph.nodes if n.target is torch.ops.tta_refused.sized.default]
    assert isinstance(node.args[1], torch.fx.Node)  # the size, not a constant
    ctx = SimpleNamespace(current_node=node, net=None, compilation_settings=None)
    args = (trt.ITensor("x", [-1, 4], trt.float32), trt.ITensor("n", [], trt.int64))
    with pytest.raises(tta.PluginError, match=r"tta_refused::sized .*argument n is computed from the model's tensors or shapes"):
        converter.convert_custom_op(op, ctx, node.target, args, {}, node.name)


def test_same_call_again_is_a_no_op_other_kernels_an_error():
    op = _register("pair_mul", ex.launch_pair)
    assert tta.custom_op("tta_examples::pair_mul", kernel=tta.triton(ex.launch_pair, configs=[{"BLOCK": 256}])) is op
    with pytest.raises(tta.PluginError, match=r"tta_examples::pair_mul.*already called with other kernels"):
        tta.custom_op("tta_examples::pair_mul", kernel=tta.triton(ex.launch_pair, configs=[{"BLOCK": 512}]))


def test_validator_and_priority_mean_what_they_mean_in_torch_tensorrt(standin_trt):
    from torch_tensorrt.dynamo.conversion._ConverterRegistry import DYNAMO_ATEN_CONVERTERS, ConverterPriority, dynamo_tensorrt_converter

    seen = []

    def only_wide(node, settings):
        seen.append((node.target, type(settings).__name__))
        return node.args[0].meta["val"].shape[-1] >= 32

    _register("pair_mul", ex.launch_pair)  # STANDARD, from the earlier test or now
    lib = torch.library.Library("tta_valid", "FRAGMENT")
    lib.define("mul(Tensor x, Tensor y) -> Tensor")
    lib.impl("mul", lambda x, y: x * y, "CompositeExplicitAutograd")
    torch.library.register_fake("tta_valid::mul", lambda x, y: torch.empty_like(x), lib=lib)
    overload = torch.ops.tta_valid.mul.default

    @dynamo_tensorrt_converter(overload, supports_dynamic_shapes=True, capability_validator=lambda node, settings: False)
    def generic(ctx, target, args, kwargs, name):
        raise AssertionError("HIGH priority puts tta's converter first")

    tta.custom_op("tta_valid::mul", kernel=SPEC, capability_validator=only_wide, priority=ConverterPriority.HIGH)
    assert DYNAMO_ATEN_CONVERTERS[overload][0].capability_validator is only_wide

    class M(nn.Module):
        def forward(self, x, y, a, b):
            return torch.ops.tta_valid.mul(x, y), torch.ops.tta_valid.mul(a, b)

    ins = (torch.randn(2, 64), torch.randn(2, 64), torch.randn(2, 8), torch.randn(2, 8))
    standin_trt.compile(M(), ins)
    assert (overload, "CompilationSettings") in seen
    # The narrow call site was declined by the validator (and by the generic converter's), so it
    # runs in PyTorch; the wide one is a plugin.
    calls = standin_trt.plugin_calls()
    assert len(calls) == 1 and calls[0]["inputs"] == ["x", "y"]


# -- the seed RFC's own example (torchtrt_ex::triton_circular_pad: tta.examples.custom_ops) -------

import triton


class CircularPad(nn.Module):
    def forward(self, x):
        return torch.ops.torchtrt_ex.triton_circular_pad(x, [1, 1, 2, 0])


def test_seed_rfc_example(standin_trt):
    spec = tta.triton(ex.launch_circular_pad, configs=[{"BLOCK_SIZE": 256}])
    if tuple(int(p) for p in trt.__version__.split(".")[:2]) < (11, 3):
        with pytest.raises(tta.PluginError, match=r"torchtrt_ex::triton_circular_pad.*attribute 'padding' is a list of int"):
            tta.custom_op("torchtrt_ex::triton_circular_pad", kernel=spec, supports_dynamic_shapes=True)
        return
    tta.custom_op("torchtrt_ex::triton_circular_pad", kernel=spec, supports_dynamic_shapes=True)
    x = torch.randn(2, 3, 8, 8)
    standin_trt.compile(CircularPad(), (x,), ({0: torch.export.Dim("b", min=2, max=4)},))
    (build,) = standin_trt.builds
    (call,) = standin_trt.plugin_calls()
    assert list(call["attrs"]["padding"]) == [1, 1, 2, 0]
    assert tuple(build.network.outputs[0].shape) == (-1, 3, 10, 10)
    (k,) = _built_kernels(call).values()
    assert k.launch_values([(2, 3, 8, 8)])["grid_x"] == -(-2 * 3 * 10 * 10 // 256)


# -- an autotuned kernel: the decorator's configs are the tactics, the op's arguments still arrive --

_lib_at = torch.library.Library("tta_autotuned", "FRAGMENT")
_lib_at.define("scaled_add(Tensor x, Tensor y, *, float scale) -> Tensor")
_lib_at.impl("scaled_add", lambda x, y, *, scale: x * scale + y, "CompositeExplicitAutograd")
torch.library.register_fake("tta_autotuned::scaled_add", lambda x, y, *, scale: torch.empty_like(x), lib=_lib_at)


from tta.examples.kernels.autotuned import axpy_kernel


def launch_scaled_add(x, y, out, *, scale):
    n = out.numel()
    axpy_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"] * meta["UNROLL"]),)](x, y, out, n, scale)


def test_autotuned_kernel_gets_the_op_arguments(standin_trt):
    spec = tta.triton(launch_scaled_add)
    assert spec.autotuned and len(spec.configs) == 3
    tta.custom_op("tta_autotuned::scaled_add", kernel=spec)

    class M(nn.Module):
        def forward(self, x, y):
            return torch.ops.tta_autotuned.scaled_add(x, y, scale=0.25), torch.ops.tta_autotuned.scaled_add(x, y, scale=4.0)

    x, y = torch.randn(4, 100), torch.randn(4, 100)
    standin_trt.compile(M(), (x, y))
    quarter, four = (_built_kernels(c) for c in standin_trt.plugin_calls())
    assert len(quarter) == len(four) == 3  # one tactic per triton.Config
    # The scale is compiled into each call site's kernels: same tactics, different code.
    assert sorted(quarter) == sorted(four)
    assert all(quarter[t].code != four[t].code for t in quarter)
