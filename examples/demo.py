"""tta demo: mark regions in model code, export, outline them into plugin ops, run and compare,
then compile the plugins' Triton kernels ahead of time for an H100/H200 (sm_90).

    ./scripts/demo.sh          # sets everything up, then runs this file
"""

from __future__ import annotations

import time

import torch
import torch.nn.functional as F
from torch import nn

import tta
from tta.common import bridge as core
from tta.examples.kernels import add_relu
from tta.examples.kernels import rmsnorm as rms_kernel

# 1. Describe the plugins: the user's own kernels (plain launch code, one TensorRT tactic per
#    config) and a meta_impl, which the pass checks against every region it replaces.
fused_add_relu = tta.custom_plugin(
    kernel=tta.triton(add_relu.launch_add_relu, configs=[{"BLOCK": 1024}, {"BLOCK": 2048, "num_warps": 8}]),
    meta_impl=lambda x, y: x.new_empty(x.shape),
    name="fused_add_relu",
)
rmsnorm = tta.custom_plugin(
    kernel=tta.triton(rms_kernel.launch_rmsnorm, configs=[{"BLOCK": 1024, "eps": 1e-6}]),
    meta_impl=lambda x, w: x.new_empty(x.shape),
    name="rmsnorm",
)


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
    rust_ms = sum(result.timings["rust"].values())
    print(f"export {t_export * 1e3:.0f} ms; rewrite {result.timings['total_s'] * 1e3:.1f} ms, of which the Rust pass {rust_ms:.2f} ms\n")

    nodes = [n for n in result.program.graph.nodes if n.op == "call_function"]
    plugin_nodes = [n for n in nodes if getattr(n.target, "namespace", None) == "tta"]
    print(f"rewritten graph: {len(nodes)} call_function nodes, {len(plugin_nodes)} of them plugin ops:")
    for n in plugin_nodes:
        print(f"  {n.name:24s} {n.target._schema}")

    # 5. The rewritten program runs eagerly (on CPU the plugin op runs its region body; on CUDA
    #    tensors it launches the user's kernel), at any batch size the export allowed.
    rewritten = result.program.module()
    print()
    for b in (8, 3, 37):
        inp = torch.randn(b, 16, 64)
        err = (model(inp) - rewritten(inp)).abs().max().item()
        print(f"batch {b:3d}: max |original - rewritten| = {err:.2e}  {'OK' if err < 1e-5 else 'MISMATCH'}")
        assert err < 1e-5

    # 6. Ahead-of-time kernels for each plugin op, for its region's dtypes, batch dim dynamic:
    #    PTX for sm_90 at an ISA a CUDA 13.0 driver accepts, parameters in TensorRT's AOT order.
    t0 = time.perf_counter()
    kernels = result.compile_kernels(sm=90, max_ptx=90)
    print(f"\nAOT kernels for sm_90 ({time.perf_counter() - t0:.1f} s, cached on later runs):")
    for op, ks in kernels.items():
        for k in ks:
            entry = core.ptx_parse(k.code.decode()).entries[0]
            params = ", ".join(p.ty for p in entry.params)
            print(f"  tta::{op}  {dict(k.config)}")
            print(f"    {k.code_format} ISA {k.ptx_version}, .entry {k.entry}({params})")
            print(f"    grid {k.grid}  block {k.block}  smem {k.shared_mem}  int32 extras {list(k.extras)}")


if __name__ == "__main__":
    main()
