"""Bad input through the public Python API: every error path gives its exact message, and names
the user's source line where there is one. (The command line: test_bad_input_cli.py.)"""

import inspect
import re

import pytest
import torch
from torch import nn

import tta

HERE = __file__


def line_of(fn, text: str) -> str:
    """``this_file:N`` of the first line of ``fn`` containing ``text``."""
    lines, start = inspect.getsourcelines(fn)
    k = next(i for i, line in enumerate(lines) if text in line)
    return f"{HERE}:{start + k}"


def plugin(name="p", **kw):
    return tta.custom_plugin(name=name, **kw)


# -- lower_as ---------------------------------------------------------------------------------


@pytest.mark.torch_independent
def test_lower_as_takes_a_plugin():
    with pytest.raises(tta.PluginError, match=r"^lower_as\(impl=\.\.\.\) takes a tta\.custom_plugin\(\.\.\.\), got str$"):
        tta.lower_as("rmsnorm")
    with pytest.raises(tta.PluginError, match=r"^lower_as\(name=\.\.\.\) is a string that labels the region, got int$"):
        tta.lower_as(plugin(), name=3)


@pytest.mark.torch_independent
def test_lower_as_decorates_functions_only():
    with pytest.raises(tta.AnnotationError, match=r"^@tta\.lower_as\(\.\.\.\) decorates a function, got int$"):
        tta.lower_as(plugin())(3)


def test_one_lower_as_object_entered_inside_itself_is_nesting():
    region = tta.lower_as(plugin("again"))
    with region:
        with pytest.raises(
            tta.AnnotationError, match=r"^tta\.lower_as regions cannot nest: the region at .* is inside the region again:\d+ opened at "
        ):
            with region:
                pass
    with region:  # entered again after the first closed: a new region
        pass


def test_nested_lower_as_names_both_lines():
    a, b = plugin("outer"), plugin("inner")

    class Nested(nn.Module):
        def forward(self, x):
            with tta.lower_as(a):
                with tta.lower_as(b):
                    return x + 1

    with pytest.raises(tta.AnnotationError) as err:
        torch.export.export(Nested(), (torch.randn(4),), strict=False)
    outer, inner = line_of(Nested.forward, "lower_as(a)"), line_of(Nested.forward, "lower_as(b)")
    assert re.search(
        rf"^tta\.lower_as regions cannot nest: the region at {re.escape(inner)} is inside the region "
        rf"outer:\d+ opened at {re.escape(outer)}; close the outer one first or merge them$",
        str(err.value),
    ), str(err.value)


def test_nested_lower_as_under_strict_export_names_both_lines():
    a, b = plugin("outer"), plugin("inner")

    class Nested(nn.Module):
        def forward(self, x):
            with tta.lower_as(a):
                with tta.lower_as(b):
                    y = x * 2
                z = y - 1
            return z

    res = tta.rewrite(torch.export.export(Nested(), (torch.randn(4),), strict=True), on_refused="keep")
    inner, outer = sorted(res.refused, key=lambda r: r.id)
    # Strict export records no `with` line in the tags; each region's marker node carries its own.
    assert outer.source == line_of(Nested.forward, "lower_as(a)") and inner.source == line_of(Nested.forward, "lower_as(b)")
    assert re.fullmatch(
        rf"it overlaps region inner:\d+ \({re.escape(inner.source)}\) \(shared node `mul`\); "
        r"regions may not nest or overlap",
        outer.reason,
    ), outer.reason


def test_decorated_forward_is_located_at_its_decorator():
    impl = plugin("deco")

    class Decorated(nn.Module):
        @tta.lower_as(impl)
        def forward(self, x):
            return x.relu() + 1

    want = f"{HERE}:{inspect.getsourcelines(Decorated.forward)[1]}"
    for strict in (False, True):
        res = tta.rewrite(torch.export.export(Decorated(), (torch.randn(4),), strict=strict))
        assert [r.source for r in res.outlined] == [want], (strict, str(res))
        assert "torch/nn/modules/module.py" not in str(res)


# -- custom_plugin and kernel specs -------------------------------------------------------------


