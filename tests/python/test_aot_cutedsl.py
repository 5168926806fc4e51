"""CuTeDSL AOT compile for sm_90a of every CuTeDSL example kernel and dtype (CPU only), with the
TensorRT QDP ABI checked on the real PTX (parsed by the Rust PTX module). Needs
nvidia-cutlass-dsl; without it these tests fail, they do not skip."""

from __future__ import annotations

import math

import cutedsl_cases as cases
import cutlass.cute  # noqa: F401  (fail loudly when CuTeDSL is missing)
import pytest
import torch
from expr_checks import expressions_render_for_tensorrt

import tta.declare.specs as specs
from tta.aot.base import symbol_values
from tta.aot.compile import compile_specs
from tta.aot.cutedsl import backend as cutedsl
from tta.aot.driver import compile_spec
from tta.aot.session import TensorType
from tta.common import bridge as core
from tta.errors import PluginError
from tta.examples.kernels import by_name, examples

EXAMPLES = examples(("cutedsl",))
CASES = [(ex.name, dt) for ex in EXAMPLES for dt in ex.dtypes]
IDS = [f"{n}-{str(d)[6:]}" for n, d in CASES]


@pytest.mark.torch_independent
def test_every_example_is_covered():
    assert {ex.name for ex in EXAMPLES} == {"cutedsl_add_relu", "cutedsl_rmsnorm", "cutedsl_tensor_add_relu"}
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
def test_qdp_abi_on_real_ptx(compiled, name, dtype):
    ex = by_name(name)
    n_in = len(ex.input_metas(dtype))
    for k in compiled[(name, dtype)]:
        assert k.backend == "cutedsl" and k.code_format == "ptx" and k.sm == 90
        ptx = k.code.decode()
        module = core.ptx_parse(ptx)
        # The cu12 flavour's ISA, which a CUDA 13.0 driver (max 9.0) JIT-compiles.
        assert k.ptx_version == module.version == "8.8"
        # Nothing Hopper-specific in these kernels: the plain target, which later GPUs also JIT.
        assert module.target == ("sm_90",) and k.meta["arch_specific"] is None
        (entry,) = module.entries
        assert entry.name == k.entry
        kinds = [(p.ty, p.is_ptr, p.array_len) for p in entry.params]
        n_x = len(k.extras)
        assert kinds == [(".u64", True, None)] * n_in + [(".u32", False, None)] * n_x + [(".u64", True, None)]
        # The declarations were reordered (the body refers to them by name): the kernel declares
        # its pointers first and the sizes last, so the output's old name comes last.
        declared = [p.name.rsplit("_", 1)[1] for p in entry.params]
        roles = [tuple(r) for r in k.meta["kernel_params"]]
        rank = {"input": 0, "extra": 1, "output": 2}
        assert declared == [str(i) for i in sorted(range(len(roles)), key=lambda i: (rank[roles[i][0]], roles[i][1]))]
        assert declared != sorted(declared)
        assert entry.reqntid == k.block


