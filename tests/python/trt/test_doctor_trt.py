"""``tta doctor`` and the known TensorRT bugs over the stand-in with the real ``tensorrt.plugin``
and Torch-TensorRT: the table, the engine step (reached and reported; the stand-in runs no
engine, so the build itself is not started), the engine's network, and each known bug: the
#4849 leak warning once per engine, QDP refused on 10.14/10.15, the NumPy >= 2.4 scalar-attribute
workaround, the ``ShapeExpr.__rmul__`` gap, and the PTX cap that follows the driver."""

import importlib.metadata as md
import types
import warnings
from typing import Tuple, Union

import pytest
import tensorrt as trt
import tensorrt.plugin as trtp
import torch
import torch_tensorrt
from torch import nn
from trt_standin import network as standin
from trt_standin import torch_tensorrt_env
from trt_standin.plugin_build import add_plugin_aot, build_plugin

torch_tensorrt_env.patch_runtime()

from tensorrt.plugin._lib import QDP_REGISTRY  # noqa: E402

import tta  # noqa: E402
import tta.trt  # noqa: E402
from tta.common import cuda_driver, known_bugs
from tta.errors import PluginError  # noqa: E402
from tta.examples.kernels import by_name  # noqa: E402
from tta.tools import (  # noqa: E402
    cli,  # noqa: E402
    doctor,
    doctor_checks,
    doctor_engine,
)
from tta.tools.gpu.models import ADD_RELU, ResidualBlock  # noqa: E402
from tta.trt import compile as trt_compile  # noqa: E402
from tta.trt import qdp, qdp_shapes

SETTINGS = {"offload_module_to_cpu": True}
LEAKS = known_bugs.aot_module_leak(trt.__version__) is not None  # 11.1 yes, 11.4 no
AOT_RET = Tuple[Union[str, bytes], Union[str, bytes], trtp.KernelLaunchParams, trtp.SymIntExprs]


def _row(rows, name):
    return next(r for r in rows if r.check == name)


def test_doctor_over_the_standin(capsys):
    rc = cli.main(["doctor"])
    out = capsys.readouterr().out
    assert out.startswith("check ") and "why: tensorrt is tta's test stand-in" in out
    rows = doctor.run_checks()
    t = _row(rows, "TensorRT")
    assert trt.__version__ in t.found and "stand-in" in t.found and t.status == doctor.OK
    assert _row(rows, "tensorrt.plugin").found == "AOT (QuickPluginCreationRequest)"
    tt = _row(rows, "Torch-TensorRT")
    # The torch pin comes from the installed distribution's metadata.
    pin = next(r for r in md.requires("torch_tensorrt") if r.startswith("torch") and not r.startswith("torch-"))
    assert tt.found == torch_tensorrt.__version__ and pin.split(";")[0].replace(" ", "") in tt.plan.replace(" ", "")
    trt_pin_ok = all(
        doctor_checks.packages.fits(trt.__version__, p) is not False
        for p in doctor_checks.packages.pins("torch_tensorrt", "tensorrt", prefix=True)
    )
    assert (tt.status == doctor.OK) == trt_pin_ok, tt
    bugs = _row(rows, "TensorRT bugs")
    assert (bugs.status == doctor.WARN and "#4849" in bugs.note) if LEAKS else bugs.status == doctor.OK
    engine = _row(rows, "engine")
    assert engine.status == doctor.SKIP and "stand-in, which cannot run engines" in engine.note
    assert rc == (1 if doctor.problems(rows) else 0)
    assert (rc == 0) == trt_pin_ok  # on 11.4 only Torch-TensorRT's TensorRT pin is a problem


def test_engine_step_is_reached_with_a_gpu_and_its_result_reported(monkeypatch):
    """With a GPU (faked) and a TensorRT that could run engines, the doctor calls the engine step
    with the installed DSLs, the GPU's SM and the driver's PTX cap, and reports what it returns;
    the build itself is replaced: the stand-in cannot run an engine."""

    def gpu(state):
        state.gpu = ("stand-in GPU", 90)
        return [doctor.Row("GPU", "stand-in GPU, SM 9.0")]

    monkeypatch.setattr(doctor_checks, "CHECKS", [(n, gpu if n == "GPU" else f) for n, f in doctor_checks.CHECKS])
    monkeypatch.setattr(trt, "STANDIN", False)
    calls = []

    def build(dsls, sm, cap):
        calls.append((list(dsls), sm, cap))
        raise RuntimeError("the TensorRT stand-in cannot deserialize engines (no TensorRT runtime here)")

    monkeypatch.setattr(doctor_engine, "build_and_run", build)
    rows = doctor.run_checks()
    assert calls == [(_row(rows, "Triton") and ["triton"], 90, cuda_driver.driver_ptx_cap().option)]
    engine = _row(rows, "engine")
    assert (
        engine.status == doctor.PROBLEM
        and engine.note == "RuntimeError: the TensorRT stand-in cannot deserialize engines (no TensorRT runtime here)"
    )


