"""Shapes as export proved them, in ``compile_kernels`` and the guards tta records:

* dims export unified (two inputs of one dynamic batch) are one symbol, so the launch code's
  ``assert x.shape == y.shape`` holds;
* every guard can be evaluated for other sizes and over a profile, bitwise functions and
  ``triton.next_power_of_2`` of a symbolic size included (sympy cannot decide them);
* a constexpr computed from shapes that is one value over the ranges export proved
  (``(2*n - 1) // n`` for ``n >= 2``) is compiled in, with those ranges as its guards.
"""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl

import tta
from tta.aot import guards as tta_guards
from tta.aot.base import guards_hold
from tta.aot.compile import compile_plugin, region_input_types
from tta.aot.session import Session, TensorType
from tta.common.bridge import Port
from tta.errors import PluginError


@triton.jit
def add_kernel(x_ptr, y_ptr, o_ptr, n, ONE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o_ptr + offs, (tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m)) * ONE, mask=m)


def launch_checked(x, y, out, *, BLOCK: int = 256):
    assert x.shape == y.shape  # what library launch code checks
    assert triton.next_power_of_2(x.shape[1]) <= BLOCK  # a guard made of bitwise functions
    add_kernel[(triton.cdiv(x.numel(), BLOCK),)](x, y, out, x.numel(), 1, BLOCK=BLOCK)


