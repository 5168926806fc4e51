"""Compile a plugin's kernel specs into ``CompiledKernel``s for one (dtypes, target SM), through
the on-disk cache, in parallel.

``compile_specs`` keys every (spec, config) on everything that decides the compiled bytes (see
``task_key``), looks it up in the cache, compiles the misses with ``driver.compile_spec`` and
stores them. The key covers the source of the launch function, of its module, and of every
kernel and function it reaches, so an edited kernel is a miss. What a cache entry says about
the code it came from is never used to import or run anything: the caller's objects decide.
``compile_plugin`` and ``compile_kernels`` are the plugin- and rewrite-level entry points.
Threads or processes: see ``_POOL`` below.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import functools
import hashlib
import multiprocessing
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any, Sequence

from ..common.cache import Cache, digest
from ..common.dtypes import dtype_name
from ..common.identity import qualified_name, reachable_code, source_digest
from ..errors import PluginError
from . import phases
from .base import CompiledKernel, input_symbol
from .driver import backend, compile_spec
from .progress import Progress
from .session import TensorType

# Parallelism. Triton's compile is mostly Python and MLIR passes that keep the GIL, plus a
# ptxas subprocess, so threads gain little; a forked process pool scales (measurements in
# docs/benchmarks.md). Fork, not spawn: a spawned child would re-import torch (seconds) and
# could not receive lambdas (meta_impls); forked children inherit the task list instead.
_POOL = os.environ.get("TTA_COMPILE_POOL", "process")  # "process" | "thread" | "serial"


@dataclass
class Task:
    spec: Any
    config: dict
    input_metas: list[TensorType]
    output_metas: Any  # list[TensorType] | Callable
    sm: int
    max_ptx: int | None
    options: dict
    key: str = ""
    times: dict[str, float] = field(default_factory=dict)  # seconds per phase (phases.py), once run

    @property
    def label(self) -> str:
        cfg = ",".join(f"{k}={v}" for k, v in self.config.items())
        dt = "/".join(m.dtype for m in self.input_metas)
        return f"{self.spec.backend} {qualified_name(self.spec.launch_fn)} [{cfg}] {dt} sm_{self.sm}"


_file_digests: dict[tuple, str] = {}


def _module_file_digest(obj: Any) -> str | None:
    """sha256 of the file defining ``obj``'s module: covers helpers the launch function calls."""
    mod = sys.modules.get(getattr(obj, "__module__", "") or "")
    path = getattr(mod, "__file__", None)
    if not path:
        return None
    try:
        st = os.stat(path)
        stamp = (path, st.st_mtime_ns, st.st_size)
        if stamp not in _file_digests:
            with open(path, "rb") as f:
                _file_digests[stamp] = hashlib.sha256(f.read()).hexdigest()
        return _file_digests[stamp]
    except OSError:
        return None


def _output_key(output_metas: Any) -> Any:
    if callable(output_metas):
        return {"fn": qualified_name(output_metas), "src": source_digest(output_metas)}
    return [m.key() for m in output_metas]


def task_key(task: Task, toolchain: dict) -> str:
    import torch

    spec = task.spec
    return digest(
        {
            "what": "tta compiled kernel",
            "backend": spec.backend,
            "launch": spec.identity,
            "launch_src": source_digest(spec.launch_fn),
            "launch_module": _module_file_digest(spec.launch_fn),
            "kernels": reachable_code(spec.launch_fn),
            "config": sorted(task.config.items()),
            "inputs": [m.key() for m in task.input_metas],
            "outputs": _output_key(task.output_metas),
            "sm": task.sm,
            "max_ptx": task.max_ptx,
            "options": sorted(task.options.items()),
            "toolchain": toolchain,
            "torch": torch.__version__,  # symbolic shapes and their printing come from torch
            "tta": _tta_version(),
        }
    )


@functools.lru_cache(maxsize=None)
def _tta_version() -> str:
    try:
        from importlib.metadata import version

        return version("tta")
    except Exception:
        return "0"


