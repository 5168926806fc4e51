"""A region's source line is a line of model code: never a tracer's generated frame, also for
the model code that ships inside the package (examples, the GPU end-to-end models)."""

import torch

import tta
from tta.tools.gpu import models


def test_package_models_report_their_own_line():
    case = models.by_name("residual", "test")
    model, x = case.model(torch.float32, "cpu"), case.inputs(2, torch.float32, "cpu")
    res = tta.rewrite(torch.export.export(model, tuple(x)))
    (region,) = res.regions
    path, line = region.source.rsplit(":", 1)
    assert path == models.__file__
    assert "tta.lower_as" in open(path).read().splitlines()[int(line) - 1]


def test_generated_frames_are_never_the_source():
    plugin = tta.custom_plugin(meta_impl=lambda x: x.new_empty(x.shape), name="gen_frames")
    ns: dict = {"torch": torch, "tta": tta, "plugin": plugin}
    exec("def body(x):\n    with tta.lower_as(impl=plugin):\n        return torch.relu(x + 1)\n", ns)

    class M(torch.nn.Module):
        def forward(self, x):
            return ns["body"](x)  # the line reported: the nearest frame with a real file

    res = tta.rewrite(torch.export.export(M(), (torch.randn(3, 4),)))
    (region,) = res.regions
    assert not region.source.startswith("<"), region.source
    assert region.source.startswith(__file__)
