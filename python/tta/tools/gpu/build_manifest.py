"""``python -m tta.tools.gpu.build_manifest OUT.json [--sm 90] [--max-ptx 90] [--backends triton,cutile] [--examples NAMES] [--via-qdp]``

Compile every example kernel (``tta.examples.kernels``: each backend whose DSL is installed),
every config, for each of its dtypes, for one SM, and write a manifest (``aot/base.py``) that the
GPU conformance runner reads. Runs on a CPU-only machine. Each kernel carries the example's name
and the concrete sizes to test it at (``TEST_SHAPES``: several sizes per compile, since dims are
dynamic), keeping only sizes that satisfy the guards it was compiled under.

``--via-qdp`` builds it instead from what TensorRT's plugin package returns from each plugin's
``aot_impl`` (``qdp_manifest.py``; Torch-TensorRT venv, source checkout).
"""

from __future__ import annotations

import argparse
import sys
import time

from ...aot.base import guards_hold, symbol_values, write_manifest
from ...aot.compile import compile_specs
from ...errors import TTAError
from ...examples.kernels import examples


def build(out: str, sm: int = 90, max_ptx: int | None = 90, backends=None, cache=None, progress=None, names=None) -> dict:
    kernels, failures = [], []
    t0 = time.perf_counter()
    chosen = examples(tuple(backends) if backends else None)
    if names:
        unknown = sorted(set(names) - {ex.name for ex in chosen})
        if unknown:
            raise SystemExit(f"tta: no example named {', '.join(unknown)} (known: {', '.join(ex.name for ex in chosen)})")
        chosen = [ex for ex in chosen if ex.name in names]
    for ex in chosen:
        if not ex.buildable():
            # A library's kernels (Liger-Kernel) compile only where the library is installed.
            failures.append({"example": ex.name, "error": f"needs {', '.join(ex.requires)} to compile"})
            print(f"tta: {ex.name}: needs {', '.join(ex.requires)} installed to compile", file=sys.stderr)
            continue
        for dtype in ex.dtypes:
            try:
                compiled = compile_specs(
                    [ex.spec()], ex.input_metas(dtype), ex.meta, sm=sm, max_ptx=max_ptx, cache=cache, progress=progress
                )
            except (TTAError, OSError) as e:
                failures.append({"example": ex.name, "dtype": str(dtype), "error": str(e)})
                print(f"tta: {ex.name} {dtype}: {e}", file=sys.stderr)
                continue
            for k in compiled:
                shapes = []
                for shape in ex.test_shapes:
                    ins = ex.make_inputs(shape, dtype, "meta")
                    if guards_hold(k.meta.get("guards", []), symbol_values([t.shape for t in ins])):
                        shapes.append(list(shape))
                k.meta.update({"example": ex.name, "dtype": str(dtype).removeprefix("torch."), "test_shapes": shapes})
                kernels.append(k)
    info = {"sm": sm, "max_ptx": max_ptx, "failures": failures, "seconds": round(time.perf_counter() - t0, 2)}
    write_manifest(out, kernels, **info)
    return {"kernels": len(kernels), **info}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tta.tools.gpu.build_manifest", description=__doc__.split("\n\n")[1])
    p.add_argument("out")
    p.add_argument("--sm", type=int, default=90)
    p.add_argument("--max-ptx", type=int, default=90, help="newest PTX ISA the target driver JITs (90 = 9.0, CUDA 13.0)")
    p.add_argument("--backends", default=None, help="comma-separated subset of triton,cutile,cutedsl")
    p.add_argument("--examples", default=None, help="comma-separated example names (e.g. triton_rmsnorm); default all")
    p.add_argument("--via-qdp", action="store_true", help="take the kernels from tensorrt.plugin's aot_impl (over tests/trt_standin)")
    p.add_argument("--plugin-version", default="11.1", help="with --via-qdp: tensorrt.plugin 11.1 or 11.4")
    args = p.parse_args(argv)
    if args.via_qdp:
        from .qdp_manifest import build as build_via_qdp

        backends = args.backends.split(",") if args.backends else None
        summary = build_via_qdp(args.out, args.sm, args.max_ptx, backends, args.plugin_version)
        print(
            f"tta: wrote {summary['kernels']} kernels (via tensorrt.plugin aot_impl) to {args.out} in {summary['seconds']}s; {len(summary['failures'])} failures"
        )
        return 1 if summary["failures"] else 0
    names = args.examples.split(",") if args.examples else None
    summary = build(args.out, args.sm, args.max_ptx, args.backends.split(",") if args.backends else None, names=names)
    print(f"tta: wrote {summary['kernels']} kernels to {args.out} in {summary['seconds']}s; {len(summary['failures'])} failures")
    return 1 if summary["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
