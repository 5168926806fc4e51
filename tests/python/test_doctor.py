"""``tta doctor`` on a machine without TensorRT (the table, exit 0, the skips stated), its
failure modes (a crashing check, an unusable cache, a broken TensorRT: exit 1, one line each, no
traceback), the PTX ISA cap it shares with ``tta.compile``, and the known-bug version rules."""

from __future__ import annotations

import subprocess
import sys
import types
import warnings

import pytest

from tta.common import cuda_driver, known_bugs, packages
from tta.tools import cli, doctor, doctor_checks, doctor_engine

TRT_MODULES = ("tensorrt", "tensorrt.plugin", "tensorrt_bindings", "torch_tensorrt")
TRT_DISTS = (
    "tensorrt",
    "tensorrt-cu13",
    "tensorrt-cu12",
    "tensorrt-cu13-bindings",
    "tensorrt-cu12-bindings",
    "torch-tensorrt",
    "torch_tensorrt",
)


@pytest.fixture
def bare(monkeypatch, tmp_path):
    """This process as a machine without TensorRT or Torch-TensorRT (whatever the venv holds,
    stand-in included), with a fresh cache directory."""
    for m in TRT_MODULES:
        monkeypatch.setitem(sys.modules, m, None)  # import raises ImportError
    real_version, real_present = packages.version_of, packages.module_present
    monkeypatch.setattr(packages, "version_of", lambda *d: None if set(d) & set(TRT_DISTS) else real_version(*d))
    monkeypatch.setattr(packages, "module_present", lambda m: False if m.split(".")[0] in TRT_MODULES else real_present(m))
    monkeypatch.setenv("TTA_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def _rows(out: str) -> dict[str, str]:
    """check name -> its table line (the first line that starts with it)."""
    found = {}
    for line in out.splitlines():
        for name in (
            "tta",
            "torch",
            "GPU",
            "CUDA driver",
            "PTX ISA cap",
            "CUDA (torch)",
            "TensorRT",
            "tensorrt.plugin",
            "Torch-TensorRT",
            "TensorRT bugs",
            "tta cache",
            "engine",
            "NumPy",
            "Triton",
        ):
            if line.startswith(name + " ") and name not in found:
                found[name] = line
    return found


def test_bare_machine_prints_the_table_exits_0_and_says_what_it_skipped(bare, capsys):
    import numpy as np
    import torch

    rc = cli.main(["doctor"])
    out = capsys.readouterr().out
    rows = _rows(out)
    assert rc == 0, out
    assert "no problems" in out and "problem(s)" not in out
    assert torch.__version__ in rows["torch"] and " ok " in rows["torch"]
    assert np.__version__ in rows["NumPy"]
    for name in ("TensorRT", "Torch-TensorRT", "tensorrt.plugin", "TensorRT bugs", "engine"):
        assert "skipped" in rows[name], rows[name]
    # Each skip says why, on the line under its row.
    assert "why: no TensorRT: no engines" in out and "why: no TensorRT\n" in out + "\n"
    assert str(bare / "cache") in rows["tta cache"] and "not created yet" in rows["tta cache"]
    if not torch.cuda.is_available():
        assert "skipped" in rows["GPU"]


def test_json_rows_and_python_m_entry(bare):
    r = subprocess.run([sys.executable, "-m", "tta.doctor", "--json", "--no-engine"], capture_output=True, text=True, timeout=300)
    assert "Traceback" not in r.stderr, r.stderr
    import json

    doc = json.loads(r.stdout)
    names = [row["check"] for row in doc["rows"]]
    assert names[:3] == ["tta", "torch", "GPU"] and names[-1] == "engine"
    assert all(set(row) == {"check", "found", "plan", "status", "note"} for row in doc["rows"])
    # The exit status is what the rows say, whatever this venv has installed.
    assert r.returncode == (1 if doc["problems"] else 0)
    assert all("\n" not in p for p in doc["problems"])


def test_a_check_that_crashes_is_one_problem_line_not_a_traceback(monkeypatch, capsys):
    def boom(state):
        raise RuntimeError("the probe fell over\nsecond line")

    monkeypatch.setattr(doctor_checks, "CHECKS", [("tta", doctor_checks.check_tta), ("probe", boom)])
    rc = cli.main(["doctor"])
    out = capsys.readouterr().out
    assert rc == 1
    assert "1 problem(s):\n  probe: the check itself failed: RuntimeError: the probe fell over" in out
    assert "second line" not in out and "Traceback" not in out


def test_a_cache_that_cannot_be_written_is_a_problem(monkeypatch, tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    monkeypatch.setattr(doctor_checks, "CHECKS", [("tta cache", doctor_checks.check_cache)])
    for where, says in ((blocker, "is not a directory"), (blocker / "sub", "cannot be created")):
        monkeypatch.setenv("TTA_CACHE_DIR", str(where))
        assert cli.main(["doctor"]) == 1
        out = capsys.readouterr().out
        assert f"tta cache: {where}" in out.split("problem(s):")[1] and says in out and "TTA_CACHE_DIR" in out


def test_cache_row_counts_entries(monkeypatch, tmp_path):
    from tta.common.cache import Cache

    monkeypatch.setenv("TTA_CACHE_DIR", str(tmp_path))
    c = Cache(tmp_path)
    c.put("ab" * 16, {"x": 1})
    c.put("cd" * 16, {"y": "z" * 3000})
    (row,) = doctor_checks.check_cache(doctor_checks.State())
    assert row.status == doctor.OK and "2 entries" in row.found and "KiB" in row.found


def test_qdp_broken_tensorrt_is_refused_with_the_reason(monkeypatch, capsys):
    """A TensorRT 10.14 whose plugin package has no AOT support: exit 1, one line per problem,
    the engine skipped."""
    fake = types.ModuleType("tensorrt")
    fake.__version__ = "10.14.1.48"
    fake.__spec__ = __import__("importlib.machinery").machinery.ModuleSpec("tensorrt", None)
    monkeypatch.setitem(sys.modules, "tensorrt", fake)
    monkeypatch.setitem(sys.modules, "tensorrt.plugin", None)
    monkeypatch.setattr(
        doctor_checks, "CHECKS", [c for c in doctor_checks.CHECKS if c[0] in ("TensorRT", "tensorrt.plugin", "TensorRT bugs", "engine")]
    )
    assert cli.main(["doctor"]) == 1
    out = capsys.readouterr().out
    bad = out.split("problem(s):\n")[1].strip().splitlines()
    assert [b.split(":")[0].strip() for b in bad] == ["TensorRT", "tensorrt.plugin", "TensorRT bugs"]
    assert "10.14" in bad[0] and "Torch-TensorRT turns its QDP support off" in bad[0]
    assert "tensorrt.plugin does not import" in bad[1]
    assert "skipped" in _rows(out)["engine"]


# -- the PTX ISA cap -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "driver,option,problem",
    [
        (None, 90, False),
        ("13.0", 90, False),
        ("12.6", 85, False),
        ("12.8", 87, False),
        ("13.4", 94, False),
        ("14.1", 95, False),
        ("10.2", 90, True),
        ("thirteen", 90, True),
    ],
)
def test_ptx_cap_for_driver(driver, option, problem):
    cap = cuda_driver.cap_for_driver(driver)
    assert (cap.option, cap.problem, cap.driver) == (option, problem, driver)
    assert cap.isa == f"{option // 10}.{option % 10}"


def test_driver_probe_reads_libcuda(monkeypatch):
    class Lib:
        def cuDriverGetVersion(self, ref):
            ref._obj.value = 12080
            return 0

    monkeypatch.setattr(cuda_driver.ctypes, "CDLL", lambda name: Lib())
    assert cuda_driver.driver_version() == "12.8"

    def missing(name):
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(cuda_driver.ctypes, "CDLL", missing)
    assert cuda_driver.driver_version() is None


def test_doctor_reports_the_cap_tta_compile_uses(monkeypatch):
    """The row and ``driver_ptx_cap`` (tta.compile's default) come from the same probe."""
    monkeypatch.setattr(cuda_driver, "driver_version", lambda: "12.8")
    cuda_driver.driver_ptx_cap.cache_clear()
    try:
        assert cuda_driver.driver_ptx_cap().option == 87
        rows = doctor_checks.check_driver(doctor_checks.State())
        cap = next(r for r in rows if r.check == "PTX ISA cap")
        assert cap.found == "ISA 8.7" and "caps PTX at 87" in cap.plan and "CUDA 12.8" in cap.note
    finally:
        cuda_driver.driver_ptx_cap.cache_clear()


# -- the engine check's outcome, without an engine ---------------------------------------------


def _state(**kw):
    s = doctor_checks.State()
    s.trt = types.SimpleNamespace(__version__="11.4.0.106")
    s.gpu, s.cap, s.aot, s.dsls = ("NVIDIA H200", 90), cuda_driver.cap_for_driver("13.0"), True, ["triton", "cutile"]
    for k, v in kw.items():
        setattr(s, k, v)
    return s


def _good_result(dsls=("triton", "cutile")):
    r = doctor_engine.EngineResult()
    for d in dsls:
        r.compiled[d] = "2 tactic(s), ptx ISA 9.0"
        r.runs += [(d, shape, 0.0, True) for shape in doctor_engine.RUN_SHAPES]
        r.layers.append({"name": f"tta:doctor/{d}", "type": "PluginV3", "metadata": f'{{"op":"tta::doctor_{d}","from":"tta:doctor"}}'})
    return r


def test_engine_step_runs_where_it_can_and_reports_each_plugin(monkeypatch):
    calls = []
    monkeypatch.setattr(doctor_engine, "build_and_run", lambda dsls, sm, cap: calls.append((list(dsls), sm, cap)) or _good_result())
    rows = doctor_engine.check(_state())
    assert calls == [(["triton", "cutile"], 90, 90)]
    assert [r.check for r in rows] == ["engine: triton", "engine: cutile", "engine layers"]
    assert all(r.status == doctor.OK for r in rows), rows
    assert "tta:doctor/cutile [PluginV3]" in rows[2].found and "matches eager" in rows[0].plan


@pytest.mark.parametrize(
    "change,problem",
    [
        (lambda r: r.runs.__setitem__(1, ("triton", (333, 4097), 3.5, False)), "differs from eager"),
        (lambda r: r.layers.pop(0), "no plugin layer (or no tta metadata) for tta:doctor/triton"),
        (lambda r: r.layers[1].update(metadata=None), "tta:doctor/cutile"),
        (lambda r: r.failed.update(cutedsl="PluginError: no tileiras for sm_90"), "no tileiras"),
        (lambda r: setattr(r, "error", "TensorRT built no engine"), "TensorRT built no engine"),
    ],
)
def test_engine_step_problems_are_reported(monkeypatch, change, problem):
    result = _good_result()
    change(result)
    monkeypatch.setattr(doctor_engine, "build_and_run", lambda *a: result)
    rows = doctor_engine.check(_state())
    assert any(r.status == doctor.PROBLEM and problem in r.note for r in rows), rows


def test_engine_step_failure_is_one_line(monkeypatch):
    def fail(*a):
        raise RuntimeError("deserialize_cuda_engine failed\n  at line 3")

    monkeypatch.setattr(doctor_engine, "build_and_run", fail)
    (row,) = doctor_engine.check(_state())
    assert (row.status, row.note) == (doctor.PROBLEM, "RuntimeError: deserialize_cuda_engine failed")


@pytest.mark.parametrize(
    "kw,why",
    [
        ({"trt": None}, "no TensorRT"),
        ({"gpu": None}, "no GPU"),
        ({"aot": False}, "no AOT"),
        ({"dsls": []}, "no kernel DSL"),
        ({"qdp_refusal": "broken"}, "QDP plugins do not work"),
        ({"trt": types.SimpleNamespace(__version__="11.1", STANDIN=True)}, "stand-in, which cannot run engines"),
    ],
)
def test_engine_step_is_skipped_saying_why(monkeypatch, kw, why):
    monkeypatch.setattr(doctor_engine, "build_and_run", lambda *a: pytest.fail("must not build"))
    (row,) = doctor_engine.check(_state(**kw))
    assert row.status == doctor.SKIP and why in row.note


def test_inspector_layers_detailed_and_names_only():
    detailed = (
        '{"Layers": [{"Name": "x_cast", "LayerType": "Cast"}, {"Name": "tta:doctor/triton", "LayerType": "PluginV3", "Metadata": "m"}]}'
    )
    assert doctor_engine.inspector_layers(detailed) == [{"name": "tta:doctor/triton", "type": "PluginV3", "metadata": "m"}]
    names = {"Layers": ["x_cast", "tta:doctor/cutile"], "Bindings": ["x"]}
    assert doctor_engine.inspector_layers(names) == [{"name": "tta:doctor/cutile", "type": "?", "metadata": None}]


# -- known TensorRT bugs by version ----------------------------------------------------------


@pytest.mark.parametrize(
    "version,leaks",
    [
        ("11.1.0.106", True),
        ("11.2.0.4", True),
        ("11.2.1.2", True),
        ("11.2", True),
        ("11.0.0.1", False),
        ("11.2.2.1", False),
        ("11.3.0.1", False),
        ("11.4.0.106", False),
        ("10.13.3.9", False),
    ],
)
def test_aot_module_leak_versions(version, leaks):
    text = known_bugs.aot_module_leak(version)
    assert (text is not None) == leaks
    if leaks:
        assert "NVIDIA/TensorRT #4849" in text and version in text


@pytest.mark.parametrize(
    "version,broken",
    [
        ("10.14.1.48", True),
        ("10.15.0.1", True),
        ("10.13.3.9", False),
        ("10.16.0", False),
        ("11.1.0.106", False),
        ("1.14", False),
    ],
)
def test_qdp_refusal_versions(version, broken):
    text = known_bugs.qdp_refusal(version)
    assert (text is not None) == broken
    if broken:
        assert "Torch-TensorRT" in text and version in text


def test_numpy_and_list_attribute_rules():
    assert known_bugs.numpy_scalar_attrs_broken("11.1.0.106", "2.4.6")
    assert not known_bugs.numpy_scalar_attrs_broken("11.1.0.106", "2.3.5")
    assert not known_bugs.numpy_scalar_attrs_broken("11.2.0.1", "2.4.0")
    assert known_bugs.list_attrs_broken("11.2.1") and not known_bugs.list_attrs_broken("11.3.0")


def test_leak_warning_once_per_engine():
    class Ctx:  # what stands for one engine: Torch-TensorRT's conversion context
        pass

    a, b, c = Ctx(), Ctx(), object()  # object() takes no weak reference
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert known_bugs.warn_once_per_engine(a, "11.1.0.106", "tta:r0")
        assert not known_bugs.warn_once_per_engine(a, "11.1.0.106", "tta:r1")
        assert known_bugs.warn_once_per_engine(b, "11.2.1.2", "tta:r2")
        assert known_bugs.warn_once_per_engine(c, "11.1.0.106", "tta:r3")
        assert not known_bugs.warn_once_per_engine(c, "11.1.0.106", "tta:r4")
        assert not known_bugs.warn_once_per_engine(Ctx(), "11.4.0.106", "tta:r5")
    msgs = [str(w.message) for w in seen if issubclass(w.category, known_bugs.TensorRTBugWarning)]
    assert len(msgs) == 3 and all("#4849" in m for m in msgs)
    assert [m.split(":")[2].split()[0] for m in msgs] == ["r0", "r2", "r3"]


def test_pins_and_fits():
    assert packages.fits("2.14.1+cu130", "torch<2.15.0,>=2.14.0") is True
    assert packages.fits("2.15.0", "torch<2.15.0,>=2.14.0") is False
    assert packages.fits("11.4.0.106", "tensorrt-cu13<11.2.0,>=11.1.0") is False
    assert packages.fits("garbage", "torch>=2") in (False, None)
    assert packages.pins("no-such-distribution-here", "torch") == []
    torch_triton = packages.pins("torch", "triton")
    if torch_triton:  # torch's own metadata: the Triton row checks against it
        assert torch_triton[0].startswith("triton")


@pytest.mark.gpu
def test_doctor_on_a_gpu_machine(capsys):
    """The GPU row names the device and its SM, the driver is found through libcuda and agrees
    with cuda-python's, and the PTX cap is that driver's."""
    import torch

    rows = doctor.run_checks([c for c in doctor_checks.CHECKS if c[0] in ("torch", "GPU", "CUDA driver", "CUDA (torch)")])
    gpu = next(r for r in rows if r.check == "GPU")
    major, minor = torch.cuda.get_device_capability(0)
    assert gpu.status == doctor.OK and f"SM {major}.{minor}" in gpu.found and torch.cuda.get_device_name(0) in gpu.found
    drv = cuda_driver.driver_version()
    try:
        from tta.runtime.launcher import driver_version as cuda_python_driver
    except ImportError:
        cuda_python_driver = None
    if cuda_python_driver is not None:
        assert drv == cuda_python_driver()
    cap = next(r for r in rows if r.check == "PTX ISA cap")
    assert cap.found == f"ISA {cuda_driver.cap_for_driver(drv).isa}" and f"CUDA {drv}" in cap.note
    assert not doctor.problems(rows), doctor.problems(rows)