def _compile_one(task: Task) -> tuple[CompiledKernel, dict[str, float]]:
    """The task's kernel and the seconds each phase of its compile took."""
    with phases.timing() as times:
        k = compile_spec(task.spec, task.config, task.input_metas, task.output_metas, task.sm, task.max_ptx, **task.options)
    return k, times


# Forked workers read their tasks from here (inherited memory), so nothing but an index is
# pickled on the way in.
_FORK_TASKS: list[Task] = []


def _fork_worker(i: int) -> tuple[int, tuple[CompiledKernel, dict] | None, str | None]:
    try:
        return i, _compile_one(_FORK_TASKS[i]), None
    except PluginError as e:
        return i, None, str(e)
    except Exception as e:  # keep the worker's error readable in the parent
        return i, None, f"{type(e).__name__}: {e}"


def _cuda_initialized() -> bool:
    torch = sys.modules.get("torch")
    try:
        return bool(torch is not None and torch.cuda.is_initialized())
    except Exception:
        return False


def run_tasks(
    tasks: Sequence[Task], jobs: int | None = None, pool: str | None = None, progress: bool | None = None
) -> list[CompiledKernel]:
    """Compile ``tasks`` (no cache), in parallel where possible; results in task order. Each
    task's ``times`` gets the seconds per phase of its compile.
    ``progress``: the stderr progress line (``aot/progress.py``; None: on a terminal only)."""
    n = len(tasks)
    if n == 0:
        return []
    pool = pool or _POOL
    jobs = jobs or int(os.environ.get("TTA_COMPILE_JOBS", 0)) or min(n, os.cpu_count() or 1)
    results: list[CompiledKernel | None] = [None] * n
    with Progress(n, progress) as bar:
        _run(tasks, jobs, pool, results, bar)
    for t, (_, times) in zip(tasks, results):
        phases.add(t.times, times)
    return [k for k, _ in results]  # type: ignore[misc]


def _run(tasks: Sequence[Task], jobs: int, pool: str, results: list, bar: Progress) -> None:
    n = len(tasks)
    if jobs <= 1 or n == 1 or pool == "serial":
        for i, t in enumerate(tasks):
            results[i] = _compile_one(t)
            bar.step(t.label)
        return
    if pool == "process" and _cuda_initialized():
        # fork() after CUDA initialisation leaves the child a broken context; compiling needs
        # no GPU, but be safe and use threads in such a process (e.g. on a GPU test machine).
        pool = "thread"
    if pool == "thread":
        with cf.ThreadPoolExecutor(max_workers=jobs) as ex:
            futs = {ex.submit(_compile_one, t): i for i, t in enumerate(tasks)}
            for f in cf.as_completed(futs):
                i = futs[f]
                results[i] = f.result()
                bar.step(tasks[i].label)
        return
    global _FORK_TASKS
    _FORK_TASKS = list(tasks)
    errors = []
    try:
        ctx = multiprocessing.get_context("fork")
        with cf.ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as ex:
            futs = [ex.submit(_fork_worker, i) for i in range(n)]
            for f in cf.as_completed(futs):
                i, done, err = f.result()
                if err is not None:
                    errors.append((i, err))
                results[i] = done
                bar.step(tasks[i].label)
    finally:
        _FORK_TASKS = []
    if errors:
        errors.sort()
        raise PluginError(errors[0][1] + (f" (and {len(errors) - 1} more failing configs)" if len(errors) > 1 else ""))


@dataclass
class Request:
    """One plugin's kernels for one signature: every config of every spec, for these inputs."""

    specs: Sequence[Any]
    input_metas: Sequence[TensorType]
    output_metas: Any  # list[TensorType] | Callable (a meta_impl or region body)
    sm: int = 90
    max_ptx: int | None = 90
    options: dict = field(default_factory=dict)

    def tasks(self) -> list[Task]:
        return [
            Task(spec, dict(cfg), list(self.input_metas), self.output_metas, self.sm, self.max_ptx, dict(self.options))
            for spec in self.specs
            for cfg in spec.config_dicts()
        ]


