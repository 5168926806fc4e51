"""A region the user marked and tta cannot lower is an error by default, never a quiet fallback."""

import re
import warnings

import models
import pytest
import torch

import tta


def _inplace_program():
    return torch.export.export(models.build("inplace"), models.example_inputs("inplace"))


def test_refusal_raises_one_error_listing_each_region_with_reason_and_line():
    ep = torch.export.export(models.build("nested"), models.example_inputs("nested"), strict=True)
    with pytest.raises(tta.RegionRefusedError) as err:
        tta.rewrite(ep)
    msg = str(err.value)
    assert len(err.value.regions) == 2 and "refused 2 of 2" in msg, msg
    assert msg.count("may not nest or overlap") == 2, msg
    assert re.search(r"models\.py:\d+", msg), msg
    assert isinstance(err.value, tta.TTAError)
    assert err.value.result.refused == err.value.regions


def test_on_refused_warn_and_keep_return_the_program():
    with pytest.warns(tta.RegionRefusedWarning, match="writes its input in place"):
        res = tta.rewrite(_inplace_program(), on_refused="warn")
    assert len(res.refused) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", tta.RegionRefusedWarning)
        res = tta.rewrite(_inplace_program(), on_refused="keep")
    x = models.example_inputs("inplace")[0]
    torch.testing.assert_close(res.program.module()(x), models.build("inplace")(x))


def test_on_refused_rejects_unknown_choices():
    with pytest.raises(ValueError, match="on_refused"):
        tta.rewrite(_inplace_program(), on_refused="ignore")


def test_selectors_raise_too():
    impl = tta.custom_plugin(name="scale_sel")
    with pytest.raises(tta.RegionRefusedError, match="may not nest or overlap"):
        tta.lower_modules(_inplace_program(), {models.InPlace: impl})


def test_sequential_whose_argument_is_named_input():
    relu_p = tta.custom_plugin(name="relu_plus_one", meta_impl=lambda x: x.new_empty(x.shape))

    class ReluPlusOne(torch.nn.Module):
        def forward(self, x):
            with tta.lower_as(relu_p):
                return torch.relu(x) + 1

    model = torch.nn.Sequential(torch.nn.Linear(4, 4), ReluPlusOne())
    x = torch.randn(2, 4)
    ep = torch.export.export(model, (x,)).run_decompositions()
    assert [s.arg.name for s in ep.graph_signature.input_specs][-1] == "input"
    res = tta.rewrite(ep)
    assert len(res.outlined) == 1
    torch.testing.assert_close(res.program.module()(x), model(x))


@pytest.mark.parametrize("strict", [False, True], ids=["nonstrict", "strict"])
@pytest.mark.parametrize("decompose", [False, True], ids=["exported", "decomposed"])
def test_assertions_export_inserts_never_split_a_region(strict, decompose):
    # The float round trip makes export (on some torch versions) check the dtype of a value
    # inside the region with an untagged node.
    rms = tta.custom_plugin(name="rms_roundtrip", meta_impl=lambda x, w: x.new_empty(x.shape))

    class RMSNorm(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.rand(8, dtype=torch.bfloat16) + 0.5)

        def forward(self, x):
            with tta.lower_as(rms):
                return (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * self.w

    model, x = RMSNorm(), torch.randn(3, 8, dtype=torch.bfloat16)
    ep = torch.export.export(model, (x,), strict=strict)
    ep = ep.run_decompositions() if decompose else ep
    inside_checks = [  # untagged checks of the float32 value inside the region
        n
        for n in ep.graph.nodes
        if n.target == torch.ops.aten._assert_tensor_metadata.default
        and n.args[0].meta["val"].dtype == torch.float32
        and not any(k.startswith("tta_region:") for k in n.meta.get("custom", {}))
    ]
    res = tta.rewrite(ep)
    (r,) = res.outlined
    assert r.absorbed == [n.name for n in inside_checks]
    if inside_checks:
        assert "absorbed" in res.report_text
    torch.testing.assert_close(res.program.module()(x), model(x))
