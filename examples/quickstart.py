"""The README's quickstart, verbatim (tests/python/test_readme_quickstart.py keeps the two equal).
Run it with `python examples/quickstart.py`."""

import torch
import triton
import triton.language as tl
from torch import nn

import tta


# 1. Your kernel, and the launch code you would write for eager PyTorch.
@triton.jit
def add_relu_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x + y, 0.0), mask=mask)


def launch_add_relu(x, y, out, BLOCK=1024):  # inputs, then outputs, then one config's values
    n = out.numel()
    add_relu_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK)


# 2. A plugin: the kernel (one TensorRT tactic per config) and the shape of its output.
add_relu = tta.custom_plugin(
    kernel=tta.triton(launch_add_relu, configs=[{"BLOCK": 1024}, {"BLOCK": 2048}]),
    meta_impl=lambda x, y: x.new_empty(x.shape),
    name="add_relu",
)


# 3. Mark the region it replaces in ordinary model code.
class ResidualBlock(nn.Module):
    def __init__(self, dim=256):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.proj(x)
        with tta.lower_as(add_relu, name="residual"):
            return torch.relu(x + h)


device = "cuda" if torch.cuda.is_available() else "cpu"
model = ResidualBlock().to(device).eval()
x = torch.randn(8, 256, device=device)
batch = torch.export.Dim("batch", min=1, max=1024)

# 4. Export as usual, then outline each region into one tta::<op> node.
ep = torch.export.export(model, (x,), dynamic_shapes=({0: batch},)).run_decompositions()
result = tta.rewrite(ep)
print(result)  # per region: the op that replaced it, its signature, or why it was refused

# The rewritten program runs eagerly (your kernel on CUDA, the region's own ops on CPU).
torch.testing.assert_close(result.program.module()(x), model(x))

# 5. The kernels TensorRT would get: PTX in TensorRT's AOT plugin ABI, compiled for sm_90.
for op, compiled in result.compile_kernels(sm=90).items():
    for k in compiled:
        print(op, dict(k.config), k.code_format, "grid", k.grid, "int32 extras", k.extras)
