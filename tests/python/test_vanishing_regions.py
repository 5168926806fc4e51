"""Regions that leave nothing in the graph the pass outlines are reported, not silently lost."""

import pytest
import torch

import tta

noop = tta.custom_plugin(name="noop_region")


@pytest.mark.parametrize("strict", [False, True], ids=["nonstrict", "strict"])
def test_empty_with_block_is_refused_with_its_line(strict):
    class M(torch.nn.Module):
        def forward(self, x):
            with tta.lower_as(noop):
                pass
            return x + 1

    ep = torch.export.export(M(), (torch.randn(3),), strict=strict).run_decompositions()
    res = tta.rewrite(ep, on_refused="keep")
    (r,) = res.regions
    assert r.status == "refused" and "contains no operations" in r.reason
    assert r.source and r.source.startswith(__file__), r.source
    assert not [n for n in res.program.graph.nodes if "tta_marker" in str(n.target)]


@pytest.mark.parametrize("strict", [False, True], ids=["nonstrict", "strict"])
def test_region_inside_a_cond_branch_is_refused(strict):
    class M(torch.nn.Module):
        def forward(self, x):
            def true_fn(x):
                with tta.lower_as(noop):
                    return torch.relu(x) + 1

            return torch.cond(x.sum() > 0, true_fn, lambda x: x - 1, (x,))

    x = torch.randn(4)
    ep = torch.export.export(M(), (x,), strict=strict)
    with pytest.raises(tta.RegionRefusedError, match="torch.cond branch") as err:
        tta.rewrite(ep)
    (r,) = err.value.regions
    assert r.source and r.source.startswith(__file__), r.source
    res = err.value.result
    torch.testing.assert_close(res.program.module()(x), M()(x))