def test_engine_network_has_one_plugin_layer_per_dsl_with_metadata():
    """The network the engine step builds, over the stand-in's network API and the real plugin
    package (the build is not started: it would compile, and the stand-in runs no engine)."""
    ex = by_name("triton_add_relu")
    qdp.define("doctor_triton", ex.plugin(), ex.input_metas(torch.float32), ex.meta)
    builder = trt.Builder(trt.Logger(trt.Logger.WARNING))
    net, config = doctor_engine.build_network(trt, trtp, builder, [doctor_engine.Case("triton", "doctor_triton", ex)])
    assert [c[0] for c in net.calls] == ["add_input", "add_input", "add_plugin", "mark_output"]
    (layer,) = net.plugin_layers
    assert layer.name == "tta:doctor/triton" and '"op":"tta::doctor_triton"' in layer.metadata
    assert net.outputs[0].name == "out_triton" and net.calls[2][1]["plugin"] == "tta::doctor_triton"
    assert config.profiling_verbosity == trt.ProfilingVerbosity.DETAILED
    assert config.profiles[0].get_shape("x") == doctor_engine.PROFILE


# -- known bugs ------------------------------------------------------------------------------


class TwoRegions(nn.Module):
    def forward(self, x, y):
        with tta.lower_as(impl=ADD_RELU):
            a = torch.relu(x + y)
        with tta.lower_as(impl=ADD_RELU):
            return torch.relu(a + y)


def _leak_warnings(fn) -> list[str]:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        fn()
    return [str(w.message) for w in seen if issubclass(w.category, known_bugs.TensorRTBugWarning)]


def test_leak_warning_once_per_engine_build():
    x, y = torch.randn(4, 1024), torch.randn(4, 1024)
    standin.BUILDS.clear()
    one = _leak_warnings(lambda: tta.compile(TwoRegions(), (x, y), **SETTINGS))
    two = _leak_warnings(lambda: tta.compile(ResidualBlock(), (x, y), **SETTINGS))
    assert len(standin.BUILDS) == 2  # one engine each
    if LEAKS:
        assert len(one) == 1 and len(two) == 1, (one, two)
        assert "NVIDIA/TensorRT #4849" in one[0] and trt.__version__ in one[0]
        first = standin.BUILDS[0].network.plugin_layers[0].name
        assert first in one[0] and len(standin.BUILDS[0].network.plugin_layers) == 2
    else:
        assert one == two == []
    standin.BUILDS.clear()


@pytest.mark.parametrize("version", ["10.14.1.48", "10.15.0.1"])
def test_qdp_refused_on_broken_versions(monkeypatch, version):
    monkeypatch.setattr(trt, "__version__", version)
    ex = by_name("triton_add_relu")
    with pytest.raises(
        PluginError, match=r"tta::bug_qdp.*Quickly Deployable Plugins do not work on TensorRT 10.14.x and 10.15.x \(Torch-TensorRT"
    ):
        qdp.define("bug_qdp", ex.plugin(), ex.input_metas(torch.float32), ex.meta)
    assert "tta::bug_qdp" not in QDP_REGISTRY and "bug_qdp" not in qdp._entries