EXPECTED = {
    # name: (grid, extras, dynamic smem) for concrete sizes
    "cutedsl_add_relu": lambda ins, cfg: ((math.ceil(ins[0].numel() / cfg["THREADS"]), 1, 1), [ins[0].numel()], 0),
    "cutedsl_rmsnorm": lambda ins, cfg: (
        (ins[0].numel() // ins[0].shape[-1], 1, 1),
        [ins[0].numel() // ins[0].shape[-1], ins[0].shape[-1]],
        cfg["THREADS"] // 32 * 4,
    ),
    # cute.Tensor parameters: each tensor's pointer is followed by its dynamic shape and stride
    # values in the kernel; in QDP order, the extras of x, y and out (row-major: shape, then the
    # row stride, which equals the row length and is deduplicated).
    "cutedsl_tensor_add_relu": lambda ins, cfg: (
        (math.ceil(ins[0].numel() / cfg["THREADS"]), 1, 1),
        [*ins[0].shape, *ins[1].shape, *ins[0].shape],
        0,
    ),
}


@pytest.mark.parametrize("name, dtype", CASES, ids=IDS)
@pytest.mark.kernels
def test_grid_extras_and_smem_for_concrete_sizes(compiled, name, dtype):
    ex = by_name(name)
    for k in compiled[(name, dtype)]:
        cfg = dict(k.config)
        assert k.block == (cfg["THREADS"], 1, 1)
        for shape in ex.test_shapes:
            ins = ex.make_inputs(shape, dtype, "meta")
            env = symbol_values([t.shape for t in ins])
            grid, extras, smem = EXPECTED[name](ins, cfg)
            assert tuple(_eval(g, env) for g in k.grid) == grid
            assert [_eval(e, env) for e in k.extras] == extras
            assert k.shared_mem == smem


@pytest.mark.parametrize("name, dtype", CASES, ids=IDS)
@pytest.mark.kernels
def test_host_arguments_match_a_concrete_call(compiled, name, dtype):
    """Call the launch function on real (CPU) tensors with the host call intercepted: the int
    arguments it computes equal the recorded expressions, the pointers are the right ports."""
    ex = by_name(name)
    for k in compiled[(name, dtype)]:
        for shape in ex.test_shapes:
            ins = ex.make_inputs(shape, dtype, "cpu")
            outs = [ex.meta(*ins)]
            env = symbol_values([t.shape for t in ins])
            calls = []
            with cutedsl.intercept(calls.append):
                ex.launch_fn(*ins, *outs, **dict(k.config))
            (call,) = calls
            ports = {"input": ins, "output": outs}
            args = cutedsl.signature(call.fn).bind(*call.args, **call.kwargs).arguments
            for h in k.meta["host"]:
                if h["kind"] == "int":
                    assert _eval(h["expr"], env) == args[h["name"]]
                elif h["kind"] == "pointer":
                    assert int(args[h["name"]]._pointer) == ports[h["port"][0]][h["port"][1]].data_ptr()


@pytest.mark.kernels
def testexpressions_render_for_tensorrt(compiled):
    assert expressions_render_for_tensorrt(k for ks in compiled.values() for k in ks) > 0


@pytest.mark.kernels
def test_ptx_newer_than_the_driver_is_shipped_as_cubin():
    # max_ptx 8.0 < the cu12 flavour's 8.8: the permuted PTX is assembled for sm_90a instead.
    ex = by_name("cutedsl_rmsnorm")
    k = compile_spec(ex.spec(), ex.configs[0], ex.input_metas(torch.float16), ex.meta, 90, 80)
    assert k.code_format == "cubin" and k.code[:4] == b"\x7fELF" and k.ptx_version == "8.8"
    layout = core.cubin_params(k.code, k.entry)
    assert [p.size for p in layout] == [8, 8, 4, 4, 8]
    assert "shipped as a CUBIN" in k.meta["note"]


def _compile(fn, n_inputs=1, config=None, max_ptx=90):
    spec = specs.cutedsl(fn, configs=[config or {}])
    metas = [TensorType.dynamic("float32", 2) for _ in range(n_inputs)]
    return compile_spec(spec, config or {}, metas, lambda x, *_: x.new_empty(x.shape), 90, max_ptx)


@pytest.mark.kernels
def test_compile_then_call_is_recorded_like_a_direct_call(compiled):
    k = _compile(cases.launch_via_compile, n_inputs=2)
    configs = by_name("cutedsl_add_relu").spec().config_dicts()
    direct = compiled[("cutedsl_add_relu", torch.float32)][configs.index({"THREADS": 256})]
    assert (k.grid, k.extras, k.block, k.code) == (direct.grid, direct.extras, direct.block, direct.code)


@pytest.mark.kernels
def test_a_stream_argument_stays_on_the_host():
    # cutlass.torch.current_stream() works without a GPU while recording; the stream is a host
    # argument, not a kernel parameter (TensorRT launches on its own stream).
    k = _compile(cases.launch_with_stream)
    assert [h["kind"] for h in k.meta["host"]] == ["pointer", "pointer", "int", "stream"]
    assert k.extras == ("i0_0*i0_1",) and k.grid == ("FloorDiv(i0_0*i0_1 + 127, 128)", "1", "1")
    assert [p.ty for p in core.ptx_parse(k.code.decode()).entries[0].params] == [".u64", ".u32", ".u64"]


@pytest.mark.parametrize(
    "fn, n_inputs, message",
    [
        (cases.launch_tensor_param, 1, "kernel parameter 'gx' is a cute.Tensor, a by-value struct"),
        (cases.launch_runtime_float, 1, "parameter 's' gets 2.0 at run time"),
        (cases.launch_float_kernel_param, 1, "kernel parameter 's' gets Float32"),
        (cases.launch_ceil_div, 1, "grid\\[0\\] is computed by cute"),
        (cases.launch_offset, 1, "kernel parameter 'px' is computed by"),
        (cases.launch_torch_tensor, 1, "parameter 'px' gets a tensor, which CuTeDSL passes as a cute.Tensor"),
        (cases.launch_shape_to_constexpr, 1, "Constexpr parameter 'B' gets i0_0"),
        (cases.launch_two_kernels, 1, "launched 2 kernels"),
        (cases.launch_scratch, 1, "launch_scratch\\): data_ptr\\(\\) of a tensor that is neither an input nor an output"),
        (cases.launch_ignores_y, 2, "input 0 is passed twice"),
        (cases.launch_wrong_dtype, 1, "as Float16; use Float32"),
    ],
)
@pytest.mark.kernels
def test_refuses_what_tensorrt_cannot_launch(fn, n_inputs, message):
    with pytest.raises(PluginError, match=message):
        _compile(fn, n_inputs=n_inputs)


@pytest.mark.kernels
def test_tensor_parameters_get_a_pointer_abi_entry(compiled):
    """A kernel taking cute.Tensor parameters, launched with from_dlpack: the generated entry
    takes pointers and int32 extras; a dim static in the plugin's signature is compiled in."""
    ex = by_name("cutedsl_tensor_add_relu")
    dynamic = compiled[("cutedsl_tensor_add_relu", torch.float16)][ex.spec().config_dicts().index(ex.configs[0])]
    assert dynamic.extras == ("i0_0", "i0_1", "i1_0", "i1_1", "i0_0", "i0_1")
    assert [h["kind"] for h in dynamic.meta["host"]] == ["tensor", "tensor", "tensor", "constexpr"]
    static = compile_spec(ex.spec(), ex.configs[0], [TensorType.make(torch.float16, [None, 1024])] * 2, ex.meta, 90, 90)
    assert static.extras == ("i0_0", "i1_0", "i0_0")
    (entry,) = core.ptx_parse(static.code.decode()).entries
    assert [(p.ty, p.is_ptr) for p in entry.params] == [(".u64", True)] * 2 + [(".u32", False)] * 3 + [(".u64", True)]
    assert "add_relu_tensor_kernel" in static.entry