def launch_one(x, y, out, *, BLOCK: int = 256):
    n = x.shape[0]
    add_kernel[(triton.cdiv(x.numel(), BLOCK),)](x, y, out, x.numel(), (2 * n - 1) // n, BLOCK=BLOCK)


def launch_half(x, y, out, *, BLOCK: int = 256):
    add_kernel[(triton.cdiv(x.numel(), BLOCK),)](x, y, out, x.numel(), x.shape[0] // 2, BLOCK=BLOCK)


def _same(x, y):
    return x.new_empty(x.shape)


CHECKED = tta.custom_plugin(
    kernel=tta.triton(launch_checked, configs=[{"BLOCK": 128}, {"BLOCK": 256}]), meta_impl=_same, name="shapes_proved_checked"
)
ONE = tta.custom_plugin(kernel=tta.triton(launch_one, configs=[{"BLOCK": 256}]), meta_impl=_same, name="shapes_proved_one")
HALF = tta.custom_plugin(kernel=tta.triton(launch_half, configs=[{"BLOCK": 256}]), meta_impl=_same, name="shapes_proved_half")


def _block(plugin):
    class Block(torch.nn.Module):
        def forward(self, x, y):
            with tta.lower_as(impl=plugin):
                return x + y

    return Block()


def _rewritten(plugin, cols: int | None = 64, min_batch: int = 2):
    batch = torch.export.Dim("batch", min=min_batch, max=64)
    dims = {0: batch} if cols is not None else {0: batch, 1: torch.export.Dim("cols", min=1, max=256)}
    x = torch.randn(4, cols or 48)
    ep = torch.export.export(_block(plugin), (x, torch.randn_like(x)), dynamic_shapes=(dims, dims))
    return tta.rewrite(ep)


@pytest.mark.kernels
def test_dims_export_unified_are_one_symbol():
    result = _rewritten(CHECKED, cols=None)
    kernels = next(iter(result.compile_kernels(cache=False).values()))
    assert len(kernels) == 2
    for k in kernels:
        # Both inputs' dims are input 0's: the extras and grid name no symbol of input 1.
        assert all("i1_" not in e for e in (*k.extras, *k.grid)), (k.extras, k.grid)
        assert k.output_shapes == (("i0_0", "i0_1"),)


def test_region_input_types_share_symbols_and_carry_ranges():
    ports = [Port("x", "tensor", "float16", ("s0", 64)), Port("y", "tensor", "float16", ("s0", "2*s0", "s1"))]
    types = region_input_types(ports, {"s0": (2, 64), "s1": (1, None)})
    assert [t.shape for t in types] == [(None, 64), ("i0_0", "2*i0_0", None)]
    assert types[0].ranges == ((2, 64), None) and types[1].ranges == (None, None, (1, None))
    s = Session(types)
    assert s.inputs[0].shape[0] is s.inputs[1].shape[0] or s.inputs[0].shape[0] == s.inputs[1].shape[0]
    assert s.ranges == {"i0_0": (2, 64), "i1_2": (1, None)}


def _recorded_guards() -> list[str]:
    s = Session([TensorType.dynamic("float32", 2)])
    n = s.inputs[0].shape[1]  # hint 89
    s.mark()
    with s.mode:
        assert triton.next_power_of_2(n) <= 128
        assert (n & 15) == 9
        assert (n ^ 5) != 7
        assert (n >> 4) > 2
    return s.guards()


def test_every_recorded_guard_evaluates_for_other_sizes():
    gs = _recorded_guards()
    assert any("BitwiseFn_bitwise_or" in g for g in gs) and any("BitwiseFn_bitwise_and" in g for g in gs)
    for n in (1, 7, 25, 48, 89, 128, 129, 1000):
        expected = [triton.next_power_of_2(n) <= 128, (n & 15) == 9, (n ^ 5) != 7, (n >> 4) > 2]
        for g in gs:
            got = guards_hold([g], {"i0_1": n})
            assert isinstance(got, bool)
        assert guards_hold(gs, {"i0_1": n}) == all(expected), n


def test_guards_over_a_profile():
    from tta.trt.tactics import guard_over

    npow2 = next(g for g in _recorded_guards() if "BitwiseFn_bitwise_or" in g)
    # next_power_of_2 is non-decreasing: decided at the corners, also over a range too large to walk.
    assert tta_guards.parse(npow2).monotone
    assert guard_over(npow2, {"i0_1": (1, 128)}) == (True, None)
    ok, witness = guard_over(npow2, {"i0_1": (1, 10_000)})
    assert not ok and witness == {"i0_1": 10_000}
    bitand = "Eq(BitwiseFn_bitwise_and(i0_1, 15), 0)"
    assert not tta_guards.parse(bitand).monotone
    assert guard_over(bitand, {"i0_1": (16, 16)}) == (True, None)
    ok, witness = guard_over(bitand, {"i0_1": (16, 40)})
    assert not ok and witness == {"i0_1": 17}
    assert guard_over(bitand, {"i0_1": (16, 1 << 20)}) == (False, None)  # too many points to walk: not proven
    assert guard_over("Ne(i0_1, 7)", {"i0_1": (1, 100)}) == (False, {"i0_1": 7})  # not decided at the corners


@pytest.mark.torch_independent
def test_a_guard_outside_the_grammar_is_a_tta_error():
    with pytest.raises(tta_guards.GuardError, match="cannot evaluate"):
        tta_guards.parse("Piecewise((i0_1, i0_1 > 2), (1, True)) > 0")
    with pytest.raises(tta_guards.GuardError):
        tta_guards.parse("__import__('os').system('true')")


@pytest.mark.kernels
def test_a_constexpr_constant_over_the_export_ranges_is_compiled_in():
    kernels = next(iter(_rewritten(ONE).compile_kernels(cache=False).values()))
    (k,) = kernels
    assert k.meta["constexprs"]["ONE"] == 1
    # The kernel holds only where that was proven: the ranges are its guards.
    assert k.meta["guards"] == ["i0_0 >= 2", "i0_0 <= 64"]
    assert guards_hold(k.meta["guards"], {"i0_0": 64, "i0_1": 64}) and not guards_hold(k.meta["guards"], {"i0_0": 65, "i0_1": 64})


@pytest.mark.kernels
def test_a_constexpr_that_varies_or_has_no_range_is_still_refused():
    with pytest.raises(PluginError, match=r"'ONE' gets FloorDiv\(i0_0, 2\), which depends on input shapes \(it is not one value"):
        _rewritten(HALF).compile_kernels(cache=False)
    # Without ranges (n may be 0) the quotient is not proven.
    with pytest.raises(PluginError, match="which depends on input shapes"):
        compile_plugin(ONE, [TensorType.dynamic("float32", 2)] * 2, cache=False)


@pytest.mark.kernels
def test_next_power_of_2_guards_reach_the_compiled_kernels():
    kernels = next(iter(_rewritten(CHECKED, cols=None).compile_kernels(cache=False).values()))
    for k, block in zip(kernels, (128, 256)):
        g = [x for x in k.meta["guards"] if "BitwiseFn_bitwise_or" in x]
        assert g, k.meta["guards"]
        assert guards_hold(k.meta["guards"], {"i0_0": 3, "i0_1": block}) and not guards_hold(
            k.meta["guards"], {"i0_0": 3, "i0_1": block + 1}
        )
