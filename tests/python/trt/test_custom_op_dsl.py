"""``tta.custom_op`` with cuTile and CuTeDSL kernels (``tta.examples.custom_ops_dsl``): each op's
generated plugin taken through the real ``tensorrt.plugin`` package over the TensorRT stand-in
(create, output types and shapes, format combinations, tactics, ``aot_impl``), kernels compiled
to PTX on the CPU; and kernels in those DSLs that write an input their op does not declare
mutated, refused naming the argument. The DSLs live in ``.venv``, Torch-TensorRT in ``.venv-torch2.14``, so these run
in ``.venv`` with the plugin package of the other venv, and without Torch-TensorRT:

    TTA_TRT_BINDINGS=.venv-torch2.14/lib/python3.11/site-packages \\
      .venv/bin/python -m pytest -m "cutile or cutedsl" tests/python/trt/test_custom_op_dsl.py

Without cuTile or CuTeDSL these tests fail, they do not skip (the ``cutile``/``cutedsl`` markers
deselect them where the DSLs are not installed)."""

from __future__ import annotations

import pytest
import tensorrt as trt
import tensorrt.plugin as trtp
import torch
import trt_standin
from trt_standin import plugin_build

import tta
from tta import _core
from tta.aot.session import TensorType
from tta.examples import custom_ops_dsl as dsl
from tta.trt import custom_op as co
from tta.trt import mutation, qdp

CASES = {c.name: c for c in dsl.CASES}


def _op(case):
    if case.op not in co._ops:
        spec = getattr(tta, dsl.KERNEL_DSL_OF_CASE[case.name])(case.launch, configs=list(case.configs))
        tta.custom_op(case.op, kernel=spec)
    return co._ops[case.op]


def _build(case, values, profile):
    """The plugin of a call site with two same-shape float32 inputs (the fake impl's check makes
    the second one's dims the first one's) and these argument values, built over ``profile``."""
    op = _op(case)
    metas = [TensorType("float32", (None, None)), TensorType("float32", ("i0_0", "i0_1"))]
    name = op.plugin_name([True, True], metas)
    itensors = [trt.ITensor(n, [-1, -1], trt.float32) for n in ("x", "y")]
    added = plugin_build.add_plugin_aot(getattr(trtp.op.tta, name)(*itensors, **qdp.attribute_kwargs(name, values)))
    return name, added, plugin_build.build_plugin(added, [profile, profile])


