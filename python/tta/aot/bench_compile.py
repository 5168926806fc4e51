"""``python -m tta.aot.bench_compile [--pools]``: how long compiling the example kernels takes.

* cold: a fresh tta cache and a fresh Triton cache (so Triton really compiles), in a process
  that has already compiled one unrelated kernel (imports and LLVM start-up are not counted);
* cached: the same ``compile_specs`` call again with a new ``Cache`` object on the same
  directory (what a rebuild of an engine does); the issue asks for >= 100x;
* ``--pools``: cold compiles of all kernels with the serial, thread and process pools.

Prints a table; ``--json PATH`` also writes the numbers. Runs on a CPU-only machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import torch


def _fresh_triton_cache() -> None:
    import triton

    d = tempfile.mkdtemp(prefix="tta-bench-triton-")
    os.environ["TRITON_CACHE_DIR"] = d
    try:
        triton.knobs.cache.dir = d
    except AttributeError:  # pragma: no cover - older Triton reads the env var
        pass


def _tasks():
    from ..examples.kernels import examples

    return [(ex, dt) for ex in examples(("triton",)) for dt in ex.dtypes]


def cold_vs_cached(repeats: int = 3) -> list[dict]:
    from ..common.cache import Cache
    from .compile import compile_specs

    rows = []
    for ex, dt in _tasks():
        _fresh_triton_cache()
        root = tempfile.mkdtemp(prefix="tta-bench-cache-")
        metas = ex.input_metas(dt)
        t = time.perf_counter()
        cold = compile_specs([ex.spec()], metas, ex.meta, cache=Cache(root), pool="serial", progress=False)
        t_cold = time.perf_counter() - t
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
                "dtype": str(dt).removeprefix("torch."),
                "configs": len(cold),
                "cold_ms": t_cold * 1e3,
                "cached_ms": t_hot * 1e3,
                "speedup": t_cold / t_hot,
            }
        )
    return rows


def pools(jobs: int | None = None) -> list[dict]:
    from .compile import Task, run_tasks

    tasks = [Task(ex.spec(), cfg, ex.input_metas(dt), ex.meta, 90, 90, {}) for ex, dt in _tasks() for cfg in ex.spec().config_dicts()]
    jobs = jobs or len(os.sched_getaffinity(0))
    rows = []
    for pool in ("serial", "thread", "process"):
        _fresh_triton_cache()
        t = time.perf_counter()
        run_tasks(tasks, jobs=jobs, pool=pool, progress=False)
        rows.append({"pool": pool, "jobs": 1 if pool == "serial" else jobs, "kernels": len(tasks), "seconds": time.perf_counter() - t})
    return rows


def _warm_up() -> None:
    from ..examples.kernels import by_name
    from .compile import compile_specs

    _fresh_triton_cache()
    ex = by_name("triton_softmax")
    compile_specs([ex.spec()], ex.input_metas(torch.float32), ex.meta, cache=False, pool="serial", progress=False)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tta.aot.bench_compile", description=__doc__.split("\n\n")[0])
    p.add_argument("--pools", action="store_true", help="also compare serial/thread/process compiles")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    _warm_up()
    out: dict = {"cpus": len(os.sched_getaffinity(0))}
    rows = out["cache"] = cold_vs_cached()
    print("| kernel | dtype | configs | cold compile (ms) | cached rebuild (ms) | speedup |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['kernel']} | {r['dtype']} | {r['configs']} | {r['cold_ms']:.1f} | {r['cached_ms']:.2f} | {r['speedup']:.0f}x |")
    worst = min(r["speedup"] for r in rows)
    print(f"\nslowest cached/cold ratio: {worst:.0f}x (target >= 100x)")
    if args.pools:
        out["pools"] = pools()
        print(f"\n| pool | jobs | kernels | seconds |  ({out['cpus']} usable CPUs)\n|---|---|---|---|")
        for r in out["pools"]:
            print(f"| {r['pool']} | {r['jobs']} | {r['kernels']} | {r['seconds']:.2f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0 if worst >= 100 else 1


if __name__ == "__main__":
    sys.exit(main())
