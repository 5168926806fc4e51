"""Per model of ``tta.tools.gpu.models`` (benchmark sizes, fp16), one run timing: the original in
eager PyTorch, the original under ``torch.compile``, tta + Inductor
(``tta.compile(backend="inductor")``) and tta's AOTInductor package (loaded in this process).
Printed as times and as ratios to the original eager (lower is faster), plus tta + Inductor
over torch.compile of the original (the target on the Llama block: at most 1.0).

    python -m tta.tools.gpu.bench_backends [--models llama,...] [--dtype float16] [--reps 200]
"""

from __future__ import annotations

import argparse
import tempfile
import time

import torch

import tta
from tta.tools.gpu import models
from tta.tools.gpu.bench import gpu_ms

BATCH = {"residual": 256, "llama": 4, "attention": 4}


def _max_err(out, ref) -> float:
    return (out.float() - ref.float()).abs().max().item()


def bench_case(case: models.Case, dtype: torch.dtype, reps: int, workdir: str, aoti: bool = True) -> dict:
    model = case.model(dtype, "cuda")
    x = case.inputs(BATCH[case.name], dtype, "cuda")
    dyn = case.dynamic_shapes()
    t0 = time.perf_counter()
    variants = {"eager": model, "torch.compile": torch.compile(model)}
    # Compiled as torch.compile compiles the original (static until a size changes); the
    # AOTInductor package is the deployable one, with the dynamic batch dim.
    variants["tta+inductor"] = tta.compile(model, x, backend="inductor")
    if aoti:
        package = tta.aot_compile(model, x, f"{workdir}/{case.name}.pt2", dyn)
        variants["tta AOTInductor"] = package.load()
    compile_s = time.perf_counter() - t0
    row = {}
    with torch.no_grad():
        ref = model(*x)
        for name, fn in variants.items():
            err = _max_err(fn(*x), ref)  # also the first (compiling) call
            row[name] = (gpu_ms(lambda: fn(*x), iters=1, repeats=reps), err)  # median of single calls
    row["_compile_s"] = compile_s
    row["_regions"] = str(variants["tta+inductor"].tta_report)
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(c.name for c in models.cases("bench")))
    ap.add_argument("--dtype", default="float16", choices=["float16", "bfloat16"])
    ap.add_argument("--reps", type=int, default=200)
    # Leaves the AOT package's compile time (the longest) out where only the other three matter.
    ap.add_argument("--no-aoti", action="store_true", help="leave out the AOTInductor variant")
    args = ap.parse_args(argv)
    dtype = getattr(torch, args.dtype)
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, {args.dtype}, median of {args.reps} calls")
    with tempfile.TemporaryDirectory() as workdir:
        for name in args.models.split(","):
            case = models.by_name(name, "bench")
            row = bench_case(case, dtype, args.reps, workdir, aoti=not args.no_aoti)
            eager_ms = row["eager"][0]
            print(f"\n{name} (batch {BATCH[name]}; export, rewrite and AOT package {row['_compile_s']:.0f} s)")
            print(row["_regions"])
            for variant in ("eager", "torch.compile", "tta+inductor", "tta AOTInductor"):
                if variant not in row:
                    print(f"  {variant:16s} not run")
                    continue
                ms, err = row[variant]
                print(f"  {variant:16s} {ms:8.3f} ms  ratio {ms / eager_ms:5.3f}  max err vs eager {err:.3g}")
            target = row["tta+inductor"][0] / row["torch.compile"][0]
            verdict = ("met" if target <= 1.0 else "NOT met") if name == "llama" else ""
            print(f"  tta+inductor / torch.compile: {target:.3f}" + (f"  (target <= 1.0 on the Llama block: {verdict})" if verdict else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
