"""The eager path checks the kernel on first use (issue 44): the first call of a ``tta::<op>``
with a new signature compares the kernel with the region body.

On a CPU the call runs the region body, so the check is off unless asked; asked, it runs the
recorded Triton launch under Triton's interpreter, which is how these tests cover it. The GPU
test covers the default on CUDA."""

from __future__ import annotations

import check_cases as cc
import pytest
import torch

import tta
from tta.runtime import first_use

pytestmark = pytest.mark.kernels  # the interpreter runs a recorded launch


def _program(model, x, check_kernels=None, batch_max: int = 64):
    b = torch.export.Dim("b", min=1, max=batch_max)
    ep = torch.export.export(model, (x,), dynamic_shapes=({0: b},))
    return tta.rewrite(ep, check_kernels=check_kernels).program.module()


def _add_rmsnorm(cls, plugin, batch: int = 2):
    torch.manual_seed(0)
    return cls(plugin).to(torch.bfloat16), torch.randn(batch, 5, 48, dtype=torch.bfloat16)


@pytest.fixture(autouse=True)
def _fresh():
    first_use.reset()
    yield
    first_use.reset()


def test_outputs_in_another_order_are_refused_on_the_first_call_with_the_fix():
    model, x = _add_rmsnorm(cc.AddRMSNorm, cc.USER_ORDER)
    run = _program(model, x, check_kernels=True)
    with pytest.raises(tta.KernelCheckError) as info:
        run(x)
    msg = str(info.value)
    # The region and its line, each output by the user's name with its error, the size by the
    # name of its Dim, then the fix in the user's terms, and only then how to skip the check.
    assert "check_cases.py:" in msg and info.value.source and info.value.region in msg
    assert "h (max error" in msg and "y (max error" in msg and "at b=2" in msg
    assert "tta passes (h, y) to its parameters (y, h)" in msg
    fix = msg.index("Fix: declare `outputs=lambda: (y, h)` on the `tta.lower_as(...)` at")
    assert "launch_user_order take its output parameters as (h, y)" in msg
    assert fix < msg.index("To skip this check")
    assert info.value.max_error > 1.0 and info.value.output in ("h", "y")
    # A failing signature is never remembered: the next call raises again.
    with pytest.raises(tta.KernelCheckError):
        run(x)


def test_the_fix_it_names_passes():
    model, x = _add_rmsnorm(cc.AddRMSNormDeclared, cc.USER_ORDER)
    y, h = _program(model, x, check_kernels=True)(x)
    torch.testing.assert_close(h, x + model.residual + 1)


def test_a_correct_kernel_passes_once_per_signature_and_changes_nothing(monkeypatch):
    model, x = _add_rmsnorm(cc.AddRMSNorm, cc.TTA_ORDER)
    # One op serves both programs; the latest rewrite's switch is the op's.
    unchecked = _program(model, x, check_kernels=False)(x)
    checked = _program(model, x, check_kernels=True)
    kept = x.clone()
    calls = []
    original = first_use.check
    monkeypatch.setattr(first_use, "check", lambda *a, **k: calls.append(a[1]) or original(*a, **k))
    got = checked(x)
    assert len(calls) == 1 and torch.equal(x, kept)  # the check never writes the caller's inputs
    for a, b in zip(got, unchecked):
        assert torch.equal(a, b)  # nor changes the results
    checked(x)
    checked(torch.randn(3, 5, 48, dtype=torch.bfloat16))
    assert len(calls) == 1  # same signature (dtypes, ranks, which dims are 1): nothing to pay
    checked(torch.randn(1, 5, 48, dtype=torch.bfloat16))
    assert len(calls) == 2  # a batch of 1 is a new signature


def test_off_by_default_on_a_cpu_on_with_the_variable_and_off_with_the_keyword(monkeypatch):
    model, x = _add_rmsnorm(cc.AddRMSNorm, cc.USER_ORDER)
    monkeypatch.delenv("TTA_CHECK_KERNELS", raising=False)
    _program(model, x)(x)  # the CPU call runs the region body: nothing to check
    monkeypatch.setenv("TTA_CHECK_KERNELS", "1")
    with pytest.raises(tta.KernelCheckError, match="another order"):
        _program(model, x)(x)
    _program(model, x, check_kernels=False)(x)  # the keyword wins over the variable
    monkeypatch.setenv("TTA_CHECK_KERNELS", "0")
    _program(model, x)(x)