def compile_requests(
    requests: Sequence[Request],
    cache: Cache | None | bool = None,
    jobs: int | None = None,
    pool: str | None = None,
    progress: bool | None = None,
    timings: list[Task] | None = None,
) -> list[list[CompiledKernel]]:
    """Every request's kernels, in order (spec-major within each), through the cache; the misses
    of all requests compile in one pool, so a model's plugins compile side by side and a task two
    requests share compiles once. ``cache=False`` disables the cache; None uses the default
    directory. ``timings``: a list that gets every task, each with the seconds per phase it took
    (``Task.times``; a cache hit has only ``cache``)."""
    if cache is None or cache is True:
        cache = Cache()
    per_request = [r.tasks() for r in requests]
    tasks = [t for ts in per_request for t in ts]
    results: list[CompiledKernel | None] = [None] * len(tasks)
    misses: dict[str, list[int]] = {}  # key -> the tasks that wait for it (the first compiles)
    toolchains: dict[str, dict] = {}
    for i, t in enumerate(tasks):
        if cache is False:
            misses[str(i)] = [i]
            continue
        with _timed(t, "cache"):
            if t.spec.backend not in toolchains:
                toolchains[t.spec.backend] = backend(t.spec.backend).toolchain()
            t.key = task_key(t, toolchains[t.spec.backend])
            payload = None if t.key in misses else cache.get(t.key)
            if payload is not None:
                results[i] = CompiledKernel.from_json(payload["kernel"])
                continue
        misses.setdefault(t.key, []).append(i)
    waiting = list(misses.values())
    compiled = run_tasks([tasks[w[0]] for w in waiting], jobs=jobs, pool=pool, progress=progress)
    for w, k in zip(waiting, compiled):
        for i in w:
            results[i] = k
        if cache is not False:
            with _timed(tasks[w[0]], "cache"):
                cache.put(tasks[w[0]].key, {"kernel": k.to_json(), "label": tasks[w[0]].label})
    if timings is not None:
        timings.extend(tasks)
    out, at = [], 0
    for ts in per_request:
        out.append(results[at : at + len(ts)])
        at += len(ts)
    return out  # type: ignore[return-value]


# compile_requests' keywords: how to run, not what to compile.
RUN_OPTIONS = ("cache", "jobs", "pool", "progress", "timings")


def split_run_options(kw: dict) -> tuple[dict, dict]:
    """(``RUN_OPTIONS`` given in ``kw``, the compile options left)."""
    return {k: v for k, v in kw.items() if k in RUN_OPTIONS}, {k: v for k, v in kw.items() if k not in RUN_OPTIONS}


def compile_specs(
    specs: Sequence[Any],
    input_metas: Sequence[TensorType],
    output_metas: Any,
    sm: int = 90,
    max_ptx: int | None = 90,
    cache: Cache | None | bool = None,
    jobs: int | None = None,
    pool: str | None = None,
    progress: bool | None = None,
    timings: list[Task] | None = None,
    **options: Any,
) -> list[CompiledKernel]:
    """Every config of every spec, in order (spec-major); see ``compile_requests``."""
    (out,) = compile_requests([Request(specs, input_metas, output_metas, sm, max_ptx, options)], cache, jobs, pool, progress, timings)
    return out


@contextlib.contextmanager
def _timed(task: Task, name: str):
    """Charge the time inside to ``task``'s phase ``name``."""
    with phases.timing() as times, phases.phase(name):
        yield
    phases.add(task.times, times)