def launch(x, out, *, BLOCK=128):
    pass


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: tta.custom_plugin(), r"^custom_plugin needs a name=, a meta_impl or a kernel to name it after$"),
        (
            lambda: tta.custom_plugin(name="k", kernel=[]),
            r"^custom_plugin\('k'\): kernel=\[\] is empty; give at least one kernel spec or leave it out$",
        ),
        (
            lambda: tta.custom_plugin(name="k", kernel=[launch]),
            r"^custom_plugin\('k'\): <function launch at 0x[0-9a-f]+> is not a kernel spec; use tta\.triton/tta\.cutile/tta\.cutedsl$",
        ),
        (lambda: tta.custom_plugin(name="k", meta_impl=3), r"^custom_plugin\('k'\): meta_impl must be callable, got int$"),
        (lambda: tta.triton(3), r"^tta\.triton\(3\): launch_fn must be callable$"),
        (lambda: tta.triton(launch, configs=[]), r"^tta\.triton\(launch\): configs is empty; give at least one \(use \[\{\}\] for none\)$"),
        (lambda: tta.triton(launch, configs=[3]), r"^tta\.triton\(launch\): each config must be a dict of compile-time values, got int$"),
        (
            lambda: tta.triton(launch, configs=[{"BLOCK": [1]}]),
            r"^tta\.triton\(launch\): config BLOCK=\[1\] is not a compile-time value \(bool, int, float or str\)$",
        ),
        (lambda: tta.triton(launch, configs=[{"BLOCK": 1}, {"BLOCK": 1}]), r"^tta\.triton\(launch\): duplicate config \{'BLOCK': 1\}$"),
        (
            lambda: tta.triton(launch, configs=[{"WARPS": 4}]),
            r"^tta\.triton\(launch\): config key 'WARPS' is not a parameter of the launch function \(it takes \['BLOCK', 'out', 'x'\]\)$",
        ),
        (
            lambda: tta.triton(launch, configs=[{"not ok": 4}]),
            r"^tta\.triton\(launch\): config key 'not ok' is not a keyword argument name$",
        ),
    ],
)
@pytest.mark.torch_independent
def test_plugin_and_spec_validation(call, message):
    with pytest.raises(tta.PluginError, match=message):
        call()


# -- rewrite, save_graph and find_regions on the wrong things -----------------------------------


@pytest.mark.parametrize(
    "call, what",
    [
        (lambda: tta.rewrite(nn.ReLU()), "tta.rewrite takes an ExportedProgram or a GraphModule, got ReLU"),
        (lambda: tta.rewrite("model.pt2"), "tta.rewrite takes an ExportedProgram or a GraphModule, got str"),
        (
            lambda: tta.save_graph(nn.ReLU(), "/tmp/never-written.json"),
            "tta.save_graph takes an ExportedProgram or a GraphModule, got ReLU",
        ),
        (lambda: tta.find_regions(nn.ReLU()), "tta.find_regions takes an ExportedProgram or a GraphModule, got ReLU"),
    ],
)
@pytest.mark.torch_independent
def test_entry_points_name_what_they_take(call, what):
    with pytest.raises(TypeError, match=f"^{re.escape(what)}$"):
        call()


class AddRelu(nn.Module):
    def forward(self, a, b):
        return torch.relu(a + b)


def small_program():
    return torch.export.export(AddRelu(), (torch.randn(4), torch.randn(4))).run_decompositions()


# -- selectors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, error, message",
    [
        (
            lambda: tta.lower_pattern(lambda a: a, "impl", (torch.randn(2),)),
            tta.PluginError,
            r"^lower_pattern: the impl must be a tta\.custom_plugin\(\.\.\.\), got str$",
        ),
        (
            lambda: tta.lower_pattern(3, plugin(), (torch.randn(2),)),
            TypeError,
            r"^lower_pattern takes a function or an nn\.Module as the pattern, got int$",
        ),
        (
            lambda: tta.lower_pattern(lambda a: a, plugin(), torch.randn(2)),
            TypeError,
            r"^lower_pattern\(example_inputs=\.\.\.\) is a tuple of the pattern's arguments, got Tensor$",
        ),
        (
            lambda: tta.lower_pattern(lambda a: a, plugin(), (torch.randn(2),), decompose="yes"),
            TypeError,
            r"^lower_pattern\(decompose=\.\.\.\) is True, False or None \(match the target\), got 'yes'$",
        ),
        (
            lambda: (lambda x: tta.lower_pattern(lambda a, b: a + b, plugin(), (x, x)))(torch.randn(2)),
            TypeError,
            r"^lower_pattern: example inputs 0 and 1 are the same tensor; pass distinct tensors \(e\.g\. x\.clone\(\)\)$",
        ),
        (
            lambda: tta.lower_modules(small_program(), {3: plugin()}),
            TypeError,
            r"^lower_modules keys are nn\.Module classes or dotted path prefixes, got 3$",
        ),
        (
            lambda: tta.lower_modules(small_program(), {nn.ReLU: "impl"}),
            tta.PluginError,
            r"^lower_modules\(<class 'torch\.nn\.modules\.activation\.ReLU'>: \.\.\.\): the impl must be a tta\.custom_plugin\(\.\.\.\), got str$",
        ),
        (
            lambda: tta.lower_modules(AddRelu(), {nn.ReLU: plugin()}),
            TypeError,
            r"^lower_modules\(model, \.\.\.\) exports the model first and needs example_inputs=\(\.\.\.\); or pass the ExportedProgram from torch\.export\.export$",
        ),
        (
            lambda: tta.rewrite(small_program(), selectors=[3]),
            TypeError,
            r"^selectors are tta\.lower_pattern\(\.\.\.\) results or \{module type or path: impl\} mappings, got int$",
        ),
        (
            lambda: tta.lower_pattern(lambda a, b: (a.relu(), b), plugin(), (torch.randn(4), torch.randn(4)), name="ident").apply(
                small_program()
            ),
            tta.GraphError,
            r"^pattern `ident`: it returns `b`, which is not computed by the pattern$",
        ),
    ],
)
def test_selector_misuse(call, error, message):
    with pytest.raises(error, match=message):
        call()


