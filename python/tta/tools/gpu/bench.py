"""``python -m tta.tools.gpu.bench [--out DIR] [--no-compile]``: GPU benchmarks (printed; not tests).

(a) Launch path: the add+ReLU example kernel compiled by tta (QDP ABI, PTX JIT-compiled by the
    driver, launched with ``cuLaunchKernel`` as TensorRT does) against the same kernel launched
    by Triton's own launcher. "Triton, same specialization" is the kernel re-wrapped with
    ``do_not_specialize`` so Triton compiles what tta compiles (no divisibility/alignment
    hints); "Triton JIT default" lets Triton specialize as usual. Target: QDP / same <= 1.02.
(b) RMSNorm: achieved bandwidth of the tta RMSNorm kernel (QDP launch) as a fraction of the
    device-to-device copy rate measured on the same machine and of 4.3 TB/s, next to
    ``torch.nn.functional.rms_norm`` eager and under ``torch.compile``. Targets: >= 80% of 4.3 TB/s
    for aligned rows, and >= 85% of the copy rate for ragged rows (``RAGGED``: rows whose start
    is not 16-byte aligned). Each config is a tactic TensorRT would time; the fastest counts.

GPU times are CUDA-event times over many back-to-back launches after a warm-up, the median of
several repeats. Sizes are far larger than the 60 MB L2.
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

from ...aot import ptxabi
from ...aot.compile import compile_specs
from ...common.cache import Cache
from ...runtime.launcher import Loaded, driver_version

H200_COPY_TBPS = 4.3
# The ragged-row case and its target, as a fraction of the copy rate.
RAGGED = ("float16", 4001)
RAGGED_TARGET = 0.85


def gpu_ms(fn, iters: int = 50, warmup: int = 10, repeats: int = 7) -> float:
    """Median over ``repeats`` of the mean CUDA-event time of ``iters`` back-to-back calls."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / iters)
    return statistics.median(times)


def host_us(fn, iters: int = 2000) -> float:
    """Wall-clock microseconds per call of a launch (host overhead, tiny kernel)."""
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(iters):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / iters * 1e6


def _compile(spec, metas, meta_fn, max_ptx, cache):
    return compile_specs(
        [spec], metas, meta_fn, sm=torch.cuda.get_device_capability()[0] * 10, max_ptx=max_ptx, cache=cache, progress=False
    )


def launch_path(max_ptx: int, cache: Cache) -> dict:
    import triton

    from ...aot.session import TensorType
    from ...declare.specs import triton as triton_spec
    from ...examples.kernels import add_relu

    BLOCK, warps = 1024, 4
    k = _compile(
        triton_spec(add_relu.launch_add_relu, [{"BLOCK": BLOCK, "num_warps": warps}]),
        [TensorType.dynamic(torch.float16, 1)] * 2,
        add_relu.meta,
        max_ptx,
        cache,
    )[0]
    loaded = Loaded(k)
    try:
        same = triton.jit(
            add_relu.add_relu_kernel.fn, do_not_specialize=["n"], do_not_specialize_on_alignment=["x_ptr", "y_ptr", "out_ptr"]
        )
    except TypeError:  # a Triton without do_not_specialize_on_alignment
        same = triton.jit(add_relu.add_relu_kernel.fn, do_not_specialize=["n"])
    default = add_relu.add_relu_kernel
    rows = []
    for n in (1 << 26, (1 << 26) + 7, 4096):
        x = torch.randn(n, device="cuda", dtype=torch.float16)
        y = torch.randn(n, device="cuda", dtype=torch.float16)
        outs = {name: torch.empty_like(x) for name in ("qdp", "same", "default")}
        grid, extras, _ = loaded.plan([x, y])
        g = (triton.cdiv(n, BLOCK),)
        fns = {
            "qdp": loaded.prepare([x, y], [outs["qdp"]], grid, extras),
            "same": lambda: same[g](x, y, outs["same"], n, BLOCK=BLOCK, num_warps=warps),
            "default": lambda: default[g](x, y, outs["default"], n, BLOCK=BLOCK, num_warps=warps),
        }
        for f in fns.values():
            f()
        torch.cuda.synchronize()
        identical = all(torch.equal(outs["qdp"], o) for o in outs.values())
        correct = torch.equal(outs["qdp"], torch.relu(x.float() + y.float()).half())
        t = {name: gpu_ms(f, iters=200 if n < 1 << 20 else 50) for name, f in fns.items()}
        h = {name: host_us(f) for name, f in fns.items()} if n < 1 << 20 else {}
        rows.append(
            {
                "n": n,
                "qdp_ms": t["qdp"],
                "triton_same_ms": t["same"],
                "triton_default_ms": t["default"],
                "ratio_vs_same": t["qdp"] / t["same"],
                "ratio_vs_default": t["qdp"] / t["default"],
                "GBps_qdp": 3 * n * 2 / t["qdp"] / 1e6,
                "host_us": h,
                "identical_outputs": identical,
                "correct": correct,
            }
        )
    return {"kernel": f"add_relu BLOCK={BLOCK} num_warps={warps} fp16", "ptx_version": k.ptx_version, "rows": rows}


