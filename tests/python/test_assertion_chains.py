"""Export's runtime checks of a value computed inside a region (``sym_size``/``item`` ->
``le`` -> ``_assert_scalar``, and on older torch ``ge`` and ``sym_constrain_range_for_size``)
go into the region with it, so a region selected by pattern is not split by them. No check is
lost: the rewritten program still raises where the exported one does, and a check that cannot
move (it also reads a value the region does not take) refuses the region, naming it."""

import warnings

import pytest
import torch

import tta

CHECKS = {
    torch.ops.aten._assert_scalar.default,
    torch.ops.aten.sym_constrain_range_for_size.default,
    torch.ops.aten._assert_async.msg,
    torch.ops.aten.sym_constrain_range.default,
}


def scale_by_count(x):
    # The pattern: no checks of its own.
    return x * (x > 0).sum().item()


class CheckedCount(torch.nn.Module):
    def forward(self, x):
        n = (x > 0).sum().item()
        torch._check(n <= 20)
        return x * n + 1


class CountBoundBySize(torch.nn.Module):
    def forward(self, x, y):
        n = (x > 0).sum().item()
        torch._check(n <= y.shape[0] * 3)
        return x * n + y.sum()


def select(ep, example=(torch.randn(2, 4),)):
    sel = tta.lower_pattern(scale_by_count, tta.custom_plugin(name="scale_by_count"), example)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sel.apply(ep, on_refused="keep")


def raised(fn, *args):
    with pytest.raises(RuntimeError) as e:
        fn(*args)
    return str(e.value)


@pytest.mark.parametrize("strict", [False, True], ids=["nonstrict", "strict"])
@pytest.mark.parametrize("decompose", [False, True], ids=["exported", "decomposed"])
def test_checks_of_a_count_inside_the_pattern_join_it(strict, decompose):
    x = torch.randn(4, 8)
    ep = torch.export.export(CheckedCount(), (x,), strict=strict)
    ep = ep.run_decompositions() if decompose else ep
    checks = [n.name for n in ep.graph.nodes if n.target in CHECKS]
    assert checks, ep.graph  # the model does produce a chain ending in a check
    res = select(ep)
    (region,) = res.outlined
    assert not res.refused, str(res)
    # Every check is still there: in the region's body (which the op runs eagerly) or outside.
    kept = {n.name for n in res.program.graph.nodes}
    assert all(c in region.nodes or c in kept for c in checks), (checks, region.nodes)
    good = torch.cat([torch.ones(2, 8), -torch.ones(2, 8)])  # 16 positive: within the check
    torch.testing.assert_close(res.program.module()(good), CheckedCount()(good))
    bad = torch.ones(4, 8)  # 32 positive
    assert raised(res.program.module(), bad) == raised(ep.module(), bad)


class Nonzero(torch.nn.Module):
    def forward(self, x):
        return torch.nonzero(x).view(-1, 2) * 2


def test_checks_of_a_data_dependent_size_join_the_pattern():
    # `sym_size(nonzero) -> ge/le -> _assert_scalar`: the count's checks read the occurrence only.
    dims = ({0: torch.export.Dim("a", min=2, max=64), 1: torch.export.Dim("b", min=2, max=64)},)
    ep = torch.export.export(Nonzero(), (torch.randn(3, 5),), dynamic_shapes=dims).run_decompositions()
    sel = tta.lower_pattern(Nonzero(), tta.custom_plugin(name="nonzero_pairs"), (torch.randn(2, 4),))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = sel.apply(ep, on_refused="keep")
    (region,) = res.outlined
    checks = [n.name for n in ep.graph.nodes if n.target in CHECKS]
    sizes = [n.name for n in ep.graph.nodes if n.target == torch.ops.aten.sym_size.int and n.args[0].name == "nonzero"]
    assert checks and sizes and set(checks + sizes) <= set(region.nodes), (checks, sizes, region.nodes)
    for x in (torch.randn(3, 5), torch.randn(7, 9)):
        assert torch.equal(res.program.module()(x), Nonzero()(x))


def test_a_check_against_a_value_the_pattern_does_not_take_refuses_it():
    x, y = torch.randn(4, 8), torch.randn(6)
    ep = torch.export.export(CountBoundBySize(), (x, y), dynamic_shapes=({}, {0: torch.export.Dim("m", max=64)}))
    res = select(ep)
    (region,) = res.refused
    assert "is read by the runtime check `_assert_scalar" in region.reason, region.reason
    assert "reads `y` from outside the region" in region.reason and "test_assertion_chains.py:" in region.reason, region.reason
    # Refused: the program is the exported one, and checks as it does.
    assert [n.target for n in res.program.graph.nodes] == [n.target for n in ep.graph.nodes]
    bad = (torch.ones(4, 8), torch.randn(5))  # 32 positive > 3 * 5
    assert raised(res.program.module(), *bad) == raised(ep.module(), *bad)
