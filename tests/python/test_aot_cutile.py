"""cuTile AOT compile for sm_90 of every cuTile example kernel and dtype (CPU only: tileiras needs
no GPU), with the TensorRT QDP ABI checked on the real CUBIN: the PTX tileiras embedded in it and
the parameter layout ptxas recorded. Needs cuda-tile and a tileiras >= 13.3 (see
tta/aot/cuda_tools.py); without them these tests fail, they do not skip."""

from __future__ import annotations

import cuda.tile  # noqa: F401  (fail loudly when cuTile is missing)
import cutile_cases as cases
import pytest
import torch
from expr_checks import expressions_render_for_tensorrt

import tta.declare.specs as specs
from tta.aot import ptxabi
from tta.aot.base import symbol_values
from tta.aot.compile import compile_specs
from tta.aot.cutile import backend as cutile
from tta.aot.driver import compile_spec
from tta.aot.session import TensorType
from tta.common import bridge as core
from tta.errors import PluginError
from tta.examples.kernels import by_name, examples

EXAMPLES = examples(("cutile",))
CASES = [(ex.name, dt) for ex in EXAMPLES for dt in ex.dtypes]
IDS = [f"{n}-{str(d)[6:]}" for n, d in CASES]


@pytest.mark.torch_independent
def test_every_example_is_covered():
    assert {ex.name for ex in EXAMPLES} == {"cutile_add_relu", "cutile_rmsnorm"}
    for ex in EXAMPLES:
        assert set(ex.dtypes) == {torch.float32, torch.float16, torch.bfloat16}
        assert len(ex.test_shapes) >= 3


@pytest.fixture(scope="module")
def compiled():
    # Through the compile cache (the test run's, scripts/test.sh): later tests that compile these
    # kernels, the TensorRT ones too, find them there.
    out = {}
    for ex in EXAMPLES:
        for dt in ex.dtypes:
            out[(ex.name, dt)] = compile_specs([ex.spec()], ex.input_metas(dt), ex.meta, sm=90, max_ptx=90, progress=False)
    return out


def _eval(expr: str, env: dict) -> int:
    return core.eval_expr(expr, env)


@pytest.mark.parametrize("name, dtype", CASES, ids=IDS)
@pytest.mark.kernels
def test_qdp_abi_on_real_cubin(compiled, name, dtype):
    ex = by_name(name)
    n_in = len(ex.input_metas(dtype))
    for k in compiled[(name, dtype)]:
        assert k.backend == "cutile" and k.code_format == "cubin" and k.code[:4] == b"\x7fELF"
        assert k.sm == 90 and k.block == (1, 1, 1) and k.shared_mem == 0
        # The PTX the CUBIN was built from: a tile kernel (.language 7) for sm_90, ISA 9.4.
        ptx = core.ptx_from_cubin(k.code)
        module = core.ptx_parse(ptx)
        assert k.ptx_version == module.version == "9.4"
        assert module.target[0].startswith("sm_90")
        entry = ptxabi.entry_of(ptx, k.entry)
        assert entry.language == 7 and list(entry.reqntid) == k.meta["reqntid"]
        kinds = [(p.ty, p.is_ptr, p.hidden) for p in entry.params]
        n_x = len(k.extras)
        assert kinds == [(".u64", True, False)] * n_in + [(".u32", False, False)] * n_x + [(".u64", True, False)]
        # What ptxas laid out in the CUBIN: 8-byte pointers around 4-byte int32 extras.
        layout = core.cubin_params(k.code, k.entry)
        assert [p.size for p in layout] == [8] * n_in + [4] * n_x + [8]
        assert [p.offset for p in layout] == sorted(p.offset for p in layout)
        assert k.input_dtypes == (str(dtype)[6:],) * n_in and k.output_dtypes == (str(dtype)[6:],)
        assert "CUBIN acceptance is unverified" in k.meta["note"]


@pytest.mark.parametrize("name, dtype", CASES, ids=IDS)
@pytest.mark.kernels
def test_extras_and_grid_match_a_concrete_launch(compiled, name, dtype):
    """Run the launch function on real (CPU) tensors of each test size with ct.launch
    intercepted, and compare what cuTile would have been given with the compiled expressions."""
    ex = by_name(name)
    for k in compiled[(name, dtype)]:
        for shape in ex.test_shapes:
            ins = ex.make_inputs(shape, dtype, "cpu")
            env = symbol_values([t.shape for t in ins])
            if not all(_eval_guard(g, env) for g in k.meta["guards"]):
                continue
            outs = [ex.meta(*ins)]
            launches = []
            with cutile.intercept(launches.append):
                ex.launch_fn(*ins, *outs, **dict(k.config))
            (launch,) = launches
            assert tuple(_eval(g, env) for g in k.grid) == tuple(launch.grid) + (1,) * (3 - len(launch.grid))
            ports = {"input": ins, "output": outs}
            for param, arg in zip(k.meta["params"], launch.args):
                if param["kind"] != "array":
                    assert param["kind"] == "constant" and param["value"] == arg
                    continue
                t = ports[param["port"][0]][param["port"][1]]
                assert arg.untyped_storage().data_ptr() == t.untyped_storage().data_ptr()
                value = lambda tok: _eval(k.extras[int(tok[1:])], env) if tok.startswith("e") else int(tok)  # noqa: E731
                assert tuple(map(value, param["shape"])) == tuple(arg.shape)
                assert tuple(map(value, param["strides"])) == arg.stride()


def _eval_guard(g: str, env: dict) -> bool:
    from tta.aot.base import guards_hold

    return guards_hold([g], env)


