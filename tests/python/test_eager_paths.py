"""Which path a tta op took when it ran eagerly is observable, and a fallback on CUDA warns."""

import warnings

import pytest
import torch

import tta
from tta.examples.kernels import add_relu
from tta.runtime import eager, eager_stats, ops

fused = tta.custom_plugin(
    kernel=tta.triton(add_relu.launch_add_relu, configs=[{"BLOCK": 1024}]),
    meta_impl=lambda x, y: x.new_empty(x.shape),
    name="eager_paths_add_relu",
)


class AddRelu(torch.nn.Module):
    def forward(self, x, y):
        with tta.lower_as(fused):
            return torch.relu(x + y)


def _op():
    x = torch.randn(4, 8)
    res = tta.rewrite(torch.export.export(AddRelu(), (x, x.clone())))
    return res, res.outlined[0].op


def test_cpu_inputs_run_the_region_body_and_say_so():
    eager_stats.reset()
    res, op = _op()
    x, y = torch.randn(4, 8), torch.randn(4, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("error", tta.EagerFallbackWarning)
        for _ in range(2):
            torch.testing.assert_close(res.program.module()(x, y), torch.relu(x + y))
    assert tta.eager_paths()[op] == {"region body: the inputs are on cpu, the kernels run on CUDA": 2}


def test_fallback_on_cuda_inputs_warns_once_with_the_cause(monkeypatch):
    eager_stats.reset()
    _, op = _op()
    monkeypatch.setattr(eager, "installed", lambda backend: False)
    run = ops._make_eager(op, fused, ops.body_of(op), ops.signature_of(op)[:2], eager.run)
    with torch._subclasses.FakeTensorMode():
        x = torch.empty(4, 8, device="cuda")
        with pytest.warns(tta.EagerFallbackWarning, match=r"no kernel DSL of the plugin is installed \(triton\)") as caught:
            run(x, x)
            run(x, x)
    assert len([w for w in caught if w.category is tta.EagerFallbackWarning]) == 1
    assert tta.eager_paths()[op] == {"region body: no kernel DSL of the plugin is installed (triton)": 2}
