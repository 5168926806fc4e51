"""What each call site of a ``tta.custom_op`` op gets, through Torch-TensorRT's real code over the
TensorRT stand-in: its plugin stays in the engine under ``tta.compile`` whatever
``min_block_size`` says (plain ``torch_tensorrt.compile`` warns instead), and the tactics its own
profile ranges admit, not those of another call site of the same plugin variant."""

from __future__ import annotations

import pytest
import torch
import torch_tensorrt
from torch import nn
from trt_standin import network as standin
from trt_standin import torch_tensorrt_env

torch_tensorrt_env.patch_runtime()

import tta  # noqa: E402
import tta.trt  # noqa: E402
from tta.examples import custom_ops as ex  # noqa: E402
from tta.examples.kernels.softmax import softmax_kernel  # noqa: E402
from tta.trt import custom_op as co  # noqa: E402
from tta.trt import qdp

SETTINGS = {"offload_module_to_cpu": True}
OPS = torch.ops.tta_examples


@pytest.fixture
def builds():
    standin.BUILDS.clear()
    yield standin.BUILDS
    standin.BUILDS.clear()


def _plugin_calls(builds):
    return [c[1] for b in builds for c in b.network.calls if c[0] == "add_plugin"]


def _pair_mul():
    if "tta_examples::pair_mul" not in co._ops:
        tta.custom_op("tta_examples::pair_mul", kernel=tta.triton(ex.launch_pair, configs=[{"BLOCK": 256}]))


class Lone(nn.Module):
    """One custom-op node: a TensorRT block of one, below the default min_block_size of 5."""

    def forward(self, x, y):
        return OPS.pair_mul(x, y)


def test_tta_compile_keeps_a_lone_custom_op_in_tensorrt(builds):
    _pair_mul()
    x, y = torch.randn(4, 16), torch.randn(4, 16)
    model = tta.compile(Lone(), (x, y), **SETTINGS)  # min_block_size left at Torch-TensorRT's 5
    (call,) = _plugin_calls(builds)
    assert call["layer"].name.startswith("tta_examples::pair_mul/")
    assert any(isinstance(m, torch_tensorrt.runtime.TorchTensorRTModule) for m in model.modules())


def test_plain_compile_warns_that_a_lone_custom_op_runs_in_pytorch(builds):
    _pair_mul()
    x, y = torch.randn(4, 16), torch.randn(4, 16)
    ep = torch.export.export(Lone(), (x, y))
    with pytest.warns(
        UserWarning, match=r"plugin of call pair_mul \(tta_examples\.pair_mul\.default\) will run in PyTorch.*min_block_size=5"
    ):
        torch_tensorrt.compile(ep, ir="dynamo", arg_inputs=[x, y], **SETTINGS)
    assert builds == []


def test_a_custom_op_its_validator_declines_is_not_kept_or_warned_about(builds):
    lib = torch.library.Library("tta_declined", "FRAGMENT")
    lib.define("mul(Tensor x, Tensor y) -> Tensor")
    lib.impl("mul", lambda x, y: x * y, "CompositeExplicitAutograd")
    torch.library.register_fake("tta_declined::mul", lambda x, y: torch.empty_like(x), lib=lib)
    tta.custom_op("tta_declined::mul", kernel=tta.triton(ex.launch_pair, configs=[{"BLOCK": 256}]), capability_validator=lambda n, s: False)

    class M(nn.Module):
        def forward(self, x, y):
            return torch.ops.tta_declined.mul(x, y)

    x, y = torch.randn(4, 16), torch.randn(4, 16)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        torch_tensorrt.compile(torch.export.export(M(), (x, y)), ir="dynamo", arg_inputs=[x, y], **SETTINGS)
        tta.compile(M(), (x, y), **SETTINGS)
    assert _plugin_calls(builds) == []


# -- one plugin variant, two call sites with their own profile ranges ----------------------------

_lib = torch.library.Library("tta_tactics", "FRAGMENT")
_lib.define("row_softmax(Tensor x) -> Tensor")
_lib.impl("row_softmax", lambda x: torch.softmax(x, -1), "CompositeExplicitAutograd")
torch.library.register_fake("tta_tactics::row_softmax", lambda x: torch.empty_like(x), lib=_lib)


def launch_row_softmax(x, out, *, BLOCK):
    n_cols = x.shape[-1]
    assert n_cols <= BLOCK, f"row length {n_cols} exceeds BLOCK={BLOCK}"  # a guard of the config
    softmax_kernel[(x.numel() // n_cols,)](x, out, n_cols, BLOCK=BLOCK)


class TwoCallSites(nn.Module):
    def forward(self, short, long, short_again):
        op = torch.ops.tta_tactics.row_softmax
        return op(short), op(long), op(short_again)


def test_each_call_site_offers_the_tactics_its_own_ranges_admit(builds):
    op = tta.custom_op("tta_tactics::row_softmax", kernel=tta.triton(launch_row_softmax, configs=[{"BLOCK": 128}, {"BLOCK": 1024}]))
    b = torch.export.Dim("b", min=2, max=32)
    short, long = torch.export.Dim("short", min=2, max=128), torch.export.Dim("long", min=2, max=1000)
    short2 = torch.export.Dim("short2", min=2, max=128)
    x, y, z = torch.randn(4, 48), torch.randn(4, 500), torch.randn(4, 40)
    ep = torch.export.export(TwoCallSites(), (x, y, z), dynamic_shapes=({0: b, 1: short}, {0: b, 1: long}, {0: b, 1: short2}))
    torch_tensorrt.compile(ep, ir="dynamo", arg_inputs=[x, y, z], min_block_size=1, **SETTINGS)
    first, second, third = _plugin_calls(builds)
    # One variant (float32, two dynamic dims) for all three call sites.
    (variant,) = op.variants.values()
    small, large = qdp._entries[variant].tactic_ids
    built = [{k.tactic for k in c["layer"].kernels[0]} for c in (first, second, third)]
    # Rows of up to 128 may run either config; rows of up to 1000 only BLOCK=1024. Each layer's
    # plugin offers its own set, whatever order the builder asks in.
    assert built == [{small, large}, {large}, {small, large}]
    assert first["plugin"] == third["plugin"] == f"tta::{variant}" != second["plugin"]
    assert qdp._entries[second["plugin"].split("::")[1]].tactic_ids == [small, large]  # the same kernels
    (k,) = [k for k in second["layer"].kernels[0]]
    assert k.kernel_name == qdp.tactics(variant, ["float32"])[large].entry
