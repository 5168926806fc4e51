"""The seed's ResidualBlock through ``tta.compile``: ``relu(x + y)`` becomes one TensorRT plugin
whose Triton kernel (two configs, one tactic each) is compiled ahead of time into the engine.

    .venv-torch2.14/bin/python examples/trt_residual.py      # Torch-TensorRT 2.14 environment

Where TensorRT and a GPU are installed, it builds the engine, runs it at three batch sizes and
compares with eager PyTorch. That path is UNVERIFIED: no TensorRT could be installed where tta
was developed. Elsewhere it loads tta's TensorRT stand-in (tests/trt_standin, not TensorRT)
under the real Torch-TensorRT and tensorrt.plugin code and prints the network the engine would
be built from: inputs, the plugin layer with its name, metadata and kernels, outputs.
"""

from __future__ import annotations

import os
import sys

import torch
from torch import nn

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def real_tensorrt() -> bool:
    try:
        import tensorrt  # noqa: F401
    except ImportError:
        return False
    return torch.cuda.is_available()


def use_standin():
    """Install the stand-in before Torch-TensorRT is imported (see tests/trt_standin)."""
    sys.path.insert(0, os.path.join(REPO, "tests"))
    import trt_standin
    from trt_standin import torch_tensorrt_env

    trt_standin.install("11.1")
    import torch_tensorrt  # noqa: F401

    torch_tensorrt_env.patch_runtime()
    from trt_standin import network

    return network


REAL = real_tensorrt()
standin = None if REAL else use_standin()

import tta  # noqa: E402
from tta.examples.kernels import add_relu  # noqa: E402

fused_add_relu = tta.custom_plugin(
    kernel=tta.triton(add_relu.launch_add_relu, configs=[{"BLOCK": 1024}, {"BLOCK": 2048, "num_warps": 8}]),
    meta_impl=lambda x, y: x.new_empty(x.shape),
    name="fused_add_relu",
)


class ResidualBlock(nn.Module):
    def forward(self, x, y):
        with tta.lower_as(impl=fused_add_relu):
            return torch.relu(x + y)


def main() -> None:
    device = "cuda" if REAL else "cpu"
    x, y = torch.randn(4, 1024, device=device), torch.randn(4, 1024, device=device)
    batch = torch.export.Dim("batch", min=2, max=64)
    settings = {} if REAL else {"offload_module_to_cpu": True}  # the stand-in has no GPU memory to ask about
    model = tta.compile(ResidualBlock().to(device), (x, y), ({0: batch}, {0: batch}), **settings)
    print(model.tta_report)
    if REAL:
        for n in (2, 17, 64):
            a, b = torch.randn(n, 1024, device=device), torch.randn(n, 1024, device=device)
            torch.testing.assert_close(model(a, b), torch.relu(a + b))
            print(f"batch {n}: engine output equals eager PyTorch")
        return
    print("\nTensorRT stand-in (not TensorRT): the network Torch-TensorRT built for the engine")
    for build in standin.BUILDS:
        for kind, call in build.network.calls:
            if kind == "add_plugin":
                layer = call["layer"]
                print(f"  add_plugin({call['plugin']}, aot=True) inputs={call['inputs']} attrs={call['attrs']}")
                print(f"    layer {layer.name!r} metadata {layer.metadata}")
                for k in layer.kernels[0]:
                    v = k.launch_values([(17, 1024), (17, 1024)])
                    print(
                        f"    tactic {k.tactic}: {k.kernel_name.decode() if isinstance(k.kernel_name, bytes) else k.kernel_name}, "
                        f"{len(k.code)} bytes of PTX; at batch 17: grid {v['grid_x']}, block {v['block_x']}, smem {v['shared_mem']}"
                    )
            else:
                print(f"  {kind}({call.get('name', '')}, {call['dtype'].name}, shape {call['shape']})")


if __name__ == "__main__":
    main()