def _check_built(name, added, built, values, configs, sizes_of_tile):
    assert added.output_types == [trt.float32]
    compiled = qdp.tactics(name, ["float32", "float32"], values)
    assert [b.tactic for b in built] == list(compiled) and len(built) == len(configs)
    for b in built:
        k = compiled[b.tactic]
        code = b.code.decode() if isinstance(b.code, bytes) else b.code
        assert k.code_format == "ptx" and ".entry" in code and b.kernel_name in (k.entry, k.entry.encode())
        # Parameters in TensorRT's order: x, y, the element count as an int32 extra, out; the
        # kernel writes only its output.
        assert mutation.written_inputs(k, 2) == [] and _core.ptx_stored_params(code, k.entry) == [3]
        for rows, cols in ((7, 129), (64, 1024)):
            shapes = [(rows, cols), (rows, cols)]
            assert b.extra_values(shapes) == [rows * cols]
            assert b.launch_values(shapes)["grid_x"] == -(-rows * cols // sizes_of_tile(dict(k.config)))
    return compiled


@pytest.mark.cutile
def test_cutile_custom_op_per_call_site_values():
    case = CASES["custom_tile_axpy"]
    profile = ((1, 1), (64, 1024), (512, 8192))
    half = _check_built(*_build(case, {"a": 0.5}, profile), {"a": 0.5}, case.configs, lambda c: c["TILE"])
    three = _check_built(*_build(case, {"a": 3.0}, profile), {"a": 3.0}, case.configs, lambda c: c["TILE"])
    # One plugin variant; each call site's value compiled into its own kernels.
    assert len(_op(case).variants) == 1 and list(half) == list(three)
    assert all(half[t].code != three[t].code for t in half)


@pytest.mark.cutedsl
def test_cutedsl_custom_op_keyword_only_values():
    case = CASES["custom_cute_axpby"]
    profile = ((1, 1), (64, 128), (512, 4096))
    relu = _check_built(
        *_build(case, {"alpha": -2.0, "relu": True}, profile), {"alpha": -2.0, "relu": True}, case.configs, lambda c: c["THREADS"]
    )
    plain = _check_built(
        *_build(case, {"alpha": -2.0, "relu": False}, profile), {"alpha": -2.0, "relu": False}, case.configs, lambda c: c["THREADS"]
    )
    assert all(relu[t].code != plain[t].code for t in relu)


@pytest.mark.cutile
@pytest.mark.cutedsl
def test_dsl_cases_in_the_via_qdp_manifest(tmp_path):
    from tta.aot.base import read_manifest
    from tta.examples.kernels import by_name
    from tta.tools.gpu import qdp_manifest

    out = str(tmp_path / "dsl.json")
    s = qdp_manifest.build(out, backends=["cutile", "cutedsl"], plugin_version=trt_standin.installed_version())
    kernels, _ = read_manifest(out)
    custom = [k for k in kernels if k.meta["example"].startswith("custom_")]
    assert not [f for f in s["failures"] if f["example"].startswith("custom_")]
    assert sorted({k.meta["example"] for k in custom}) == ["custom_cute_axpby", "custom_tile_axpy"]
    assert {k.backend for k in custom} == {"cutile", "cutedsl"}
    assert all(k.meta["test_shapes"] and k.code_format == "ptx" for k in custom)
    # The GPU runner finds each case's inputs and reference by name.
    for name in ("custom_cute_axpby", "custom_tile_axpy"):
        ex = by_name(name)
        x, y = ex.make_inputs((3, 5), torch.float32, "cpu")
        assert torch.allclose(ex.reference(x, y), torch.ops.tta_examples.__getattr__(name[len("custom_") :])(x, y, **CASES[name].values))


_lib = torch.library.Library("tta_dsl_mutating", "FRAGMENT")
for _name in ("axpy", "axpy_cute"):
    _lib.define(f"{_name}(Tensor x, Tensor y, float a) -> Tensor")
    _lib.impl(_name, lambda x, y, a: a * x + y, "CompositeExplicitAutograd")
    torch.library.register_fake(f"tta_dsl_mutating::{_name}", lambda x, y, a: torch.empty_like(x), lib=_lib)


def _refused(op, arg):
    """Build the op's plugin for 1-D float32 inputs over the stand-in: the kernel's write to
    ``arg`` is refused when ``aot_impl`` compiles it."""
    metas = [TensorType("float32", (None,)), TensorType("float32", ("i0_0",))]
    name = op.plugin_name([True, True], metas)
    itensors = [trt.ITensor(n, [-1], trt.float32) for n in ("x", "y")]
    added = plugin_build.add_plugin_aot(getattr(trtp.op.tta, name)(*itensors, **qdp.attribute_kwargs(name, {"a": 2.0})))
    with pytest.raises(tta.PluginError, match=rf"argument '{arg}' is written by the kernel"):
        plugin_build.build_plugin(added, [((1,), (64,), (4096,))] * 2)


@pytest.mark.cutile
def test_cutile_kernel_writing_an_input_is_refused():
    """The schema declares no mutation; the kernel also stores its result into y."""
    from cutile_mutating import launch_axpy_into_y  # imports cuTile

    _refused(tta.custom_op("tta_dsl_mutating::axpy", kernel=tta.cutile(launch_axpy_into_y, configs=[{"TILE": 256}])), "y")


@pytest.mark.cutedsl
def test_cutedsl_kernel_writing_an_input_is_refused():
    from cutedsl_mutating import launch_axpy_into_x  # imports CuTeDSL

    _refused(tta.custom_op("tta_dsl_mutating::axpy_cute", kernel=tta.cutedsl(launch_axpy_into_x, configs=[{"THREADS": 256}])), "x")
