"""``tta.custom_op`` refuses ops that write an input: declared in the schema (``Tensor(a!)``,
``mutates_args``) when registered, and undeclared (the kernel stores through an input pointer)
when a model using the op is compiled, from the kernel's PTX; each refusal names the op and the
argument. Through Torch-TensorRT's real code over the TensorRT stand-in."""

from __future__ import annotations

import pytest
import torch
import torch_tensorrt
import triton
import triton.language as tl
from torch import nn
from trt_standin import network as standin
from trt_standin import torch_tensorrt_env

torch_tensorrt_env.patch_runtime()

import tta  # noqa: E402
import tta.trt  # noqa: E402
from tta import _core  # noqa: E402
from tta.aot.compile import compile_specs  # noqa: E402
from tta.aot.session import TensorType  # noqa: E402
from tta.examples import custom_ops as ex  # noqa: E402
from tta.trt import mutation  # noqa: E402

SETTINGS = {"offload_module_to_cpu": True, "min_block_size": 1}


@pytest.fixture
def builds():
    standin.BUILDS.clear()
    yield standin.BUILDS
    standin.BUILDS.clear()


@triton.jit
def scale_kernel(x_ptr, y_ptr, out_ptr, n, WRITE_X: tl.constexpr, WRITE_Y: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x_ptr + offs, mask=mask) * 2.0 + tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, v, mask=mask)
    if WRITE_X:
        tl.store(x_ptr + offs, v, mask=mask)  # the op's schema says nothing of this
    if WRITE_Y:
        tl.atomic_add(y_ptr + offs, v, mask=mask)


def launch(x, y, out, *, k, WRITE_X=False, WRITE_Y=False, BLOCK=256):
    scale_kernel[(triton.cdiv(out.numel(), BLOCK),)](x, y, out, out.numel(), WRITE_X=WRITE_X, WRITE_Y=WRITE_Y, BLOCK=BLOCK)


_lib = torch.library.Library("tta_mutating", "FRAGMENT")
for name in ("writes_x", "writes_y", "pure"):
    # The scalar comes first: the argument named is found by schema, not by position.
    _lib.define(f"{name}(int k, Tensor x, Tensor y) -> Tensor")
    _lib.impl(name, lambda k, x, y: x * 2.0 + y, "CompositeExplicitAutograd")
    torch.library.register_fake(f"tta_mutating::{name}", lambda k, x, y: torch.empty_like(x), lib=_lib)


class Calls(nn.Module):
    def __init__(self, op):
        super().__init__()
        self.op = op

    def forward(self, x, y):
        return self.op(3, x, y)


def _compile(model, inputs):
    ep = torch.export.export(model, tuple(inputs))
    return torch_tensorrt.compile(ep, ir="dynamo", arg_inputs=list(inputs), **SETTINGS)


@pytest.mark.parametrize("op, config, arg", [("writes_x", {"WRITE_X": True}, "x"), ("writes_y", {"WRITE_Y": True}, "y")])
def test_undeclared_mutation_is_refused_naming_op_and_argument(builds, op, config, arg):
    tta.custom_op(f"tta_mutating::{op}", kernel=tta.triton(launch, configs=[{"BLOCK": 256, **config}]))
    x, y = torch.randn(4, 64), torch.randn(4, 64)
    with pytest.raises(tta.PluginError, match=rf"tta_mutating::{op} .*argument '{arg}' is written by the kernel scale_kernel"):
        _compile(Calls(getattr(torch.ops.tta_mutating, op)), (x, y))
    assert builds == []


def test_kernel_writing_only_its_outputs_compiles(builds):
    tta.custom_op("tta_mutating::pure", kernel=tta.triton(launch, configs=[{"BLOCK": 256}]))
    x, y = torch.randn(4, 64), torch.randn(4, 64)
    _compile(Calls(torch.ops.tta_mutating.pure), (x, y))
    (build,) = builds
    assert [c[0] for c in build.network.calls].count("add_plugin") == 1


def test_written_inputs_reads_the_ptx_of_each_backend_form():
    """The PTX analysis itself: which parameters the compiled kernel stores through."""
    metas = [TensorType("float32", (None, 64)), TensorType("float32", ("i0_0", 64))]
    out = [TensorType("float32", ("i0_0", 64))]
    for config, expected in (({}, []), ({"WRITE_X": True}, [0]), ({"WRITE_Y": True}, [1]), ({"WRITE_X": True, "WRITE_Y": True}, [0, 1])):
        spec = tta.triton(launch, configs=[{"BLOCK": 256, "k": 3, **config}])
        (k,) = compile_specs([spec], metas, out)
        assert mutation.written_inputs(k, 2) == expected
        # The output (after the one int32 extra) is always written.
        assert _core.ptx_stored_params(k.code.decode(), k.entry)[-1] == 3
    # The example ops' kernels write only their outputs.
    (k,) = compile_specs([tta.triton(ex.launch_pair, configs=[{"BLOCK": 256}])], metas, out)
    assert mutation.written_inputs(k, 2) == []


@torch.library.custom_op("tta_mutating::declared", mutates_args=("x",))
def declared(x: torch.Tensor, y: torch.Tensor) -> None:
    x.add_(y)


@torch.library.custom_op("tta_mutating::declared_returning", mutates_args=("y",))
def declared_returning(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    y.mul_(2)
    return x + y


@pytest.mark.parametrize("op, arg", [("declared", "x"), ("declared_returning", "y")])
def test_declared_mutation_is_refused_at_registration(op, arg):
    # TensorRT's AOT plugins cannot alias an output to an input (the aliased-I/O preview feature
    # is unverified for AOT), so a mutating op is refused rather than run out of place.
    with pytest.raises(tta.PluginError, match=rf"tta_mutating::{op}.*argument '{arg}' is mutated by the op"):
        tta.custom_op(f"tta_mutating::{op}", kernel=tta.triton(launch, configs=[{"BLOCK": 256}]))
