"""``python -m tta.aot.bench_compile [--pools]``: how long compiling the example kernels takes,
and how much of it is tta's own time.

* cold: a fresh tta cache (with an empty record of plain-target forms) and a fresh Triton cache
  (so Triton really compiles), in a process that has already compiled one unrelated kernel per
  DSL and run each example's launch function once (imports and LLVM start-up are not counted),
  every example kernel of every DSL installed;
* phases: where the cold compiles' time went (``aot/phases.py``); everything but ``dsl`` (the
  DSL's own compile) is tta's, and tta's own share is printed per DSL and overall;
* cached: the same ``compile_specs`` call again with a new ``Cache`` object on the same
  directory (what a rebuild of an engine does); the target is >= 100x;
* ``--pools``: cold compiles of every kernel with the serial, thread and process pools, and how
  far the process pool is from ideal (the serial time spread evenly over the cores).

Examples whose library is missing here (Liger-Kernel on the GPU machine) and DSLs that cannot
compile here (no tileiras) are skipped, each named. Prints tables; ``--json PATH`` also writes
the numbers. Runs on a CPU-only machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time


def _fresh_caches() -> str:
    """A fresh Triton cache and a fresh tta cache folder (with it, an empty record of the forms
    ptxas accepted for the plain target); returns the tta one."""
    import triton

    d = tempfile.mkdtemp(prefix="tta-bench-triton-")
    os.environ["TRITON_CACHE_DIR"] = d
    try:
        triton.knobs.cache.dir = d
    except AttributeError:  # pragma: no cover - older Triton reads the env var
        pass
    root = tempfile.mkdtemp(prefix="tta-bench-cache-")
    os.environ["TTA_CACHE_DIR"] = root
    return root


def _examples() -> tuple[list, list[str]]:
    """The example kernels this machine can compile, and a line for each one skipped."""
    from ..errors import PluginError
    from ..examples.kernels import examples
    from .compile import compile_specs

    usable, skipped, dsl_ok = [], [], {}
    for ex in examples(("triton", "cutile", "cutedsl")):
        if not ex.buildable():
            skipped.append(f"{ex.name} (needs {', '.join(m for m in ex.requires)})")
            continue
        if ex.backend not in dsl_ok:  # one warm-up compile per DSL, which also says whether it can compile here
            _fresh_caches()
            try:
                compile_specs([ex.spec()], ex.input_metas(ex.dtypes[0]), ex.meta, cache=False, pool="serial", progress=False)
                dsl_ok[ex.backend] = None
            except PluginError as e:
                dsl_ok[ex.backend] = str(e).splitlines()[0][:160]
        if dsl_ok[ex.backend] is not None:
            skipped.append(f"{ex.name} ({ex.backend} cannot compile here: {dsl_ok[ex.backend]})")
            continue
        _run_launch_once(ex)
        usable.append(ex)
    return usable, skipped


def _run_launch_once(ex) -> None:
    """Record the example's launch once, uncounted: the imports its launch function does (Liger's
    kernels import transformers, 0.9 s) are the user's, done by their model code before any
    compile, and not a compile's time."""
    from . import driver

    spec = ex.spec()
    driver.record(spec, spec.config_dicts()[0], driver.session_for(ex.input_metas(ex.dtypes[0]), ex.meta, ex.name))


def cold_vs_cached(exs: list, repeats: int = 3) -> tuple[list[dict], dict[str, dict[str, float]]]:
    """A row per (kernel, dtype), and seconds per phase of the cold compiles per DSL."""
    from ..common.cache import Cache
    from . import phases
    from .compile import compile_specs

    rows, per_dsl = [], {}
    for ex in exs:
        for dt in ex.dtypes:
            root = _fresh_caches()
            metas = ex.input_metas(dt)
            timed: list = []
            t = time.perf_counter()
            cold = compile_specs([ex.spec()], metas, ex.meta, cache=Cache(root), pool="serial", progress=False, timings=timed)
            t_cold = time.perf_counter() - t
            for task in timed:
                phases.add(per_dsl.setdefault(ex.backend, {}), task.times)
            hot = []
            for _ in range(repeats):
                c = Cache(root)
                t = time.perf_counter()
                again = compile_specs([ex.spec()], metas, ex.meta, cache=c, progress=False)
                hot.append(time.perf_counter() - t)
                assert c.hits == len(cold) and again == cold, "cached rebuild did not return the cold result"
            t_hot = statistics.median(hot)
            rows.append(
                {
                    "kernel": ex.name,
                    "dsl": ex.backend,
                    "dtype": str(dt).removeprefix("torch."),
                    "configs": len(cold),
                    "cold_ms": t_cold * 1e3,
                    "cached_ms": t_hot * 1e3,
                    "speedup": t_cold / t_hot,
                }
            )
    return rows, per_dsl


