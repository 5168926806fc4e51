"""``python -m tta.tools.gpu.build_bundle OUT.json [--sm 90] [--max-ptx 90]``: compile the cuTile and
CuTeDSL add+ReLU kernels of ``models.DSLResidualBlock`` (fp16 and bf16, dynamic batch) into a
kernel bundle, on a machine with both DSLs, for the GPU test of the Inductor backend's compiled
kernel launch (``TTA_DSL_BUNDLE=OUT.json``; the GPU machine needs neither DSL)."""

from __future__ import annotations

import argparse

import torch

from tta.inductor.kernel_bundle import compile_bundle, save_bundle
from tta.tools.gpu import models

COLS = 1000  # not a multiple of any TILE/THREADS: ragged tails at every batch size


def example(batch: int, dtype: torch.dtype, device: str = "cpu"):
    g = torch.Generator(device="cpu").manual_seed(batch)
    return tuple(torch.randn(batch, COLS, generator=g).to(device=device, dtype=dtype) for _ in range(2))


def dynamic_shapes():
    return ({0: torch.export.Dim("batch", min=1, max=512)},) * 2


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--sm", type=int, default=90)
    ap.add_argument("--max-ptx", type=int, default=90)
    args = ap.parse_args(argv)
    bundle: dict = {}
    for backend in ("cutile", "cutedsl"):
        model = models.DSLResidualBlock(models.dsl_add_relu_plugin(backend))
        for dtype in (torch.float16, torch.bfloat16):
            got = compile_bundle(model, example(4, dtype), dynamic_shapes(), sm=args.sm, max_ptx=args.max_ptx)
            for name, kernels in got.items():
                bundle.setdefault(name, []).extend(kernels)
    save_bundle(args.out, bundle)
    for name, kernels in bundle.items():
        print(f"{name}: " + ", ".join(f"{k.entry}[{dict(k.config)}] {'/'.join(k.input_dtypes)} {k.code_format}" for k in kernels))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
