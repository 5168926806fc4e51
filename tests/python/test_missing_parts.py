"""CPU models and missing packages: what runs, and what the user is told.

* ``tta.compile(backend="inductor")`` and ``tta.aot_compile`` on a CPU model whose plugins have
  Triton kernels run the region body (Inductor compiles Triton kernels for GPUs only), and the
  report says so; with ``TRITON_INTERPRET=1`` too (the trace used to recurse without end).
* Without Torch-TensorRT or TensorRT, ``tta.compile`` (TensorRT backend) and ``tta.custom_op``
  raise ``MissingPackageError``, naming the packages, how to install them and into which Python.
  The packages are hidden through ``sys.modules`` so that this runs wherever they are installed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import types

import pytest
import torch

import tta
from tta.errors import MissingPackageError, TTAError
from tta.inductor import program as lowering
from tta.tools.gpu import models

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYTHON = os.path.join(ROOT, "python")


def _residual():
    case = models.by_name("residual")
    return case, case.model(torch.float32, "cpu")


@pytest.mark.kernels
def test_inductor_on_a_cpu_model_runs_the_region_body():
    case, model = _residual()
    compiled = tta.compile(model, case.inputs(2, torch.float32, "cpu"), case.dynamic_shapes(), backend="inductor")
    (region,) = compiled.tta_report.regions
    assert region.runs == lowering.REGION_BODY and lowering.CPU_TRITON in region.reason, str(compiled.tta_report)
    assert "the inputs are on cpu" in str(compiled.tta_report)
    with torch.no_grad():
        for b in (1, 3):
            x = case.inputs(b, torch.float32, "cpu")
            torch.testing.assert_close(compiled(*x), model(*x))


@pytest.mark.kernels
def test_aot_compile_of_a_cpu_model_runs_the_region_body(tmp_path):
    case, model = _residual()
    package = tta.aot_compile(model, case.inputs(2, torch.float32, "cpu"), tmp_path / "residual.pt2", case.dynamic_shapes())
    assert [r.runs for r in package.tta_report.regions] == [lowering.REGION_BODY]
    loaded = package.load()
    x = case.inputs(3, torch.float32, "cpu")
    torch.testing.assert_close(loaded(*x), model(*x))


_INTERPRETED = textwrap.dedent(
    """
    import torch, tta
    from tta.gpu import models
    case = models.by_name("residual")
    model = case.model(torch.float32, "cpu")
    compiled = tta.compile(model, case.inputs(2, torch.float32, "cpu"), case.dynamic_shapes(), backend="inductor")
    x = case.inputs(3, torch.float32, "cpu")
    torch.testing.assert_close(compiled(*x), model(*x))
    print("RUNS", compiled.tta_report.regions[0].runs)
    """
)


@pytest.mark.kernels
def test_inductor_on_a_cpu_model_under_the_triton_interpreter():
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=PYTHON)
    r = subprocess.run([sys.executable, "-c", _INTERPRETED], env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-4000:]
    assert f"RUNS {lowering.REGION_BODY}" in r.stdout, r.stdout


def _hide(monkeypatch, *modules: str) -> None:
    """Make ``import m`` fail for each of ``modules`` (None in sys.modules), as when missing."""
    for m in modules:
        monkeypatch.setitem(sys.modules, m, None)


def _fake(monkeypatch, *modules: str) -> None:
    """Make each of ``modules`` importable (an empty module), as when installed."""
    for m in modules:
        monkeypatch.setitem(sys.modules, m, types.ModuleType(m))


PLUGIN = tta.custom_plugin(meta_impl=lambda x: x.new_empty(x.shape), name="missing_parts_relu")


class Relu(torch.nn.Module):
    def forward(self, x):
        with tta.lower_as(impl=PLUGIN):
            return torch.relu(x)


@pytest.mark.torch_independent
def test_tensorrt_backend_without_torch_tensorrt_or_tensorrt(monkeypatch):
    _hide(monkeypatch, "torch_tensorrt", "tensorrt", "tensorrt.plugin")
    with pytest.raises(MissingPackageError) as info:
        tta.compile(Relu(), (torch.randn(2, 8),))
    text = str(info.value)
    assert isinstance(info.value, TTAError) and isinstance(info.value, ImportError)
    assert "tta.compile(backend='tensorrt') needs Torch-TensorRT" in text
    assert "pip install torch-tensorrt" in text and "pip install tensorrt" in text
    assert sys.executable in text  # where to install it
    assert "backend='inductor'" in text  # what works without it
    assert "tensorrt.plugin:" not in text  # its package is named already


@pytest.mark.torch_independent
def test_tensorrt_backend_names_only_what_is_missing(monkeypatch):
    _hide(monkeypatch, "torch_tensorrt")
    _fake(monkeypatch, "tensorrt", "tensorrt.plugin")
    with pytest.raises(MissingPackageError) as info:
        tta.compile(Relu(), (torch.randn(2, 8),), backend="tensorrt")
    lines = str(info.value).splitlines()
    assert [ln.split(":")[0].strip() for ln in lines[1:-2]] == ["torch_tensorrt"], lines


@torch.library.custom_op("tta_missing_parts::scale2", mutates_args=())
def _scale2(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@_scale2.register_fake
def _(x):
    return torch.empty_like(x)


def _never(x, out, *, BLOCK: int = 128):
    raise AssertionError("not launched")


def test_custom_op_without_tensorrt(monkeypatch):
    _hide(monkeypatch, "torch_tensorrt", "tensorrt", "tensorrt.plugin")
    with pytest.raises(MissingPackageError, match=r"tta.custom_op\('tta_missing_parts::scale2'\) needs TensorRT's Python package") as info:
        tta.custom_op("tta_missing_parts::scale2", kernel=tta.triton(_never, configs=[{"BLOCK": 128}]))
    assert "pip install tensorrt" in str(info.value) and sys.prefix in str(info.value)
