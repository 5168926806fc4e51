"""Recording launch functions on symbolic fake tensors (tta.aot.record + the Triton interceptor):
argument roles, extras and grid expressions, constants, guards, and the errors users see."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl

from tta.aot import driver, ptxabi
from tta.aot.session import Session, TensorType
from tta.errors import PluginError
from tta.examples.kernels import by_name


@triton.jit
def scale_kernel(out_ptr, x_ptr, n, stride, factor: tl.constexpr, FLAG: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs * stride, mask=m) * factor, mask=m)


@triton.jit
def runtime_float_kernel(x_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * alpha, mask=offs < n)


@triton.jit
def copy2d_kernel(x_ptr, out_ptr, rows, cols, one, BM: tl.constexpr, BN: tl.constexpr):
    r = tl.program_id(0) * BM + tl.arange(0, BM)[:, None]
    c = tl.program_id(1) * BN + tl.arange(0, BN)[None, :]
    m = (r < rows) & (c < cols)
    tl.store(out_ptr + r * cols + c, tl.load(x_ptr + r * cols * one + c, mask=m), mask=m)


def session(*metas, outputs=None, meta_fn=None):
    s = Session([TensorType.make(*m) for m in metas])
    if meta_fn is not None:
        s.outputs_from_fn(meta_fn, "test")
    else:
        s.outputs_from_metas([TensorType.make(*m) for m in outputs])
    return s


class Spec:
    """The part of a KernelSpec the recorder needs."""

    def __init__(self, fn, autotuned=""):
        self.launch_fn = fn
        self.backend = "triton"
        self.autotuned = autotuned

    def launch_kwargs(self, config):
        return {} if self.autotuned else dict(config)


def record(fn, s, **config):
    return driver.record(Spec(fn), config, s)


def test_symbols_are_distinct_with_distinct_prime_hints():
    s = session((torch.float16, (None, None)), (torch.float16, (None, 7)), outputs=[(torch.float16, ("i0_0", "i0_1"))])
    names = [s.expr(d) for t in s.inputs for d in t.shape]
    assert names == ["i0_0", "i0_1", "i1_0", "7"]
    hints = list(s.hints.values())
    assert len(set(hints)) == len(hints) and all(h > 16 for h in hints)
    assert s.expr(s.inputs[0].shape[0] * s.inputs[0].shape[1] + 3) == "i0_0*i0_1 + 3"
    assert s.expr((s.inputs[0].numel() + 127) // 128) == "FloorDiv(i0_0*i0_1 + 127, 128)"


def test_output_shapes_from_expressions_and_from_meta_fn():
    s = session((torch.float32, (None, None)), outputs=[(torch.float32, ("i0_0*2", "FloorDiv(i0_1, 2)")), (torch.int32, (3,))])
    assert [m.shape for m in s.output_metas()] == [("2*i0_0", "FloorDiv(i0_1, 2)"), (3,)]
    s2 = session((torch.float32, (None, None)), meta_fn=lambda x: (x.new_empty(x.shape[1], x.shape[0] + 1),))
    assert s2.output_metas()[0].shape == ("i0_1", "i0_0 + 1")


def test_roles_extras_constants_and_grid():
    def launch(x, out, *, BLOCK=256):
        n = out.numel()
        scale_kernel[(triton.cdiv(n, BLOCK),)](out, x.view(-1), n, 1, factor=2.5, FLAG=True, BLOCK=BLOCK, num_warps=2)

    s = session((torch.float32, (None, None)), outputs=[(torch.float32, ("i0_0", "i0_1"))])
    plan = record(launch, s, BLOCK=256)
    roles = {p.name: (p.role, p.index) for p in plan.params}
    assert roles["out_ptr"] == ("output", 0)
    assert roles["x_ptr"] == ("input", 0)  # a view starting at the buffer is the buffer
    assert roles["n"] == ("extra", 0)
    # stride=1 does not depend on shapes: compiled in, not a runtime argument (and not the JIT's
    # silent "== 1" specialization: it is recorded as baked).
    assert roles["stride"][0] == "constexpr" and plan.baked == {"stride": 1}
    assert plan.constexprs == {"stride": 1, "factor": 2.5, "FLAG": True, "BLOCK": 256}
    assert plan.extras == ["i0_0*i0_1"]
    assert plan.grid == ("FloorDiv(i0_0*i0_1 + 255, 256)", "1", "1")
    assert plan.options == {"num_warps": 2}
    assert plan.signature == {
        "out_ptr": "*fp32",
        "x_ptr": "*fp32",
        "n": "i32",
        "stride": "constexpr",
        "factor": "constexpr",
        "FLAG": "constexpr",
        "BLOCK": "constexpr",
    }
    # runtime params in kernel order: out, x, n -> QDP order: x (input), n (extra), out (output)
    assert ptxabi.qdp_order(plan.runtime_roles()) == [1, 2, 0]


def test_callable_grid_and_2d_extras():
    def launch(x, out, *, BM=16, BN=32):
        rows, cols = x.shape
        grid = lambda meta: (triton.cdiv(rows, meta["BM"]), triton.cdiv(cols, meta["BN"]))  # noqa: E731
        copy2d_kernel[grid](x, out, rows, cols, 1, BM=BM, BN=BN)

    s = session((torch.float16, (None, None)), outputs=[(torch.float16, ("i0_0", "i0_1"))])
    plan = record(launch, s, BM=16, BN=32)
    assert plan.grid == ("FloorDiv(i0_0 + 15, 16)", "FloorDiv(i0_1 + 31, 32)", "1")
    assert plan.extras == ["i0_0", "i0_1"]
    assert plan.baked == {"one": 1}


def test_static_dims_become_constants():
    def launch(x, out, *, BM=16, BN=32):
        rows, cols = x.shape
        copy2d_kernel[(triton.cdiv(rows, BM), triton.cdiv(cols, BN))](x, out, rows, cols, 1, BM=BM, BN=BN)

    s = session((torch.float16, (None, 64)), outputs=[(torch.float16, ("i0_0", 64))])
    plan = record(launch, s)
    assert plan.extras == ["i0_0"]
    assert plan.baked == {"cols": 64, "one": 1}
    assert plan.grid == ("FloorDiv(i0_0 + 15, 16)", "2", "1")


def test_examples_record_guards():
    ex = by_name("triton_softmax")
    s = Session(ex.input_metas(torch.float32))
    s.outputs_from_fn(ex.meta, ex.name)
    plan = record(ex.launch_fn, s, BLOCK=1024)
    assert plan.guards == ["i0_1 <= 1024"]
    assert plan.extras == ["i0_1"] and plan.grid == ("i0_0", "1", "1")
    ex = by_name("triton_rmsnorm")
    s = Session(ex.input_metas(torch.float16))
    s.outputs_from_fn(ex.meta, ex.name)
    plan = record(ex.launch_fn, s, BLOCK=4096, eps=1e-5, ROWS=8)
    # Rows per program: programs in groups of 16, each taking 8 rows (a dynamic count).
    assert plan.grid == ("16*FloorDiv(i0_0*i0_1 + 127, 128)", "1", "1")
    assert plan.extras == ["i0_0*i0_1", "i0_2"] and plan.guards == ["i0_2 <= 4096"]
    assert plan.constexprs["eps"] == 1e-5 and plan.constexprs["VEC"] == 8


def _float_launch(x, out, *, BLOCK=128):
    runtime_float_kernel[(triton.cdiv(out.numel(), BLOCK),)](x, out, out.numel(), 0.5, BLOCK=BLOCK)


def test_float_runtime_param_is_bound_to_its_value():
    # A float fixed for the plugin is no run-time argument: it is bound (not a constexpr, which
    # would change how the kernel body sees it) and reported as baked.
    s = session((torch.float32, (None,)), outputs=[(torch.float32, ("i0_0",))])
    plan = record(_float_launch, s)
    assert plan.floats == {"alpha": 0.5} and plan.baked["alpha"] == 0.5
    assert [p.name for p in plan.runtime_params()] == ["x_ptr", "out_ptr", "n"]


def test_float_computed_from_shapes_is_refused_with_the_parameter_name():
    def launch(x, out):
        runtime_float_kernel[(1,)](x, out, out.numel(), x.shape[0] / 2, BLOCK=4)

    s = session((torch.float32, (None,)), outputs=[(torch.float32, ("i0_0",))])
    with pytest.raises(PluginError, match="'alpha' gets a float computed from shapes"):
        record(launch, s)


@pytest.mark.parametrize(
    "body, needle",
    [
        ("scale_kernel[(1,)](out, x, x.shape[0], 1, factor=1.0, FLAG=False, BLOCK=x.shape[0])", "depends on input shapes"),
        ("scale_kernel[(1,)](torch.empty_like(out), x, 4, 1, factor=1.0, FLAG=False, BLOCK=4)", "neither an input nor an output"),
        ("scale_kernel[(1,)](out, out, 4, 1, factor=1.0, FLAG=False, BLOCK=4)", "passed twice"),
        ("scale_kernel[(1,)](out, x[1:], 4, 1, factor=1.0, FLAG=False, BLOCK=4)", "another offset"),
        ("pass", "launched no kernel"),
        ("[scale_kernel[(1,)](out, x, 4, 1, factor=1.0, FLAG=False, BLOCK=4) for _ in range(2)]", "launched 2 kernels"),
        ("x.data_ptr()", "data_ptr"),
        ("scale_kernel[(1,)](out, x, 4, 1, factor=1.0, FLAG=False, BLOCK=4, bogus=3)", "does not match the kernel's parameters"),
    ],
)
def test_errors_name_the_problem(body, needle):
    ns = {"scale_kernel": scale_kernel, "torch": torch}
    exec(f"def launch(x, out):\n    {body}\n", ns)
    s = session((torch.float32, (None,)), outputs=[(torch.float32, ("i0_0",))])
    with pytest.raises(PluginError) as e:
        record(ns["launch"], s)
    assert needle in str(e.value)


def test_input_not_passed_is_refused():
    def launch(x, y, out):
        scale_kernel[(1,)](out, x, 4, 1, factor=1.0, FLAG=False, BLOCK=4)

    s = session((torch.float32, (None,)), (torch.float32, (None,)), outputs=[(torch.float32, ("i0_0",))])
    with pytest.raises(PluginError, match="input 1 is not passed to the kernel"):
        record(launch, s)


@triton.autotune(configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128})], key=["n"])
@triton.jit
def tuned_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs), mask=offs < n)


def _tuned_launch(x, out):
    tuned_kernel[lambda meta: (triton.cdiv(out.numel(), meta["BLOCK"]),)](x, out, out.numel())


def test_autotune_config_is_applied_while_recording():
    s = session((torch.float32, (None,)), outputs=[(torch.float32, ("i0_0",))])
    plan = driver.record(Spec(_tuned_launch, autotuned="tuned_kernel"), {"BLOCK": 128, "num_warps": 2, "num_stages": 3}, s)
    assert plan.constexprs["BLOCK"] == 128 and plan.options == {"num_warps": 2, "num_stages": 3}
    assert plan.grid[0] == "FloorDiv(i0_0 + 127, 128)"


def test_autotune_with_user_configs_needs_the_launch_to_pass_them():
    s = session((torch.float32, (None,)), outputs=[(torch.float32, ("i0_0",))])
    with pytest.raises(PluginError, match="BLOCK"):
        record(_tuned_launch, s)


def test_interception_is_per_thread_and_restored():
    from triton.runtime.jit import JITFunction

    original = JITFunction.run
    s = session((torch.float32, (None,)), outputs=[(torch.float32, ("i0_0",))])
    record(lambda x, out: scale_kernel[(1,)](out, x, x.numel(), 1, factor=1.0, FLAG=False, BLOCK=4), s)
    assert JITFunction.run is original


@pytest.mark.torch_independent
def test_shape_expressions_evaluate_without_python_eval():
    import sympy

    from tta.aot.session import _EXPR_FUNCS, eval_shape

    a, b = sympy.Symbol("i0_0"), sympy.Symbol("i0_1")
    scope = {"i0_0": a, "i0_1": b, **_EXPR_FUNCS}
    assert eval_shape("2*i0_0 + i0_1 - 1", scope) == 2 * a + b - 1
    assert eval_shape("i0_0**2", {"i0_0": 7}) == 49
    for bad in ["__import__('os')", "i0_0.real", "[i0_0]", "open", "lambda: 1"]:
        with pytest.raises((ValueError, SyntaxError)):
            eval_shape(bad, scope)
