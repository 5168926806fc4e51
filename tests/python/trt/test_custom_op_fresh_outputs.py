"""``tta.custom_op`` on an op whose fake impl returns its input, as Torch-TensorRT's automatic
plugin example ``elementwise_mul`` does (``return x``): the plugin's kernel gets an output
buffer of its own. Through Torch-TensorRT's real code over the TensorRT stand-in."""

from __future__ import annotations

import torch
from torch import nn

import tta
import tta.trt
from tta.examples import custom_ops as ex
from tta.trt import custom_op as co


@torch.library.custom_op("tta_fresh::elementwise_mul", mutates_args=())
def elementwise_mul(X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
    return X * Y


@torch.library.register_fake("tta_fresh::elementwise_mul")
def _(x, y):
    return x  # as in Torch-TensorRT's example


class Mul(nn.Module):
    def forward(self, x, y):
        return torch.ops.tta_fresh.elementwise_mul(x, y)


def test_a_fake_impl_returning_its_input_gets_an_output_of_its_own(standin_trt, tmp_path, monkeypatch):
    # Before: "kernel pair_kernel: input 0 is passed twice; TensorRT passes each buffer once".
    # A cold compile cache: a kernel compiled before (with fresh outputs) would hide it.
    monkeypatch.setenv("TTA_CACHE_DIR", str(tmp_path))
    if "tta_fresh::elementwise_mul" not in co._ops:
        tta.custom_op("tta_fresh::elementwise_mul", kernel=tta.triton(ex.launch_pair, configs=[{"BLOCK": 256}]))
    x, y = torch.randn(4, 64), torch.randn(4, 64)
    standin_trt.compile(Mul(), (x, y))
    (call,) = standin_trt.plugin_calls()
    assert call["inputs"] == ["x", "y"]
    (kernel,) = call["layer"].kernels[0]
    assert kernel.code


def test_a_region_whose_meta_impl_returns_its_input(standin_trt, tmp_path, monkeypatch):
    monkeypatch.setenv("TTA_CACHE_DIR", str(tmp_path))
    plugin = tta.custom_plugin(
        kernel=tta.triton(ex.launch_pair, configs=[{"BLOCK": 256}]), meta_impl=lambda x, y: x, name="mul_returning_x"
    )

    class Region(nn.Module):
        def forward(self, x, y):
            with tta.lower_as(plugin):
                return x * y

    x, y = torch.randn(4, 64), torch.randn(4, 64)
    model = tta.compile(Region(), (x, y), offload_module_to_cpu=True)
    (placed,) = model.tta_report.regions
    assert placed.in_tensorrt
    (call,) = standin_trt.plugin_calls()
    (kernel,) = call["layer"].kernels[0]
    assert kernel.code