def test_numpy_scalar_attribute_workaround(monkeypatch):
    """tensorrt.plugin <= 11.1 under NumPy >= 2.4 cannot create int/float attributes: tta refuses
    them, or (str_fallback) sends the value's repr as a str attribute and decodes it, and a
    plugin created that way reaches aot_impl with the int."""
    monkeypatch.setattr(qdp, "_versions", lambda: ("11.1.0.106", "2.4.0"))
    with pytest.raises(PluginError, match="fixed in TensorRT 11.2"):
        qdp.check_attributes([qdp.Attribute("n", int)], "t")
    (wire,) = qdp.check_attributes([qdp.Attribute("n", int, str_fallback=True)], "t")
    assert wire.annotation is str and wire.encode(7) == "7" and wire.decode("7") == 7
    monkeypatch.setattr(qdp, "_versions", lambda: ("11.2.0.1", "2.4.0"))
    (native,) = qdp.check_attributes([qdp.Attribute("n", int, str_fallback=True)], "t")
    assert native.annotation is int and not native.as_str

    monkeypatch.setattr(qdp, "_versions", lambda: ("11.1.0.106", "2.4.0"))
    ex = by_name("triton_add_relu")
    seen = []
    original = qdp._aot_impl
    monkeypatch.setattr(qdp, "_aot_impl", lambda e, i, values, o, t: seen.append(values) or original(e, i, values, o, t))
    qdp.define("bug_np_attr", ex.plugin(), ex.input_metas(torch.float32), ex.meta, attributes=[qdp.Attribute("n", int, str_fallback=True)])
    x = [trt.ITensor(f"x{k}", (-1, -1), trt.float32) for k in range(2)]
    added = add_plugin_aot(trtp.op.tta.bug_np_attr(*x, **qdp.attribute_kwargs("bug_np_attr", {"n": 7})))
    assert added.plugin.attrs == {"n": "7"}
    build_plugin(added, [((1, 1), (4, 8), (64, 64))] * 2)
    assert seen and all(v == {"n": 7} for v in seen)


def test_shape_expr_has_no_reflected_multiply_and_tta_never_needs_it():
    """``3 * shape_expr`` fails in tensorrt.plugin (no ``__rmul__``); tta's rendering keeps the
    integer on the right, so the same expression builds and evaluates right."""
    pid = "bug_rmul::k"
    gap = []

    @trtp.register(pid)
    def desc(x: trtp.TensorDesc) -> trtp.TensorDesc:
        return x.like()

    @trtp.aot_impl(pid)
    def aot(x: trtp.TensorDesc, outputs: Tuple[trtp.TensorDesc], tactic: int) -> AOT_RET:
        try:
            3 * x.shape_expr[1]
        except TypeError as e:
            gap.append(str(e))
        lp = trtp.KernelLaunchParams()
        scope = qdp_shapes.symbols([x])
        lp.grid_x = qdp_shapes.to_trtp("3*i0_1 + 2*i0_0 + 1", scope, trtp, "t")
        return "k", "ptx", lp, trtp.SymIntExprs.from_tuple([trtp.SymInt32(qdp_shapes.to_trtp("4*i0_1", scope, trtp, "t"))])

    added = add_plugin_aot(trtp.op.bug_rmul.k(trt.ITensor("x", (-1, -1), trt.float32)))
    (k,) = build_plugin(added, [((1, 1), (4, 8), (64, 64))])
    assert gap and "unsupported operand" in gap[0]
    assert k.launch_values([(5, 7)])["grid_x"] == 3 * 7 + 2 * 5 + 1 and k.extra_values([(5, 7)]) == [28]


def test_ptx_cap_follows_the_driver_doctor_finds(monkeypatch):
    """tta.compile's default max_ptx is ``driver_ptx_cap()``, the function the doctor's row
    reports: with a CUDA 12.8 driver both say 87."""
    monkeypatch.setattr(cuda_driver, "driver_version", lambda: "12.8")
    cuda_driver.driver_ptx_cap.cache_clear()
    seen = []

    def fake_compile(ep, **kw):
        from tta.trt.lowering import current_session

        seen.append(current_session().max_ptx)
        return types.SimpleNamespace()

    monkeypatch.setattr(torch_tensorrt, "compile", fake_compile)
    x, y = torch.randn(4, 1024), torch.randn(4, 1024)
    try:
        trt_compile.compile(ResidualBlock(), (x, y), sm=90, **SETTINGS)
        trt_compile.compile(ResidualBlock(), (x, y), sm=90, max_ptx=90, **SETTINGS)
        with pytest.raises(PluginError, match="max_ptx must be"):
            trt_compile.compile(ResidualBlock(), (x, y), sm=90, max_ptx="9.0", **SETTINGS)
        row = _row(doctor_checks.check_driver(doctor_checks.State()), "PTX ISA cap")
    finally:
        cuda_driver.driver_ptx_cap.cache_clear()
    assert seen == [87, 90]
    assert row.found == "ISA 8.7" and "CUDA 12.8" in row.note
