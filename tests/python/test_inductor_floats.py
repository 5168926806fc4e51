"""A Triton kernel's run-time float (``sm_scale``) under the Inductor backends is bound as an
fp32 constant, as on the AOT path (``tta.inductor.triton_floats``). Inductor on torch 2.11
declares a Python float argument of a user kernel ``fp64``; ``a * sm_scale`` is then fp64 and
the ``tl.dot`` after it does not compile. On the CPU: the kernel Inductor receives takes no
float, and compiles for sm_90 with the signature Inductor would give it. On the GPU (marked):
``tta.compile(backend="inductor")`` and ``tta.aot_compile`` run it."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl
from torch._dynamo.backends.common import aot_autograd

import tta
from tta.inductor import program as lowering
from tta.inductor.compile import _lowered

SCALE = 0.125
K = 16


@triton.jit
def scaled_mm_kernel(a_ptr, b_ptr, c_ptr, n, sm_scale, BLOCK: tl.constexpr, K: tl.constexpr):
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    cols = tl.arange(0, K)
    mask = rows[:, None] < n
    a = tl.load(a_ptr + rows[:, None] * K + cols[None, :], mask=mask, other=0.0)
    b = tl.load(b_ptr + cols[:, None] * K + cols[None, :])
    c = tl.dot(a * sm_scale, b, input_precision="ieee")  # fp32 only if sm_scale is
    tl.store(c_ptr + rows[:, None] * K + cols[None, :], c, mask=mask)


def launch_scaled_mm(a, b, c, *, BLOCK: int = 16):
    n = a.shape[0]
    scaled_mm_kernel[(triton.cdiv(n, BLOCK),)](a, b, c, n, SCALE, BLOCK=BLOCK, K=K)


SCALED_MM = tta.custom_plugin(
    kernel=tta.triton(launch_scaled_mm, configs=[{"BLOCK": 16}]),
    meta_impl=lambda a, b: a.new_empty(a.shape[0], K),
    name="scaled_mm_fp32_float",
)


class Scaled(torch.nn.Module):
    def forward(self, a, b):
        with tta.lower_as(impl=SCALED_MM):
            c = (a * SCALE) @ b
        return c + 1


def _inputs(n: int, device: str = "cpu"):
    g = torch.Generator().manual_seed(n)
    return torch.randn(n, K, generator=g).to(device), torch.randn(K, K, generator=g).to(device)


_DYN = ({0: torch.export.Dim("n", min=2, max=256)}, None)


class _Captured(Exception):
    pass


def _kernel_calls(device: str = "cpu"):
    """The user-kernel calls in the graph Inductor receives: (kernel, every argument by name)."""
    from torch._higher_order_ops.triton_kernel_wrap import kernel_side_table

    program, report = _lowered(Scaled(), _inputs(8, device), _DYN, None, False, "inductor", triton_on_cpu=True)
    assert [r.runs for r in report.regions] == [lowering.USER_KERNEL], str(report)
    graphs = []

    def capture(gm, _example):
        graphs.append(gm)
        raise _Captured()

    compiled = torch.compile(program.module(), backend=aot_autograd(fw_compiler=capture), dynamic=True)
    with torch.no_grad(), pytest.raises(Exception):
        compiled(*_inputs(5, device))
    assert graphs, "no graph reached the compiler"
    calls = []
    for node in graphs[0].graph.nodes:
        if node.op == "call_function" and "triton_kernel_wrapper" in str(node.target):
            args = {**kernel_side_table.get_constant_args(node.kwargs["constant_args_idx"]), **node.kwargs["kwargs"]}
            calls.append((kernel_side_table.get_kernel(node.kwargs["kernel_idx"]), args))
    return calls


def _inductor_2_11_signature(kernel, args) -> dict[str, str]:
    """The Triton signature torch 2.11's Inductor writes for a user kernel: a Python float
    argument is ``fp64`` (``triton_utils.signature_of``)."""
    sig = {}
    for p in kernel.params:
        v = args.get(p.name)
        if p.is_constexpr:
            sig[p.name] = "constexpr"
        elif isinstance(v, torch.fx.Node) and isinstance(v.meta.get("val"), torch.Tensor):
            sig[p.name] = "*fp32"
        elif isinstance(v, float):
            sig[p.name] = "fp64"
        else:
            sig[p.name] = "i32"
    return sig


@pytest.mark.kernels
def test_the_kernel_inductor_receives_takes_no_float_and_compiles_with_inductors_signature():
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    calls = _kernel_calls()
    assert len(calls) == 1
    kernel, args = calls[0]
    runtime = [p.name for p in kernel.params if not p.is_constexpr]
    assert "sm_scale" not in runtime and not any(isinstance(args.get(n), float) for n in runtime), (runtime, args)
    assert kernel.fn.__name__ == "scaled_mm_kernel_fp32_bound"
    assert f"tl.full((), {SCALE!r}, tl.float32)" in kernel.src  # the value, as fp32
    signature = _inductor_2_11_signature(kernel, args)
    constexprs = {p.name: args[p.name] for p in kernel.params if p.is_constexpr}
    triton.compile(ASTSource(fn=kernel, signature=signature, constexprs=constexprs), target=GPUTarget("cuda", 90, 32))


@pytest.mark.kernels
def test_the_unbound_kernel_fails_with_inductors_float_signature():
    """What the binding avoids: the kernel as written, given Inductor 2.11's fp64 float."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    sig = {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32", "n": "i32", "sm_scale": "fp64", "BLOCK": "constexpr", "K": "constexpr"}
    with pytest.raises(Exception, match="(?i)dot|type|dtype"):
        triton.compile(ASTSource(fn=scaled_mm_kernel, signature=sig, constexprs={"BLOCK": 16, "K": K}), target=GPUTarget("cuda", 90, 32))