def copy_rate(nbytes: int) -> float:
    """Device-to-device copy rate in TB/s, counting bytes read and written."""
    src = torch.empty(nbytes // 2, dtype=torch.float16, device="cuda").normal_()
    dst = torch.empty_like(src)
    ms = gpu_ms(lambda: dst.copy_(src), iters=20)
    return 2 * nbytes / ms / 1e9


def rmsnorm(max_ptx: int, cache: Cache, with_compile: bool) -> dict:
    import torch.nn.functional as F

    from ...aot.session import TensorType
    from ...declare.specs import triton as triton_spec
    from ...examples.kernels import rmsnorm as ex

    M, eps = 65536, 1e-6
    configs = [{"BLOCK": 4096, "eps": eps, "num_warps": w, "ROWS": r} for w in (4, 8) for r in (1, 2, 4, 8)]
    rows = []
    copy = {}
    cases = ((torch.float16, 4096), (torch.bfloat16, 4096), (torch.float16, 4001), (torch.bfloat16, 4001), (torch.float32, 4001))
    for dtype, N in cases:
        metas = [TensorType.dynamic(dtype, 2), TensorType.dynamic(dtype, 1)]
        kernels = _compile(triton_spec(ex.launch_rmsnorm, configs), metas, ex.meta, max_ptx, cache)
        x = torch.randn(M, N, device="cuda", dtype=dtype)
        w = (1 + 0.1 * torch.randn(N, device="cuda")).to(dtype)
        nbytes = 2 * x.numel() * x.element_size() + w.numel() * w.element_size()
        if x.numel() * x.element_size() not in copy:
            copy[x.numel() * x.element_size()] = copy_rate(x.numel() * x.element_size())
        cr = copy[x.numel() * x.element_size()]
        ref = ex.reference(x, w, eps)
        best = None
        per_config = {}
        for k in kernels:
            loaded = Loaded(k)
            grid, extras, shapes = loaded.plan([x, w])
            out = torch.empty_like(x)
            loaded.launch([x, w], [out], grid, extras)
            torch.cuda.synchronize()
            err = (out.float() - ref.float()).abs().max().item()
            ms = gpu_ms(loaded.prepare([x, w], [out], grid, extras))
            label = _config_label(k)
            per_config[label] = {"ms": ms, "TBps": nbytes / ms / 1e9, "frac_copy": nbytes / ms / 1e9 / cr, "max_abs_err": err}
            if best is None or ms < best[0]:
                best = (ms, label, err)
        eager_ms = gpu_ms(lambda: F.rms_norm(x, (N,), w, eps))
        compiled_ms = None
        if with_compile:
            try:
                fn = torch.compile(lambda a, b: F.rms_norm(a, (N,), b, eps), dynamic=False)
                fn(x, w)
                compiled_ms = gpu_ms(lambda: fn(x, w))
            except Exception as e:  # report, do not abort the benchmark
                compiled_ms = f"{type(e).__name__}: {str(e)[:200]}"
        tb = lambda ms: nbytes / ms / 1e9 if isinstance(ms, float) else None  # noqa: E731
        rows.append(
            {
                "dtype": str(dtype).removeprefix("torch."),
                "shape": [M, N],
                "bytes": nbytes,
                "copy_TBps": cr,
                "tta_ms": best[0],
                "tta_config": best[1],
                "tta_TBps": tb(best[0]),
                "tta_frac_copy": tb(best[0]) / cr,
                "tta_frac_4.3": tb(best[0]) / H200_COPY_TBPS,
                "tta_max_abs_err": best[2],
                "per_config": per_config,
                "eager_ms": eager_ms,
                "eager_TBps": tb(eager_ms),
                "compile_ms": compiled_ms,
                "compile_TBps": tb(compiled_ms),
            }
        )
    return {"rows": rows}


def _config_label(k) -> str:
    c = dict(k.config)
    return f"num_warps={k.meta['num_warps']},ROWS={c.get('ROWS', 1)}"


def report(res: dict) -> str:
    lines = [f"GPU: {res['device']}, CUDA driver {res['driver']}, torch {res['torch']}, triton {res['triton']}", ""]
    if "launch_path" in res:
        lines += _launch_lines(res["launch_path"])
    if "rmsnorm" in res:
        lines += _rms_lines(res["rmsnorm"])
    return "\n".join(lines) + "\n"


def _launch_lines(lp: dict) -> list[str]:
    lines = [
        f"(a) launch path, {lp['kernel']}, PTX {lp['ptx_version']} (CUDA-event time per launch)",
        "",
        "| n | QDP cuLaunchKernel (ms) | Triton launcher, same specialization (ms) | Triton JIT default (ms) | QDP/same | QDP/default | outputs identical | host us/launch (qdp, same, default) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in lp["rows"]:
        h = r["host_us"]
        hs = ", ".join(f"{h[k]:.1f}" for k in ("qdp", "same", "default")) if h else "-"
        lines.append(
            f"| {r['n']} | {r['qdp_ms']:.4f} | {r['triton_same_ms']:.4f} | {r['triton_default_ms']:.4f} | {r['ratio_vs_same']:.3f} | {r['ratio_vs_default']:.3f} | {r['identical_outputs'] and r['correct']} | {hs} |"
        )
    return lines


def _rms_lines(rms: dict) -> list[str]:
    lines = [
        "",
        "(b) RMSNorm bandwidth (bytes = read x + write out + read w)",
        "",
        "| dtype | shape | copy rate (TB/s) | tta QDP (TB/s) | % of copy | % of 4.3 TB/s | F.rms_norm eager (TB/s) | torch.compile (TB/s) | tta max abs err |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rms["rows"]:
        ct = f"{r['compile_TBps']:.2f}" if r["compile_TBps"] else str(r["compile_ms"])[:60]
        lines.append(
            f"| {r['dtype']} | {r['shape'][0]}x{r['shape'][1]} | {r['copy_TBps']:.2f} | {r['tta_TBps']:.2f} ({r['tta_config']}) | {100 * r['tta_frac_copy']:.1f}% | {100 * r['tta_frac_4.3']:.0f}% | {r['eager_TBps']:.2f} | {ct} | {r['tta_max_abs_err']:.1e} |"
        )
    for r in rms["rows"]:
        if (r["dtype"], r["shape"][1]) == RAGGED:
            met = "met" if r["tta_frac_copy"] >= RAGGED_TARGET else "NOT met"
            lines += [
                "",
                f"ragged rows {r['dtype']} {r['shape'][0]}x{r['shape'][1]}: {100 * r['tta_frac_copy']:.1f}% of the copy rate (target >= {100 * RAGGED_TARGET:.0f}%): {met}",
            ]
    return lines


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tta.tools.gpu.bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=".")
    p.add_argument("--no-compile", action="store_true", help="skip torch.compile (slow to compile)")
    p.add_argument("--only", choices=["launch", "rmsnorm"], default=None, help="run one part")
    args = p.parse_args(argv)
    import triton

    drv = driver_version()
    max_ptx = ptxabi.max_ptx_for_driver(drv) or 90
    cache = Cache(tempfile.mkdtemp(prefix="tta-bench-"))
    res = {
        "device": torch.cuda.get_device_name(),
        "driver": drv,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "max_ptx": max_ptx,
    }
    os.makedirs(args.out, exist_ok=True)

    def save():  # after each part, so a run cut short still leaves what it measured
        with open(os.path.join(args.out, "bench.json"), "w") as f:
            json.dump(res, f, indent=1, default=str)

    if args.only in (None, "launch"):
        res["launch_path"] = launch_path(max_ptx, cache)
        save()
    if args.only in (None, "rmsnorm"):
        res["rmsnorm"] = rmsnorm(max_ptx, cache, with_compile=False)
        save()
        if not args.no_compile:
            res["rmsnorm"] = rmsnorm(max_ptx, cache, with_compile=True)
            save()
    text = report(res)
    print(text)
    with open(os.path.join(args.out, "bench.md"), "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