def pools(exs: list, jobs: int | None = None) -> list[dict]:
    from .compile import Task, run_tasks

    tasks = [
        Task(ex.spec(), cfg, ex.input_metas(dt), ex.meta, 90, 90, {}) for ex in exs for dt in ex.dtypes for cfg in ex.spec().config_dicts()
    ]
    jobs = jobs or len(os.sched_getaffinity(0))
    rows = []
    for pool in ("serial", "thread", "process"):
        _fresh_caches()
        t = time.perf_counter()
        run_tasks(tasks, jobs=jobs, pool=pool, progress=False)
        rows.append({"pool": pool, "jobs": 1 if pool == "serial" else jobs, "kernels": len(tasks), "seconds": time.perf_counter() - t})
    return rows


def _print_phases(per_dsl: dict[str, dict[str, float]]) -> dict[str, float]:
    from . import phases

    print("\n| DSL | " + " | ".join(f"{p} (s)" for p in phases.NAMES) + " | tta's own share |")
    print("|---|" + "---|" * (len(phases.NAMES) + 1))
    total: dict[str, float] = {}
    for dsl, times in per_dsl.items():
        phases.add(total, times)
        print(f"| {dsl} | " + " | ".join(f"{times.get(p, 0.0):.3f}" for p in phases.NAMES) + f" | {phases.own_share(times):.1%} |")
    print()
    for dsl, times in per_dsl.items():
        print(f"tta's own share of cold compile ({dsl}): {phases.own_share(times):.1%}")
    return total


def main(argv=None) -> int:
    from . import phases

    p = argparse.ArgumentParser(prog="python -m tta.aot.bench_compile", description=__doc__.split("\n\n")[0])
    p.add_argument("--pools", action="store_true", help="also compare serial/thread/process compiles")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    exs, skipped = _examples()
    for line in skipped:
        print(f"skipped: {line}")
    out: dict = {"cpus": len(os.sched_getaffinity(0)), "skipped": skipped}
    rows, per_dsl = cold_vs_cached(exs)
    out["cache"], out["phases"] = rows, per_dsl
    print("| kernel | dtype | configs | cold compile (ms) | cached rebuild (ms) | speedup |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['kernel']} | {r['dtype']} | {r['configs']} | {r['cold_ms']:.1f} | {r['cached_ms']:.2f} | {r['speedup']:.0f}x |")
    worst = min(r["speedup"] for r in rows)
    print(f"\nslowest cached/cold ratio: {worst:.0f}x (target >= 100x)")
    total = _print_phases(per_dsl)
    if args.pools:
        out["pools"] = pools(exs)
        print(f"\n| pool | jobs | kernels | seconds |  ({out['cpus']} usable CPUs)\n|---|---|---|---|")
        for r in out["pools"]:
            print(f"| {r['pool']} | {r['jobs']} | {r['kernels']} | {r['seconds']:.2f} |")
        serial, process = out["pools"][0], out["pools"][2]
        ideal = serial["seconds"] / min(process["jobs"], process["kernels"])
        print(
            f"parallel: {process['kernels']} kernels on {process['jobs']} cores in {process['seconds']:.2f} s, {process['seconds'] / ideal:.2f} x ideal"
        )
    print(f"tta's own share of cold compile: {phases.own_share(total):.1%}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0 if worst >= 100 else 1


if __name__ == "__main__":
    sys.exit(main())