def test_autotune_and_heuristics_layers_stay_around_the_bound_kernel():
    from triton.runtime.autotuner import Autotuner, Heuristics

    from tta.examples.kernels import autotuned
    from tta.inductor import triton_floats

    x = torch.empty(10)
    kernel, values, grid = triton_floats.bind(autotuned.axpy_kernel, (x, x, x, 10, 0.5), {}, lambda meta: (1,))
    assert isinstance(kernel, Autotuner) and isinstance(kernel.fn, Heuristics)
    assert "scale" not in kernel.arg_names and "scale" not in values and values["n"] == 10
    assert [c.kwargs for c in kernel.configs] == [c.kwargs for c in autotuned.axpy_kernel.configs]
    assert (
        triton_floats.bind(scaled_mm_kernel, (x, x, x, 3), {"sm_scale": 2.0, "BLOCK": 16, "K": 16}, (1,))[0].fn.__name__
        == "scaled_mm_kernel_fp32_bound"
    )


@pytest.mark.gpu
def test_gpu_inductor_and_aot_inductor_run_a_kernel_whose_float_meets_tl_dot(tmp_path):
    model = Scaled().cuda()
    compiled = tta.compile(model, _inputs(8, "cuda"), _DYN, backend="inductor")
    assert [r.runs for r in compiled.tta_report.regions] == [lowering.USER_KERNEL], str(compiled.tta_report)
    package = tta.aot_compile(model, _inputs(8, "cuda"), tmp_path / "scaled.pt2", _DYN)
    loaded = package.load()
    with torch.no_grad():
        for n in (2, 17, 100):
            a, b = _inputs(n, "cuda")
            ref = (a.double() * SCALE @ b.double()).float() + 1
            torch.testing.assert_close(compiled(a, b), ref, atol=1e-4, rtol=1e-4)
            torch.testing.assert_close(loaded(a, b), ref, atol=1e-4, rtol=1e-4)
