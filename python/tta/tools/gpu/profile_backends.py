"""Where the time goes, per model of ``tta.tools.gpu.models`` (benchmark sizes): for the original under
eager and ``torch.compile`` and for tta + Inductor, the CUDA kernels of one call (name, count,
time), the time of one call alone and of calls back to back (their difference is host time the
GPU waits for), the host time per call, and Inductor's generated code. Written as JSON and text
under ``--out``.

    python -m tta.tools.gpu.profile_backends --out DIR [--models llama,...] [--modes default,reduce-overhead]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import time

import torch

import tta
from tta.tools.gpu import models
from tta.tools.gpu.bench import gpu_ms
from tta.tools.gpu.bench_backends import BATCH


def host_us(fn, calls: int = 50) -> float:
    """Host microseconds per call, the GPU left to run behind (a deep enough queue)."""
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    dt = time.perf_counter() - t
    torch.cuda.synchronize()
    return dt / calls * 1e6


def kernels(fn, calls: int = 3) -> list[dict]:
    """The CUDA kernels of one call: name, launches per call, GPU microseconds per call."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    acc = collections.defaultdict(lambda: [0, 0.0])
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            acc[e.name][0] += 1
            acc[e.name][1] += e.device_time
    rows = [{"kernel": k, "per_call": n / calls, "us": t / calls} for k, (n, t) in acc.items()]
    cpu = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25)
    return sorted(rows, key=lambda r: -r["us"]), cpu


def variants(case, model, x, modes, hooked: bool):
    out = {"eager": model}
    for mode in modes:
        kw = {} if mode == "default" else {"mode": mode}
        sfx = "" if mode == "default" else f" [{mode}]"
        out["torch.compile" + sfx] = torch.compile(model, **kw)
        out["tta+inductor" + sfx] = tta.compile(model, x, backend="inductor", **kw)
        if hooked and mode == "default":
            # As the backend compiled before: the exported module itself, with export's forward
            # hooks, pytree wrapper and guard call.
            out["tta+inductor, export module"] = torch.compile(out["tta+inductor"].tta_program.module())
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", default="llama,residual,attention")
    ap.add_argument("--modes", default="default")
    ap.add_argument("--models-ro", default="llama", help="models timed in every mode (the others: default only)")
    ap.add_argument("--dtype", default="float16")
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--hooked", action="store_true", help="also time the module with export's hooks kept")
    ap.add_argument("--code", default="", help="models whose generated code and CPU profile are written (comma list)")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    dtype = getattr(torch, args.dtype)
    modes = args.modes.split(",")
    report = {"torch": torch.__version__, "device": torch.cuda.get_device_name(), "dtype": args.dtype, "models": {}}
    for name in args.models.split(","):
        case = models.by_name(name, "bench")
        model = case.model(dtype, "cuda")
        x = case.inputs(BATCH[name], dtype, "cuda")
        rows = {}
        with torch.no_grad():
            ref = model(*x)
            for vname, fn in variants(case, model, x, modes if name in args.models_ro.split(",") else ["default"], args.hooked).items():
                t0 = time.perf_counter()
                if vname == "eager":
                    y, code = fn(*x), []
                else:
                    from torch._inductor.utils import run_and_get_code

                    y, code = run_and_get_code(fn, *x)
                err = (y.float() - ref.float()).abs().max().item()  # before a CUDA graph replay reuses y
                fn = (lambda f: lambda: f(*x))(fn)
                first_s = time.perf_counter() - t0
                for _ in range(3):
                    fn()
                ks, cpu_table = kernels(fn)
                row = {
                    "first_call_s": first_s,
                    "max_err": err,
                    "single_ms": gpu_ms(fn, iters=1, repeats=args.reps),
                    "stream_ms": gpu_ms(fn, iters=20, repeats=7),
                    "host_us": host_us(fn),
                    "launches": sum(k["per_call"] for k in ks),
                    "gpu_us": sum(k["us"] for k in ks),
                    "kernels": ks,
                }
                rows[vname] = row
                if name in args.code.split(","):
                    with open(os.path.join(args.out, f"{name}-code.txt"), "a") as f:
                        f.write(f"\n\n######## {vname}\n" + cpu_table + "\n\n")
                        f.write("\n\n# ---- generated code ----\n".join(code))
                print(
                    f"{name:9s} {vname:30s} single {row['single_ms']:.3f} ms  stream {row['stream_ms']:.3f} ms  "
                    f"host {row['host_us']:.0f} us  kernels {row['launches']:.0f} ({row['gpu_us']:.0f} us GPU)  err {err:.3g}",
                    flush=True,
                )
                with open(os.path.join(args.out, "kernels.txt"), "a") as f:
                    f.write(f"{name} {vname}\n" + "".join(f"  {k['per_call']:4.1f}x {k['us']:8.1f} us  {k['kernel'][:110]}\n" for k in ks))
        report["models"][name] = rows
        with open(os.path.join(args.out, "profile.json"), "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
