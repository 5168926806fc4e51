"""GPU end to end (``-m gpu``; fails without a CUDA device, never skips): the models of
``tta.tools.gpu.models`` through tta's eager rewrite, ``tta.compile(backend="inductor")`` and
``tta.aot_compile`` (the package loaded in a fresh process that never imports tta), in fp16 and
bf16, at three sizes of a dynamic batch dim, against the original model in the same dtype.

That the user's kernel ran, not the region body: its name among the CUDA kernels the profiler
saw, and in Inductor's generated code; and a plugin whose kernel deliberately differs from its
region body (adds 1), whose output shows which of the two ran.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
import torch
import triton
import triton.language as tl

import tta
from tta.runtime import eager_stats
from tta.tools.gpu import models

pytestmark = pytest.mark.gpu

DTYPES = (torch.float16, torch.bfloat16)
BATCHES = (1, 3, 8)
CASES = [(c.name, dt) for c in models.cases() for dt in DTYPES]
IDS = [f"{n}-{str(dt).removeprefix('torch.')}" for n, dt in CASES]


def _cuda_kernels(fn) -> set[str]:
    """Names of the CUDA kernels that ran during ``fn()``."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return {e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA}


def _ran(kernel: str, names: set[str]) -> bool:
    return any(kernel in n for n in names)


def _check_close(case, dtype, out, ref, what: str) -> None:
    atol, rtol = case.tol[str(dtype).removeprefix("torch.")]
    assert out.shape == ref.shape and out.dtype == ref.dtype, f"{what}: {out.shape}/{out.dtype} vs {ref.shape}/{ref.dtype}"
    err = (out.float() - ref.float()).abs()
    bad = err > atol + rtol * ref.float().abs()
    assert not bad.any(), f"{what}: {int(bad.sum())} element(s) off, max abs err {err.max().item():.3g} (atol {atol}, rtol {rtol})"
    assert torch.isfinite(out).all(), f"{what}: non-finite outputs"


def _setup(name, dtype):
    case = models.by_name(name)
    model = case.model(dtype, "cuda")
    return case, model, case.inputs(2, dtype, "cuda")


@pytest.mark.parametrize("name,dtype", CASES, ids=IDS)
def test_eager_rewritten(name, dtype):
    case, model, example = _setup(name, dtype)
    ep = torch.export.export(model, example, dynamic_shapes=case.dynamic_shapes())
    result = tta.rewrite(ep)
    assert len(result.outlined) == case.n_regions and not result.refused, str(result)
    run = result.program.module()
    eager_stats.reset()
    with torch.no_grad():
        for b in BATCHES:
            x = case.inputs(b, dtype, "cuda")
            out = {}
            names = _cuda_kernels(lambda: out.setdefault("y", run(*x)))
            _check_close(case, dtype, out["y"], model(*x), f"{name} eager-rewritten batch {b}")
            for k in case.kernels:
                assert _ran(k, names), f"{k} did not run; CUDA kernels: {sorted(names)}"
    paths = eager_stats.eager_paths()
    assert paths and all(set(p) == {"kernel"} for p in paths.values()), paths  # never the region body


@pytest.mark.parametrize("name,dtype", CASES, ids=IDS)
def test_inductor(name, dtype):
    from torch._inductor.utils import run_and_get_code

    case, model, example = _setup(name, dtype)
    compiled = tta.compile(model, example, case.dynamic_shapes(), backend="inductor")
    report = compiled.tta_report
    assert len(report.regions) == case.n_regions and all(r.user_kernel for r in report.regions), str(report)
    # Caches off: a cache hit would skip the code generation whose output is checked here.
    with torch.no_grad(), torch._inductor.config.patch(force_disable_caches=True):
        _, code = run_and_get_code(compiled, *example)
    text = "\n".join(code)
    for k in case.kernels:
        assert k in text, f"{k} is not in Inductor's generated code"
    with torch.no_grad():
        for b in BATCHES:
            x = case.inputs(b, dtype, "cuda")
            out = {}
            names = _cuda_kernels(lambda: out.setdefault("y", compiled(*x)))
            _check_close(case, dtype, out["y"], model(*x), f"{name} inductor batch {b}")
            for k in case.kernels:
                assert _ran(k, names), f"{k} did not run; CUDA kernels: {sorted(names)}"


# Runs in a fresh interpreter: tta must not be importable there (no PYTHONPATH), and is not imported.
_LOAD_AND_RUN = textwrap.dedent(
    """
    import sys, torch
    package, inputs, outputs = sys.argv[1:4]
    model = torch._inductor.aoti_load_package(package)
    outs, names = [], set()
    for args in torch.load(inputs):
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            y = model(*[a.cuda() for a in args])
            torch.cuda.synchronize()
        outs.append(y.cpu())
        names |= {e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA}
    assert not any(m == "tta" or m.startswith("tta.") for m in sys.modules), "tta was imported"
    torch.save({"outs": outs, "kernels": sorted(names)}, outputs)
    """
)