def test_an_output_written_transposed_is_named_with_its_layout():
    bad = tta.custom_plugin(
        kernel=tta.triton(cc.launch_scale, configs=[{"BLOCK": 64, "TRANSPOSED": True}]), name="first_use_scale_transposed"
    )
    x = torch.randn(6, 40)
    with pytest.raises(tta.KernelCheckError) as info:
        _program(cc.Scale(bad), x, check_kernels=True)(x)
    msg = str(info.value)
    assert "output 'scaled'" in msg  # the name its source line gives it, not the node's (mul)
    assert "Output scaled holds the right values in another layout" in msg and "scaled.permute(1, 0)" in msg
    good = tta.custom_plugin(kernel=tta.triton(cc.launch_scale, configs=[{"BLOCK": 64}]), name="first_use_scale")
    torch.testing.assert_close(_program(cc.Scale(good), x, check_kernels=True)(x), x * 2 + 1)


def test_torch_compile_of_the_rewritten_program_checks_too():
    model, x = _add_rmsnorm(cc.AddRMSNorm, cc.USER_ORDER)
    compiled = torch.compile(_program(model, x, check_kernels=True), backend="aot_eager")
    with pytest.raises(tta.KernelCheckError, match="another order"):
        compiled(x)


def test_a_kernel_with_no_cpu_interpreter_is_named_not_passed():
    from tta.declare.specs import installed

    if not installed("cutile"):
        pytest.skip("cutile is not installed")

    def launch_tile(x, out, *, TILE=64):  # never run on a CPU
        raise AssertionError("must not run")

    plugin = tta.custom_plugin(kernel=tta.cutile(launch_tile, configs=[{"TILE": 64}]), name="first_use_cutile_only")
    x = torch.randn(6, 40)
    with pytest.warns(tta.KernelCheckWarning, match="was not checked on first use: its kernels \\(cutile\\) have no CPU interpreter"):
        _program(cc.Scale(plugin), x, check_kernels=True)(x)


@pytest.mark.gpu
def test_gpu_outputs_in_another_order_are_refused_by_default():
    model, x = _add_rmsnorm(cc.AddRMSNorm, cc.USER_ORDER)
    model, x = model.cuda(), x.cuda()
    run = _program(model, x)
    with pytest.raises(tta.KernelCheckError, match=r"tta passes \(h, y\) to its parameters \(y, h\)") as info:
        run(x)
    assert "the launch function" in str(info.value) and "Fix: declare `outputs=lambda: (y, h)`" in str(info.value)
    good, x = _add_rmsnorm(cc.AddRMSNorm, cc.TTA_ORDER)
    y, h = _program(good.cuda(), x.cuda())(x.cuda())
    torch.testing.assert_close(h, (x.cuda() + good.cuda().residual) + 1)


def test_a_signature_it_cannot_judge_is_named_once_and_settled(monkeypatch):
    """A region that draws random numbers cannot match its kernel: warned, never refused, and
    later calls with that signature copy nothing."""

    class Noisy(torch.nn.Module):
        def __init__(self, plugin):
            super().__init__()
            self.plugin = plugin

        def forward(self, x):
            with tta.lower_as(impl=self.plugin):
                scaled = x * 2 + torch.rand_like(x)
            return scaled

    plugin = tta.custom_plugin(kernel=tta.triton(cc.launch_scale, configs=[{"BLOCK": 64}]), name="first_use_noisy")
    x = torch.randn(6, 40)
    run = _program(Noisy(plugin), x, check_kernels=True)
    copied = []
    original = first_use.copies
    monkeypatch.setattr(first_use, "copies", lambda xs: copied.append(1) or original(xs))
    with pytest.warns(tta.KernelCheckWarning, match="draws random numbers"):
        run(x)
    run(x)
    assert len(copied) == 1


def test_user_names_skip_lines_that_do_not_name_the_value():
    from tta.fx.user_names import _ASSIGNED

    assert _ASSIGNED.match("    scaled = x * 2").group(1) == "scaled"
    assert _ASSIGNED.match("    y: torch.Tensor = f(x)").group(1) == "y"
    for line in ("    x += 1", "    a, b = f(x)", "    self.x = y", "    if a == b:"):
        assert _ASSIGNED.match(line) is None, line