@pytest.mark.kernels
def testexpressions_render_for_tensorrt(compiled):
    # ct.cdiv(n, TILE) is -((-n) // TILE): it must reach TensorRT as trtp.cdiv, without unary minus.
    k = compiled[("cutile_add_relu", torch.float16)][0]
    assert k.grid[0] == "CeilDiv(i0_0*i0_1, 1024)"
    assert expressions_render_for_tensorrt(k for ks in compiled.values() for k in ks) > 0


@pytest.mark.kernels
def test_entry_rebuilds_the_native_arrays(compiled):
    k = compiled[("cutile_rmsnorm", torch.bfloat16)][0]
    # x is viewed as [rows, n], w is [n]; the unit strides and eps/TILE_N are compiled in.
    assert k.extras == ("i0_0*i0_1", "i0_2", "i1_0")
    assert k.grid == ("i0_0*i0_1", "1", "1")
    assert k.meta["guards"] == ["i0_2 <= 1024"]
    src = k.meta["entry_source"]
    assert "from_foreign(in0.foreign_pointer, (e0, e1,), (e1, 1,))" in src
    assert "from_foreign(in1.foreign_pointer, (e2,), (1,))" in src
    assert "from_foreign(out0.foreign_pointer, (e0, e1,), (e1, 1,))" in src
    consts = [p["value"] for p in k.meta["params"] if p["kind"] == "constant"]
    assert consts == [1e-6, 1024]


def _compile(fn, n_inputs=1, config=None, **options):
    spec = specs.cutile(fn, configs=[config or {}])
    metas = [TensorType.dynamic("float32", 2) for _ in range(n_inputs)]
    return compile_spec(spec, config or {}, metas, lambda x, *_: x.new_empty(x.shape), 90, 90, **options)


@pytest.mark.kernels
def test_an_input_the_kernel_ignores_still_gets_its_pointer():
    k = _compile(cases.launch_copy_ignoring_y, n_inputs=2)
    entry = ptxabi.entry_of(core.ptx_from_cubin(k.code), k.entry)
    assert [p.ty for p in entry.params] == [".u64", ".u64", ".u32", ".u64"]
    assert k.extras == ("i0_0*i0_1",)


@pytest.mark.kernels
def test_runtime_int_is_an_extra_and_float_is_compiled_in():
    k = _compile(cases.launch_scale)
    # n, x.view(-1).shape and out.view(-1).shape are one expression: one extra.
    assert k.extras == ("i0_0*i0_1",)
    by_name_ = {p["name"]: p for p in k.meta["params"]}
    assert by_name_["n"] == {**by_name_["n"], "kind": "extra", "value": "e0"}
    assert by_name_["s"]["kind"] == "constant" and by_name_["s"]["value"] == 0.5
    assert _eval(k.grid[0], {"i0_0": 3, "i0_1": 100}) == 2


@pytest.mark.parametrize(
    "fn, message",
    [
        (cases.launch_float_from_shapes, "computed from shapes that is not an int"),
        (cases.launch_shape_to_constant, "ct.Constant parameter 'TILE' gets i0_0"),
        (cases.launch_scratch, "neither an input nor an output"),
        (cases.launch_twice, "launched 2 kernels"),
        (cases.launch_offset_view, "at another offset"),
    ],
)
@pytest.mark.kernels
def test_refuses_what_tensorrt_cannot_launch(fn, message):
    with pytest.raises(PluginError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _compile(fn)


@pytest.mark.kernels
def test_refuses_hidden_tma_parameters():
    # Assuming 16-byte aligned buffers lets tileiras load the weight with TMA, whose tensor-map
    # descriptor is a hidden kernel parameter TensorRT does not pass.
    ex = by_name("cutile_rmsnorm")
    with pytest.raises(PluginError, match=r"hidden parameter\(s\) \(\.b8\[128\]: TMA"):
        compile_spec(ex.spec(), ex.configs[0], ex.input_metas(torch.float16), ex.meta, 90, 90, pointer_divisibility=16)


@pytest.mark.torch_independent
def test_toolchain_names_a_tileiras_for_sm90():
    info = cutile.toolchain()
    major, minor = map(int, info["tileiras"].split("."))
    assert (major, minor) >= (13, 3), info


@pytest.mark.kernels
def test_inductor_kernel_bundle_of_a_cutile_plugin(tmp_path):
    """What the Inductor backend launches for a cuTile region (tta_cubin::<op>): its kernels
    compiled here per plugin name, one per config, saved and read back; the launcher picks by
    dtype. The launch itself runs on the GPU (test_gpu_backends.py)."""
    from tta.inductor.cubin_ops import Launcher
    from tta.inductor.kernel_bundle import compile_bundle, load_bundle, save_bundle
    from tta.tools.gpu import build_bundle, models

    model = models.DSLResidualBlock(models.dsl_add_relu_plugin("cutile"))
    bundle = compile_bundle(model, build_bundle.example(4, torch.float16), build_bundle.dynamic_shapes(), sm=90, max_ptx=90)
    assert list(bundle) == ["cutile_add_relu_e2e"]
    kernels = bundle["cutile_add_relu_e2e"]
    assert [dict(k.config)["TILE"] for k in kernels] == [1024, 256] and all(k.input_dtypes == ("float16", "float16") for k in kernels)
    save_bundle(tmp_path / "b.json", bundle)
    assert [k.entry for k in load_bundle(tmp_path / "b.json")["cutile_add_relu_e2e"]] == [k.entry for k in kernels]
    assert Launcher("op", kernels, 1).pick(list(build_bundle.example(7, torch.float16))) == 0