def _run_fresh(package: str, batches: list[tuple], tmp_path) -> dict:
    inputs, outputs = str(tmp_path / "inputs.pt"), str(tmp_path / "outputs.pt")
    torch.save([tuple(t.cpu() for t in args) for args in batches], inputs)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run(
        [sys.executable, "-c", _LOAD_AND_RUN, package, inputs, outputs], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert r.returncode == 0, f"loading the package in a fresh process failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return torch.load(outputs)


@pytest.mark.parametrize("name,dtype", CASES, ids=IDS)
def test_aot_inductor_fresh_process(name, dtype, tmp_path):
    case, model, example = _setup(name, dtype)
    package = tta.aot_compile(model, example, tmp_path / f"{name}.pt2", case.dynamic_shapes())
    assert all(r.user_kernel for r in package.tta_report.regions), str(package.tta_report)
    assert os.path.getsize(package.path) > 0
    batches = [case.inputs(b, dtype, "cuda") for b in BATCHES]
    got = _run_fresh(package.path, batches, tmp_path)
    with torch.no_grad():
        for b, x, out in zip(BATCHES, batches, got["outs"]):
            _check_close(case, dtype, out.cuda(), model(*x), f"{name} AOTInductor batch {b}")
    for k in case.kernels:
        assert _ran(k, set(got["kernels"])), f"{k} did not run in the package; CUDA kernels: {got['kernels']}"


# A kernel that is deliberately not its region body: relu(x + y) + 1. Whichever output comes
# out says which of the two ran.
@triton.jit
def marked_add_relu_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    y = tl.load(y_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (tl.maximum(x + y, 0.0) + 1.0).to(out_ptr.dtype.element_ty), mask=mask)


def launch_marked_add_relu(x, y, out, *, BLOCK: int = 1024):
    n = out.numel()
    marked_add_relu_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK)


MARKED = tta.custom_plugin(kernel=tta.triton(launch_marked_add_relu), meta_impl=lambda x, y: x.new_empty(x.shape), name="marked_add_relu")


class MarkedBlock(torch.nn.Module):
    def forward(self, x, y):
        with tta.lower_as(impl=MARKED):
            return torch.relu(x + y)


@pytest.mark.parametrize("how", ["eager", "inductor", "aot_inductor"])
def test_the_user_kernel_runs_not_the_region_body(how, tmp_path):
    model = MarkedBlock()
    x, y = torch.randn(4, 3000, device="cuda"), torch.randn(4, 3000, device="cuda")
    dyn = ({0: torch.export.Dim("batch", min=1, max=64)},) * 2
    sizes = [(b, torch.randn(b, 3000, device="cuda"), torch.randn(b, 3000, device="cuda")) for b in BATCHES]
    if how == "eager":
        ep = torch.export.export(model, (x, y), dynamic_shapes=dyn)
        # The kernel deliberately computes something else, which the first eager call refuses.
        with pytest.raises(tta.KernelCheckError, match="does not compute what the region computes, on the first eager call"):
            tta.rewrite(ep).program.module()(x, y)
        run = tta.rewrite(ep, check_kernels=False).program.module()
        outs = [run(a, c) for _, a, c in sizes]
    elif how == "inductor":
        # The kernel deliberately computes something else, which the default kernel check refuses.
        with pytest.raises(tta.KernelCheckError, match="does not compute what the region computes"):
            tta.compile(model, (x, y), dyn, backend="inductor")
        run = tta.compile(model, (x, y), dyn, backend="inductor", check_kernels=False)
        outs = [run(a, c) for _, a, c in sizes]
    else:
        package = tta.aot_compile(model, (x, y), tmp_path / "marked.pt2", dyn, check_kernels=False)
        outs = [o.cuda() for o in _run_fresh(package.path, [(a, c) for _, a, c in sizes], tmp_path)["outs"]]
    for (b, a, c), out in zip(sizes, outs):
        body = torch.relu(a + c)
        torch.testing.assert_close(out, body + 1.0, msg=lambda m: f"{how} batch {b}: not the kernel's output: {m}")


def _dsl_bundle() -> str:
    path = os.environ.get("TTA_DSL_BUNDLE", "")
    assert os.path.isfile(path), (
        "TTA_DSL_BUNDLE must name a kernel bundle built where cuTile and CuTeDSL are installed: "
        "python -m tta.tools.gpu.build_bundle OUT.json --max-ptx 90"
    )
    return path


@pytest.mark.parametrize("dtype", DTYPES, ids=["float16", "bfloat16"])
@pytest.mark.parametrize("backend", ["cutile", "cutedsl"])
@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
def test_dsl_kernel_runs_as_its_compiled_artifact_under_inductor(backend, dtype, mode):
    """A cuTile/CuTeDSL plugin under tta.compile(backend="inductor"): tta_cubin::<op> launches the
    kernel compiled on another machine (this one has neither DSL) on torch's stream, also
    inside a CUDA graph; the kernel is seen running and its outputs match."""
    from unittest import mock

    from tta.inductor import program as lowering
    from tta.inductor.kernel_bundle import load_bundle
    from tta.tools.gpu import build_bundle

    path = _dsl_bundle()
    # Declared as on the machine that compiled it: only the compiled artifact runs here.
    with mock.patch("tta.declare.specs.installed", return_value=True):
        plugin = models.dsl_add_relu_plugin(backend)
    entries = {k.entry for k in load_bundle(path)[plugin.name]}
    model = models.DSLResidualBlock(plugin)
    kw = {} if mode == "default" else {"mode": mode}
    compiled = tta.compile(
        model, build_bundle.example(4, dtype, "cuda"), build_bundle.dynamic_shapes(), backend="inductor", kernels=path, **kw
    )
    [region] = compiled.tta_report.regions
    assert (region.runs, region.backend) == (lowering.COMPILED_KERNEL, backend), str(compiled.tta_report)
    assert f"tta_cubin::{region.op}" in str(compiled.tta_report)
    for b in BATCHES + (300,):
        x, y = build_bundle.example(b, dtype, "cuda")
        out = {}
        for _ in range(3):  # CUDA graphs record on a later call
            names = _cuda_kernels(lambda: out.__setitem__("y", compiled(x, y).clone()))
        torch.testing.assert_close(out["y"], torch.relu(x + y), msg=lambda m: f"{backend} {mode} batch {b}: {m}")
        if mode == "default":  # a CUDA graph replay may show the profiler no kernel names
            assert any(e in n for n in names for e in entries), f"no compiled {backend} kernel ran; CUDA kernels: {sorted(names)}"
