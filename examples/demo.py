"""tta demo: mark regions in model code, export, outline them into plugin ops, run, compare.

    ./scripts/demo.sh          # sets everything up, then runs this file
"""

from __future__ import annotations

import time

import torch
import torch.nn.functional as F
from torch import nn

import tta

# 1. Describe the plugins. Kernels are optional here (the region body is the fallback); a
#    meta_impl, when given, is checked against every region it replaces.
fused_add_relu = tta.custom_plugin(name="fused_add_relu", meta_impl=lambda x, y: x.new_empty(x.shape))
rmsnorm = tta.custom_plugin(name="rmsnorm", meta_impl=lambda x, w: x.new_empty(x.shape))


# 2. Mark regions in ordinary model code.
class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.rand(dim) + 0.5)

    def forward(self, x):
        with tta.lower_as(rmsnorm):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Block(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.norm, self.up, self.down = RMSNorm(dim), nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

    def forward(self, x):
        h = self.down(F.gelu(self.up(self.norm(x))))
        with tta.lower_as(fused_add_relu, name="residual"):
            return torch.relu(x + h)


class Model(nn.Module):
    def __init__(self, dim: int = 64, depth: int = 4):
        super().__init__()
        self.blocks = nn.ModuleList(Block(dim) for _ in range(depth))

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return x


def main() -> None:
    torch.manual_seed(0)
    model = Model().eval()
    x = torch.randn(8, 16, 64)
    batch = torch.export.Dim("batch", min=1, max=128)

    # 3. Export as usual; the region tags travel as node metadata.
    t0 = time.perf_counter()
    ep = torch.export.export(model, (x,), dynamic_shapes=({0: batch},)).run_decompositions()
    t_export = time.perf_counter() - t0

    # 4. The Rust pass validates each region and outlines it into one tta::<op> node.
    result = tta.rewrite(ep)
    print(result)
    print(f"export {t_export * 1e3:.0f} ms, rewrite {result.timings['total_s'] * 1e3:.1f} ms "
          f"(Rust pass {sum(v for k, v in result.timings['rust'].items()):.2f} ms)\n")

    print("rewritten graph (call_function nodes):")
    for n in result.program.graph.nodes:
        if n.op == "call_function":
            print(f"  {n.name:24s} {n.target}")

    # 5. The rewritten program runs eagerly, at any batch size the export allowed.
    rewritten = result.program.module()
    print()
    for b in (8, 3, 37):
        inp = torch.randn(b, 16, 64)
        want, got = model(inp), rewritten(inp)
        err = (want - got).abs().max().item()
        print(f"batch {b:3d}: max |original - rewritten| = {err:.2e}  {'OK' if err < 1e-5 else 'MISMATCH'}")
        assert err < 1e-5


if __name__ == "__main__":
    main()
