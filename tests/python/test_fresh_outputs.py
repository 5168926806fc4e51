"""A fake impl or meta_impl that returns one of its inputs (``return x``, or a view of it), as
Torch-TensorRT's own automatic-plugin examples do (``elementwise_mul``, ``add_one``), stands
for outputs of their own: the kernel gets a fresh output buffer, never its input twice."""

import pytest
import torch

import tta
from tta.aot.compile import compile_specs
from tta.aot.session import TensorType
from tta.examples import custom_ops as ex


def launch_double(x, out, *, BLOCK=256):
    ex.launch_flatten_scale(x, out, k=2, BLOCK=BLOCK)


SPEC = tta.triton(launch_double, configs=[{"BLOCK": 256}])
RETURNS_INPUT = {"input": lambda x: x, "view": lambda x: x.view(x.shape), "slice": lambda x: x[:]}


@pytest.mark.parametrize("meta", list(RETURNS_INPUT.values()), ids=list(RETURNS_INPUT))
@pytest.mark.kernels
def test_a_kernel_is_compiled_with_an_output_of_its_own(meta):
    # Before: "kernel scale_kernel: input 0 is passed twice; TensorRT passes each buffer once".
    (k,) = compile_specs([SPEC], [TensorType("float32", (None, 64))], meta, cache=False)
    assert (k.input_dtypes, k.output_dtypes) == (("float32",), ("float32",))
    assert [list(map(str, s)) for s in k.output_shapes] == [["i0_0", "64"]]


@pytest.mark.parametrize("meta", list(RETURNS_INPUT.values()), ids=list(RETURNS_INPUT))
@pytest.mark.kernels
def test_a_region_whose_meta_impl_returns_its_input(meta):
    plugin = tta.custom_plugin(name="add_one", kernel=SPEC, meta_impl=meta)

    class M(torch.nn.Module):
        def forward(self, x):
            with tta.lower_as(plugin):
                y = x + 1
            return y * x  # the input is read after the op: the op must not have written it

    x = torch.randn(4, 64)
    res = tta.rewrite(torch.export.export(M(), (x,)))
    (node,) = [n for n in res.program.graph.nodes if getattr(n.target, "namespace", None) == "tta"]
    torch.testing.assert_close(res.program.module()(x), M()(x))
    # The op's fake impl gives a tensor of its own, which export traces as a new value.
    with torch._subclasses.fake_tensor.FakeTensorMode() as mode:
        fx = mode.from_tensor(x)
        out = node.target(fx)
        assert out is not fx and out.untyped_storage()._cdata != fx.untyped_storage()._cdata
    again = torch.export.export(res.program.module(), (x,)).run_decompositions()
    torch.testing.assert_close(again.module()(x), M()(x))
    (compiled,) = res.compile_kernels()[node.target._opname]
    assert (compiled.input_dtypes, compiled.output_dtypes) == (("float32",), ("float32",))