def plugin_request(
    plugin: Any, input_metas: Sequence[TensorType], output_metas: Any = None, sm: int = 90, max_ptx: int | None = 90, **options: Any
) -> Request:
    """All tactics of a plugin (each spec x config) for these input dtypes/shapes. Output shapes
    come from ``output_metas``, else from the plugin's ``meta_impl``."""
    out = output_metas if output_metas is not None else plugin.meta_impl
    if out is None:
        raise PluginError(
            f"{plugin.name}: compiling needs the output shapes: give the plugin a meta_impl or pass output_metas (e.g. the region body)"
        )
    if not plugin.kernels:
        raise PluginError(f"{plugin.name}: the plugin has no kernels to compile")
    return Request(plugin.kernels, input_metas, out, sm, max_ptx, options)


def compile_plugin(
    plugin: Any,
    input_metas: Sequence[TensorType],
    output_metas: Any = None,
    sm: int = 90,
    max_ptx: int | None = 90,
    **kw: Any,
) -> list[CompiledKernel]:
    """``plugin_request``'s kernels, compiled; ``kw``: compile options and ``RUN_OPTIONS``."""
    run, options = split_run_options(kw)
    (out,) = compile_requests([plugin_request(plugin, input_metas, output_metas, sm, max_ptx, **options)], **run)
    return out


def export_ranges(program: Any) -> dict[str, tuple[int, int | None]]:
    """The sizes export proved for each symbol of ``program`` (an ``ExportedProgram``; anything
    else has none): symbol text -> (min, max), max None when unbounded."""
    out: dict[str, tuple[int, int | None]] = {}
    for sym, vr in (getattr(program, "range_constraints", None) or {}).items():
        if not getattr(sym, "is_Symbol", False):
            continue
        try:
            lo = int(vr.lower)
        except (TypeError, ValueError):
            lo = 0
        try:
            hi = int(vr.upper) if vr.upper.is_finite else None
        except (TypeError, ValueError, AttributeError):
            hi = None
        out[str(sym)] = (max(lo, 0), hi)
    return out


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def region_input_types(ports: Sequence[Any], ranges: dict[str, tuple[int, int | None]] | None = None) -> list[TensorType]:
    """The kernel's input types for a region's tensor ports, with the shapes as export proved
    them: a dim whose symbol an earlier dim already has (export unified them, e.g. two inputs
    of one batch) is that dim (``"i0_0"``), one that is an expression over earlier dims' symbols
    (``2*s0``) says so, and every other symbolic dim is dynamic with its own symbol and the
    range export proved for it (``ranges``: symbol text -> (min, max))."""
    ranges = ranges or {}
    seen: dict[str, str] = {}  # export dim text -> the i{k}_{j} it first appeared as
    out = []
    for k, p in enumerate(ports):
        dims: list[int | str | None] = []
        dim_ranges: list[tuple[int, int | None] | None] = []
        for j, d in enumerate(p.shape):
            if isinstance(d, int):
                dims.append(d), dim_ranges.append(None)
                continue
            text = str(d)
            if text in seen:
                dims.append(seen[text]), dim_ranges.append(None)
                continue
            names = set(_NAME.findall(text)) - _EXPR_FUNCS
            if names and names <= set(seen) and not _NAME.fullmatch(text):
                dims.append(_NAME.sub(lambda m: seen.get(m.group(0), m.group(0)), text)), dim_ranges.append(None)
                continue
            seen[text] = input_symbol(k, j)
            dims.append(None), dim_ranges.append(ranges.get(text) if _NAME.fullmatch(text) else None)
        has_ranges = any(r is not None for r in dim_ranges)
        out.append(TensorType(dtype_name(p.dtype), tuple(dims), tuple(dim_ranges) if has_ranges else None))
    return out


_EXPR_FUNCS = {"FloorDiv", "CeilDiv", "Mod", "Max", "Min"}


def region_input_metas(region: Any, ranges: dict[str, tuple[int, int | None]] | None = None) -> list[TensorType]:
    """``region_input_types`` of an outlined region (``RegionReport``): ``tta.check_kernels``
    records with the same types ``compile_kernels`` compiles for."""
    return region_input_types(region.inputs, ranges)
