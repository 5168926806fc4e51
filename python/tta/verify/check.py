"""``tta.check_kernels``: every plugin's kernel checked against the region it replaces.

For each plugin op of a rewrite (regions of one op share one body and one signature, so each op
is checked once), each kernel config, at two or more small sizes inside the export's ranges
(``check_inputs.py``): random inputs of the ports' dtypes, the config's kernel run on them as
TensorRT runs it, every output compared with the region body's on the same inputs. On a GPU
the run is the compiled artifact TensorRT would receive, launched in TensorRT's order (inputs,
int32 extras, outputs); on a CPU, Triton kernels run under Triton's interpreter with every
parameter bound as the plugin binds it, and cuTile/CuTeDSL kernels cannot run, which the
report says (``check_launch.py``). The outputs are bound in the op's output order, read from
the region's ports, so the check follows whatever order the rewrite gives them.

A mismatch raises ``KernelCheckError`` naming the region, its source line, the config, the
output and the error, and says when the outputs match each other's references (a launch
function that takes its outputs in another order). A passing op is remembered in the on-disk
cache under everything that decides the answer (kernel sources, body, sizes, tolerances).
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import torch

from ..errors import KernelCheckError, KernelCheckWarning, TTAError
from ..runtime import first_use, mismatch
from ..runtime import interpreter as check_interpreter
from ..runtime import kernel_runs as cl
from ..runtime.mismatch import output_params
from . import cache as check_cache
from . import inputs as ci
from .report import (
    ERROR,
    FAIL,
    NOT_RUN,
    PASS,
    SKIPPED,
    ConfigCheck,
    KernelCheck,
    RegionCheck,
    SizeCheck,
    mismatch_message,
)

_TITLES = {"triton": "Triton", "cutile": "cuTile", "cutedsl": "CuTeDSL"}


def output_names(region: Any) -> list[str]:
    """The region's outputs by the names the user's code gives them, in the order the op
    returns them (its ports' order)."""
    return first_use.output_names(region.op, region.outputs)


def check_kernels(
    result: Any,
    *,
    program: Any = None,
    ranges: dict | None = None,
    sizes: Any = 2,
    device: str | None = None,
    max_ptx: int | None = 90,
    tolerances: dict | None = None,
    seed: int = 0,
    cache: Any = None,
    raise_on_mismatch: bool = True,
    timeout: float = 300.0,
    all_sizes: bool | None = None,
) -> KernelCheck:
    """Check every outlined region's kernels of ``result`` (a ``RewriteResult``) against the
    region body; returns a ``KernelCheck`` and raises ``KernelCheckError`` on a mismatch (unless
    ``raise_on_mismatch=False``). ``ranges``: symbol -> (min, max), default from ``result.program``
    and ``program`` (e.g. the ExportedProgram a GraphModule came from); ``sizes``: how many size sets, or the sets (symbol -> value);
    ``device``: "cuda" (launch the compiled artifacts) or "cpu"
    (Triton's interpreter), default cuda when available; ``tolerances``: dtype name -> (atol,
    rtol) over ``check_inputs.TOLERANCES``; ``cache=False``: no cached passes; ``all_sizes``:
    every config at every size (default on a GPU; under the interpreter, whose cost grows with
    the grid, every config runs the first size and the first config that accepts a size the
    others)."""
    t0 = time.perf_counter()
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    report = KernelCheck(regions=[], device=device)
    gpu = device == "cuda" and _cuda_python(report)
    if ranges is None:
        ranges = ci.symbol_ranges(result.program)
        ranges.update(ci.symbol_ranges(program) if program is not None else {})
    store = check_cache.store(cache)
    runs: list[tuple] = []  # (RegionCheck, ConfigCheck, SizeCheck, Launch, case)
    by_op: dict[str, list] = {}
    for r in result.outlined:
        by_op.setdefault(r.op, []).append(r)
    for op, regions in by_op.items():
        _plan_op(
            op, regions, report, runs, ranges, sizes, device, gpu, max_ptx, tolerances, seed, store, gpu if all_sizes is None else all_sizes
        )
    launches = [run[3] for run in runs]
    errors = cl.run_on_gpu(launches) if gpu else check_interpreter.run_interpreted(launches, timeout)
    for (rc, cc, sc, launch, case), err in zip(runs, errors):
        if err is not None:
            sc.status, sc.note = ERROR, err
        else:
            _compare(sc, launch.outputs, case, rc.outputs, cc, tolerances, rc)
    for rc in report.regions:
        if store is not None and not rc.cached and rc.key and check_cache.passed(rc):
            store.put(rc.key, {"check": check_cache.to_json(rc)})
    report.seconds = time.perf_counter() - t0
    if report.unchecked:
        # Never a silent pass: a kernel the check could not run is named, with the reason.
        warnings.warn(
            "tta.check_kernels could not check these kernels:\n  " + "\n  ".join(report.unchecked), KernelCheckWarning, stacklevel=2
        )
    if raise_on_mismatch and report.failures:
        rc, cc, sc = report.failures[0]
        raise KernelCheckError(
            mismatch_message(rc, cc, sc, len(report.failures)),
            region=rc.regions[0],
            source=rc.source,
            config=cc.config,
            output=(sc.failed or [None])[0],
            max_error=sc.max_error,
            report=report,
        )
    return report


class _Case:
    """One size of one op: the inputs, the region body's outputs (and, on demand, the body's
    outputs computed from fp32 copies of floating inputs, for kernels that keep fp32)."""

    def __init__(self, body, inputs: list[torch.Tensor]):
        self.body, self.inputs = body, inputs
        self.refs = self._run([t.clone() for t in inputs])
        self._wide = None

    def _run(self, args: list[torch.Tensor]):
        return cl.run_body(self.body, args)

    def wide_refs(self) -> list | None:
        if self._wide is None:
            self._wide = cl.wide_refs(self.body, self.inputs, self.refs) or ()
        return self._wide or None


def _plan_op(op, regions, report, runs, ranges, n_sizes, device, gpu, max_ptx, tolerances, seed, store, all_sizes) -> None:
    from ..declare.plugin import lookup
    from ..runtime import ops

    r = regions[0]
    plugin, body = lookup(r.impl), ops.body_of(op)
    if plugin is None or not plugin.kernels:
        return
    known = first_use.info(op)
    rc = RegionCheck(
        regions=[x.id for x in regions],
        op=op,
        source=r.source,
        outputs=output_names(r),
        origin=r.origin.kind,
        dims=dict(known.dims) if known is not None else {},
    )
    report.regions.append(rc)
    if body is None or not all(p.is_tensor for p in r.inputs):
        rc.note = f"{NOT_RUN}: " + ("the region body is unknown" if body is None else "the region also reads integers")
        return
    envs = [dict(e) for e in n_sizes] if isinstance(n_sizes, (list, tuple)) else ci.size_sets(r.inputs, ranges, n_sizes)
    rc.key = check_cache.key(op, r, plugin, body, envs, device, gpu, tolerances, seed, all_sizes) if store is not None else None
    hit = store.get(rc.key) if rc.key else None
    if hit is not None:
        rc.configs, rc.cached = check_cache.from_json(hit["check"]), True
        return
    cases = []
    for i, env in enumerate(envs):
        inputs = ci.random_inputs(r.inputs, ci.shapes_at(r.inputs, env), seed + i, device)
        try:
            cases.append((env, _Case(body, inputs)))
        except Exception as e:
            rc.note = f"{NOT_RUN}: the region body failed on random inputs at {env}: {type(e).__name__}: {e}"
            return
    try:
        compiled = _compiled(r, max_ptx) if gpu else None
    except TTAError as e:  # what compile_kernels says goes to the user there; here it only means "not run"
        rc.note = f"{NOT_RUN}: compiling the kernels failed: {e}"
        report.notes.append(f"tta::{op} was not checked: {rc.note}")
        return
    index, covered = 0, {}  # size set -> the first config that runs it
    for spec in plugin.kernels:
        for cfg in spec.config_dicts():
            cc = ConfigCheck(
                spec.backend,
                spec.identity,
                cfg,
                "GPU artifact" if gpu else "Triton interpreter",
                output_params=output_params(spec.launch_fn, len(r.inputs), len(r.outputs)),
            )
            rc.configs.append(cc)
            kernel, index = (compiled[index] if compiled else None), index + 1
            if kernel is None and not _interpretable(spec, cc, report):
                continue
            try:
                plan = None if kernel is not None else cl.record_plan(spec, cfg, r.inputs, plugin, body)
            except TTAError as e:
                cc.how, cc.note = NOT_RUN, f"could not record the launch: {e}"
                report.notes.append(f"tta::{op} {cc.label} was not checked: {cc.note}")
                continue
            guards = kernel.meta.get("guards", []) if kernel is not None else plan.guards
            shapes, dtypes = (
                (kernel.output_shapes, kernel.output_dtypes) if kernel is not None else (plan.output_shapes, plan.output_dtypes)
            )
            for i, (env, case) in enumerate(cases):
                if i > 0 and not all_sizes and i in covered:
                    cc.sizes.append(SizeCheck(env, SKIPPED, note=f"run by {covered[i]} (all_sizes=True runs every config here)"))
                elif _add_run(rc, cc, env, case, kernel, plan, guards, shapes, dtypes, runs):
                    covered.setdefault(i, cc.label)


def _add_run(rc, cc, env, case, kernel, plan, guards, shapes, dtypes, runs) -> bool:
    from ..aot.base import guards_hold, symbol_values

    inputs = [t.clone() for t in case.inputs]  # a kernel that writes its inputs spoils no other run
    values = symbol_values([tuple(t.shape) for t in inputs])
    if not guards_hold(guards, values):
        cc.sizes.append(SizeCheck(env, SKIPPED, note=f"the config's conditions ({', '.join(guards)}) do not hold"))
        return False
    from ..common import bridge as core

    outs = [cl.poisoned(tuple(core.eval_expr(d, values) for d in shape), d, inputs[0].device) for shape, d in zip(shapes, dtypes)]
    sc = SizeCheck(env, PASS)
    cc.sizes.append(sc)
    launch = cl.Launch(inputs, outs, compiled=kernel) if kernel is not None else cl.triton_launch(plan, inputs, outs)
    runs.append((rc, cc, sc, launch, case))
    return True


def _compare(sc: SizeCheck, outs, case: _Case, names: list[str], cc: ConfigCheck, tolerances, rc: RegionCheck) -> None:
    refs = case.refs
    if len(outs) != len(refs):
        sc.status, sc.note = FAIL, f"the kernel writes {len(outs)} outputs, the region body returns {len(refs)}"
        sc.failed = list(names)
        return
    found = mismatch.find(outs, refs, names, tolerances, wide=None)
    if found is not None and case.wide_refs() is not None:
        found = mismatch.find(outs, refs, names, tolerances, wide=case.wide_refs())
    sc.errors = {n: (ci.max_error(o, r) if o.shape == r.shape else float("inf")) for n, o, r in zip(names, outs, refs)}
    sc.max_error = max(sc.errors.values(), default=0.0)
    if found is None:
        return
    sc.status, sc.failed = FAIL, found.failed
    sc.note = "; ".join(found.shapes)
    fixes = mismatch.fixes(found, params=cc.output_params, launch=cc.launch, origin=rc.origin, source=rc.source)
    sc.hint = ". ".join(f[0].upper() + f[1:] for f in fixes) or None


def _interpretable(spec, cc: ConfigCheck, report: KernelCheck) -> bool:
    from ..declare.specs import installed

    title = _TITLES.get(spec.backend, spec.backend)
    if spec.backend != "triton":
        cc.how, cc.note = NOT_RUN, f"could not run: {title} kernels have no CPU interpreter; run the check on a GPU"
    elif not installed("triton"):
        cc.how, cc.note = NOT_RUN, "could not run: Triton is not installed"
    else:
        return True
    note = f"{title} kernels were not run ({cc.note.removeprefix('could not run: ')})"
    if note not in report.notes:
        report.notes.append(note)
    return False


def _compiled(region, max_ptx):
    from ..fx.kernels import compile_kernels

    major, minor = torch.cuda.get_device_capability()
    return compile_kernels([region], sm=10 * major + minor, max_ptx=max_ptx)[region.op]


def _cuda_python(report: KernelCheck) -> bool:
    try:
        from ..runtime.launcher import cuda_driver

        cuda_driver()
        return True
    except ImportError:
        report.notes.append("cuda-python is not installed: Triton kernels ran under the interpreter, on CPU tensors")
        report.device = "cpu"
        return False
