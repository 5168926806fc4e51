"""``python -m tta.tools.gpu.conformance MANIFEST [--out DIR]``: launch every kernel of a manifest the
way TensorRT's AOT plugin runtime does (``driver.py``: cuModuleLoadData, grid/block/shared memory
from the recorded expressions, cuLaunchKernel with (input pointers, int32 extras, output
pointers)) at each of its test sizes, and compare with the example's eager PyTorch reference.

Each backend runs in a child process with a time limit (``--timeout``), rows streamed back as
they finish, so a kernel that hangs is reported (with the launch it hung in) instead of taking
the whole report with it; ``--inline`` runs everything in one process. Prints a table and writes
``conformance.json`` and ``conformance.md`` to ``--out``. Exit status 1 if any case fails.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict, dataclass

import torch

from ...aot.base import read_manifest
from ...examples.kernels import by_name
from ...runtime.launcher import Loaded, driver_version


@dataclass
class Row:
    kernel: str
    backend: str
    format: str
    dtype: str
    shape: str
    grid: str
    block: str
    smem: int
    max_abs_err: float | None
    status: str  # "pass" | "FAIL" | "error"
    note: str = ""


def _config(k) -> str:
    return ",".join(f"{a}={b}" for a, b in k.config)


def run(manifest: str, backend: str | None = None, progress=None) -> list[Row]:
    """Rows for every (kernel, test size) of the manifest (only ``backend``'s, if given).
    ``progress(event, payload)`` sees ``("start", description)`` before each launch and
    ``("row", Row)`` after it, so a caller can tell which launch hung."""
    kernels, _ = read_manifest(manifest)
    rows = []
    emit = progress or (lambda *a: None)
    for k in kernels:
        if backend is not None and k.backend != backend:
            continue
        name = f"{k.meta.get('example', k.entry)}[{_config(k)}]"
        base = dict(
            kernel=name,
            backend=k.backend,
            format=f"{k.code_format} {k.ptx_version or ''}".strip(),
            dtype=k.meta.get("dtype", k.input_dtypes[0]),
            block="x".join(map(str, k.block)),
            smem=k.shared_mem,
        )
        emit("start", f"{name} {base['dtype']}: load {k.code_format}")
        try:
            ex = by_name(k.meta["example"])
            loaded = Loaded(k)
        except Exception as e:
            row = Row(shape="-", grid="-", max_abs_err=None, status="error", note=f"{type(e).__name__}: {e}", **base)
            rows.append(row)
            emit("row", row)
            continue
        dtype = getattr(torch, base["dtype"])
        for shape in k.meta.get("test_shapes", []):
            shape_s = "x".join(map(str, shape))
            emit("start", f"{name} {base['dtype']} {shape_s}: launch")
            inputs = ex.make_inputs(tuple(shape), dtype, "cuda")
            try:
                grid, extras, _ = loaded.plan(inputs)
                outs = loaded(inputs)
                torch.cuda.synchronize()
                ref = ex.reference(*inputs)
                refs = ref if isinstance(ref, (list, tuple)) else [ref]
                errs = [ex.compare(o, r) for o, r in zip(outs, refs)]
                err = max(e for e, _ in errs)
                ok = all(ok for _, ok in errs) and len(outs) == len(refs)
                row = Row(
                    shape=shape_s,
                    grid="x".join(map(str, grid)),
                    max_abs_err=err,
                    status="pass" if ok else "FAIL",
                    note=f"extras={extras}",
                    **base,
                )
            except Exception as e:
                row = Row(shape=shape_s, grid="-", max_abs_err=None, status="error", note=f"{type(e).__name__}: {e}", **base)
            rows.append(row)
            emit("row", row)
    return rows


def _child(manifest: str, backend: str, jsonl: str, timeout: float) -> int:
    """One backend's launches, each row appended to ``jsonl`` as soon as it is known."""
    import faulthandler

    # If a launch hangs, the parent kills us at ``timeout``; dump the stack just before.
    faulthandler.dump_traceback_later(max(timeout - 5, 1), exit=False)
    with open(jsonl, "a") as f:

        def progress(event, payload):
            f.write(json.dumps({"event": event, "data": asdict(payload) if event == "row" else payload}) + "\n")
            f.flush()
            if event == "row":
                print(f"  {payload.status:5} {payload.kernel} {payload.dtype} {payload.shape} err={payload.max_abs_err}", flush=True)

        run(manifest, backend, progress)
    return 0


def run_isolated(manifest: str, timeout: float = 90.0) -> list[Row]:
    """Each backend in its own process with a time limit: a kernel that hangs or corrupts the
    context costs that backend's remaining rows, not the whole report."""
    import subprocess
    import tempfile

    kernels, _ = read_manifest(manifest)
    backends = list(dict.fromkeys(k.backend for k in kernels))
    rows: list[Row] = []
    for backend in backends:
        jsonl = tempfile.mktemp(suffix=f"-{backend}.jsonl")
        cmd = [sys.executable, "-m", "tta.tools.gpu.conformance", manifest, "--child", backend, "--jsonl", jsonl, "--timeout", str(timeout)]
        print(f"== {backend}", flush=True)
        errlog = jsonl + ".stderr"
        with open(errlog, "w") as err:
            try:
                r = subprocess.run(cmd, timeout=timeout, stdout=sys.stdout, stderr=err)
                problem = None if r.returncode == 0 else f"runner exited with {r.returncode}"
            except subprocess.TimeoutExpired:
                problem = f"timed out after {timeout:.0f}s"
        if problem:
            with open(errlog) as f:
                tail = f.read()[-1500:].strip()
            # faulthandler's dump (or the crash) says where the child was stuck
            problem += f"; stderr: {tail}" if tail else ""
        last_start = None
        if os.path.exists(jsonl):
            with open(jsonl) as f:
                for line in f:
                    ev = json.loads(line)
                    if ev["event"] == "row":
                        rows.append(Row(**ev["data"]))
                        last_start = None
                    else:
                        last_start = ev["data"]
        if problem:
            where = f" during: {last_start}" if last_start else ""
            rows.append(
                Row(
                    kernel=f"({backend} runner)",
                    backend=backend,
                    format="-",
                    dtype="-",
                    shape="-",
                    grid="-",
                    block="-",
                    smem=0,
                    max_abs_err=None,
                    status="error",
                    note=f"{problem}{where}".replace("\n", " "),
                )
            )
    return rows


def markdown(rows: list[Row], header: str = "") -> str:
    cols = ["kernel", "backend", "format", "dtype", "shape", "grid", "block", "smem", "max abs err", "result"]
    lines = [header] if header else []
    lines += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        err = "-" if r.max_abs_err is None else f"{r.max_abs_err:.2e}"
        result = r.status if r.status == "pass" else f"**{r.status}** {r.note}"
        lines.append(
            f"| {r.kernel} | {r.backend} | {r.format} | {r.dtype} | {r.shape} | {r.grid} | {r.block} | {r.smem} | {err} | {result} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tta.tools.gpu.conformance", description=__doc__.split("\n\n")[0])
    p.add_argument("manifest")
    p.add_argument("--out", default=".")
    p.add_argument("--inline", action="store_true", help="run every backend in this process (no time limit)")
    p.add_argument("--timeout", type=float, default=90.0, help="seconds per backend (isolated mode)")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--jsonl", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        return _child(args.manifest, args.child, args.jsonl, args.timeout)
    t0 = time.perf_counter()
    rows = run(args.manifest) if args.inline else run_isolated(args.manifest, args.timeout)
    passed = sum(r.status == "pass" for r in rows)
    try:
        where = f"GPU: {torch.cuda.get_device_name()}, CUDA driver {driver_version()}"
    except Exception as e:  # no GPU here: the rows say why each launch failed
        where = f"no GPU ({type(e).__name__})"
    header = f"{where}, torch {torch.__version__}; {passed}/{len(rows)} cases pass ({time.perf_counter() - t0:.1f}s)\n"
    md = markdown(rows, header)
    print(md)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "conformance.json"), "w") as f:
        json.dump({"header": header.strip(), "rows": [asdict(r) for r in rows]}, f, indent=1)
    with open(os.path.join(args.out, "conformance.md"), "w") as f:
        f.write(md)
    return 0 if passed == len(rows) and rows else 1


if __name__ == "__main__":
    sys.exit(main())