# -- meta_impl failures -------------------------------------------------------------------------


def meta_returns_int(a, b):
    return 3


def meta_raises(a, b):
    raise ValueError("no such shape")


def meta_two_outputs(a, b):
    return a.new_empty(a.shape), a.new_empty(a.shape)


@pytest.mark.parametrize(
    "meta, reason",
    [
        (
            meta_returns_int,
            rf"meta_impl of `m` failed on the region's inputs: meta_impl \({re.escape(HERE)}:\d+\) returned a int; "
            r"it must return a tensor, or a tuple of tensors, shaped like the region's outputs \(e\.g\. x\.new_empty\(x\.shape\)\)",
        ),
        (meta_raises, r"meta_impl of `m` failed on the region's inputs: ValueError: no such shape"),
        (meta_two_outputs, r"meta_impl of `m` returns 2 output\(s\) but the region produces 1: `relu`"),
    ],
)
def test_meta_impl_failures_are_the_refusal_reason(meta, reason):
    impl = tta.custom_plugin(name="m", meta_impl=meta)

    class Marked(nn.Module):
        def forward(self, a, b):
            with tta.lower_as(impl):
                return torch.relu(a + b)

    res = tta.rewrite(torch.export.export(Marked(), (torch.randn(4), torch.randn(4))), on_refused="keep")
    (r,) = res.refused
    assert re.fullmatch(reason, r.reason), r.reason
    assert r.source == line_of(Marked.forward, "lower_as(impl)")


# -- compile_kernels on regions a kernel cannot take --------------------------------------------


def test_compile_kernels_refuses_integer_inputs():
    pytest.importorskip("triton")

    def launch_any(x, n, out, *, BLOCK=128):
        pass

    impl = tta.custom_plugin(name="k", kernel=tta.triton(launch_any), meta_impl=lambda x, n: x.new_empty(x.shape))

    class Sized(nn.Module):
        def forward(self, x, y):
            n = y.shape[0]  # a size of another input: an integer the region reads
            with tta.lower_as(impl):
                return x * n

    dims = ({0: torch.export.Dim("a")}, {0: torch.export.Dim("b")})
    res = tta.rewrite(torch.export.export(Sized(), (torch.randn(4), torch.randn(3)), dynamic_shapes=dims))
    assert len(res.outlined) == 1, str(res)
    with pytest.raises(tta.PluginError, match=r"^k_[0-9a-f]{12}: a kernel plugin takes tensors only; region k:\d+ also reads integers$"):
        res.compile_kernels()


# -- report text --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, message",
    [
        ("s0 *", 'shape expression "s0 *": the expression ends where a value should follow'),
        ("s0 ** 2 2", 'shape expression "s0 ** 2 2": unexpected `2` after a complete expression'),
        ("s0 $ 1", 'shape expression "s0 $ 1": unexpected character `$`'),
    ],
)
@pytest.mark.torch_independent
def test_shape_expression_errors_quote_the_text_not_rust(text, message):
    from tta import _core

    with pytest.raises(_core.CoreError) as err:
        _core.canonical_expr(text)
    assert err.value.args[1] == message
    assert "Some(" not in message and "Op(" not in message


class LinearRelu(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin, self.act = nn.Linear(4, 4), nn.ReLU()

    def forward(self, x):
        return self.act(self.lin(x))


def test_a_region_chosen_by_path_names_the_path_once():
    ep = torch.export.export(LinearRelu(), (torch.randn(2, 4),)).run_decompositions()
    res = tta.lower_modules(ep, {"act": plugin("by_path")})
    assert "region module:act [module act] impl=" in res.report_text, res.report_text
