"""The plugin's output order is the one the user chose: a decorated function's return order, or
``lower_as(..., outputs=...)``; without either, the graph's order. The meta_impl, the launch
function and the report all see that order."""

import inspect

import pytest
import torch

import tta


# `h = x + r` comes first in the graph; the user's order is (y, h). The shapes differ, so a
# meta_impl in the user's order is accepted only if tta uses that order.
def _meta(x, r):
    return x.new_empty(x.shape[0]), x.new_empty(x.shape)


def _body(x, r):
    h = x + r
    y = (h * h).sum(-1)
    return y, h


class Decorated(torch.nn.Module):
    def __init__(self, plugin):
        super().__init__()
        self.plugin = plugin
        self.block = tta.lower_as(plugin)(_body)

    def forward(self, x, r):
        y, h = self.block(x, r)
        return y * 2, h - 1


class Listed(torch.nn.Module):
    def __init__(self, plugin):
        super().__init__()
        self.plugin = plugin

    def forward(self, x, r):
        with tta.lower_as(self.plugin, outputs=lambda: (y, h)):
            h = x + r
            y = (h * h).sum(-1)
        return y * 2, h - 1


class Unlisted(Listed):
    def forward(self, x, r):
        with tta.lower_as(self.plugin):
            h = x + r
            y = (h * h).sum(-1)
        return y * 2, h - 1


def _rewrite(model, strict, decompose):
    x, r = torch.randn(4, 8), torch.randn(4, 8)
    ep = torch.export.export(model, (x, r), strict=strict)
    res = tta.rewrite(ep.run_decompositions() if decompose else ep)
    torch.testing.assert_close(res.program.module()(x, r), model(x, r))
    return res


@pytest.mark.parametrize("form", [Decorated, Listed], ids=["decorator", "outputs="])
@pytest.mark.parametrize("strict", [False, True], ids=["nonstrict", "strict"])
@pytest.mark.parametrize("decompose", [False, True], ids=["aten", "decomposed"])
def test_outputs_come_in_the_users_order(form, strict, decompose):
    plugin = tta.custom_plugin(name=f"user_order_{form.__name__.lower()}", meta_impl=_meta)
    res = _rewrite(form(plugin), strict, decompose)
    (r,) = res.outlined
    assert [p.shape for p in r.outputs] == [(4,), (4, 8)]
    y, h = (p.name for p in r.outputs)
    # The report lists them by name, in that order.
    text = res.report_text
    assert text.index(f"out {y}:") < text.index(f"out {h}:"), text
    # The op returns (y, h): the graph reads y from getitem 0.
    (call,) = [n for n in res.program.graph.nodes if getattr(n.target, "namespace", None) == "tta"]
    firsts = [u for u in call.users if u.args[1] == 0]
    assert [tuple(firsts[0].meta["val"].shape)] == [(4,)]


def test_without_a_choice_outputs_come_in_graph_order():
    plugin = tta.custom_plugin(name="graph_order", meta_impl=lambda x, r: (x.new_empty(x.shape), x.new_empty(x.shape[0])))
    (r,) = _rewrite(Unlisted(plugin), False, True).outlined
    assert [p.shape for p in r.outputs] == [(4, 8), (4,)]


def test_a_meta_impl_in_another_order_than_the_chosen_one_is_refused():
    # The graph's order, while the function returns (y, h).
    plugin = tta.custom_plugin(name="wrong_order", meta_impl=lambda x, r: (x.new_empty(x.shape), x.new_empty(x.shape[0])))
    with pytest.raises(tta.RegionRefusedError, match="another order"):
        _rewrite(Decorated(plugin), False, False)


def test_a_returned_value_that_is_no_output_is_passed_over():
    plugin = tta.custom_plugin(name="passthrough", meta_impl=lambda x: x.new_empty(x.shape))

    @tta.lower_as(plugin)
    def block(x):
        return x, x.exp()  # x is the region's input, not something it computes

    class M(torch.nn.Module):
        def forward(self, x):
            x0, e = block(x)
            return x0 + e

    res = tta.rewrite(torch.export.export(M(), (torch.randn(3),)))
    (r,) = res.outlined
    assert [p.name for p in r.inputs] == ["x"] and len(r.outputs) == 1


def _line_of(cls, text):
    lines, start = inspect.getsourcelines(cls.forward)
    return f"{inspect.getsourcefile(cls)}:{start + next(i for i, line in enumerate(lines) if text in line)}"


class MissingOne(Listed):
    def forward(self, x, r):
        with tta.lower_as(self.plugin, outputs=lambda: y):
            h = x + r
            y = (h * h).sum(-1)
        return y * 2, h - 1


class NamesAnInput(Listed):
    def forward(self, x, r):
        with tta.lower_as(self.plugin, outputs=lambda: (y, h, x)):
            h = x + r
            y = (h * h).sum(-1)
        return y * 2, h - 1


class NamesAnInsideValue(Listed):
    def forward(self, x, r):
        with tta.lower_as(self.plugin, outputs=lambda: (y, h, s)):
            h = x + r
            s = h * h
            y = s.sum(-1)
        return y * 2, h - 1


@pytest.mark.parametrize(
    "model, why",
    [
        (MissingOne, r"`add` is used after the region, but lower_as\(outputs=...\) does not list it"),
        (NamesAnInput, r"lists `x` \(position 2\), which the region does not compute"),
        (NamesAnInsideValue, r"lists `mul` \(position 2\), which the region computes but nothing after it uses"),
    ],
)
def test_outputs_that_are_not_the_regions_outputs_are_refused_at_the_with_line(model, why):
    plugin = tta.custom_plugin(name=f"bad_{model.__name__.lower()}")
    ep = torch.export.export(model(plugin), (torch.randn(4, 8), torch.randn(4, 8)))
    with pytest.raises(tta.RegionRefusedError, match=why) as err:
        tta.rewrite(ep)
    assert _line_of(model, "tta.lower_as(") in str(err.value)


def test_outputs_must_be_a_function_of_the_block():
    plugin = tta.custom_plugin(name="eager_outputs")
    with pytest.raises(tta.AnnotationError, match=r"outputs=lambda: \(y, h\)"):
        tta.lower_as(plugin, outputs=(torch.zeros(1),))

    class ReturnsInt(Listed):
        def forward(self, x, r):
            with tta.lower_as(self.plugin, outputs=lambda: (h, 3)):
                h = x + r
            return h

    with pytest.raises(tta.AnnotationError, match="output 1 is int"):
        torch.export.export(ReturnsInt(plugin), (torch.randn(2), torch.randn(2)))


@pytest.mark.torch_independent
def test_the_decorator_takes_no_outputs_list():
    plugin = tta.custom_plugin(name="decorated_outputs")
    with pytest.raises(tta.AnnotationError, match="return order"):
        tta.lower_as(plugin, outputs=lambda: ())(_body)
