"""Kernel spec and plugin descriptor validation: each error names what is wrong."""

import pytest

import tta
from tta.examples.kernels import add_relu


def launch(x, y, out, *, BLOCK=128):
    pass


@pytest.mark.torch_independent
def test_specs_are_frozen_hashable_and_keyed_stably():
    a = tta.triton(launch, configs=[{"BLOCK": 128}, {"BLOCK": 256}])
    b = tta.triton(launch, configs=[{"BLOCK": 128}, {"BLOCK": 256}])
    assert a == b and hash(a) == hash(b) and a.cache_key == b.cache_key
    assert a.cache_key != tta.triton(launch, configs=[{"BLOCK": 64}]).cache_key
    with pytest.raises(Exception):
        a.configs = ()  # frozen


@pytest.mark.parametrize(
    "configs, needle",
    [
        ([{"BLOCK": 128}, {"BLOCK": 128}], "duplicate config {'BLOCK': 128}"),
        ([], "configs is empty"),
        ([{"BLOCK": [1, 2]}], "BLOCK=[1, 2] is not a compile-time value"),
        (["BLOCK"], "must be a dict"),
        ([{"TILE": 64}], "config key 'TILE' is not a parameter of the launch function"),
    ],
)
@pytest.mark.torch_independent
def test_bad_configs_are_named(configs, needle):
    with pytest.raises(tta.PluginError) as err:
        tta.triton(launch, configs=configs)
    assert needle in str(err.value) and "launch" in str(err.value)


@pytest.mark.torch_independent
def test_plugin_errors_name_the_problem():
    with pytest.raises(tta.PluginError, match=r"kernel=\[\] is empty"):
        tta.custom_plugin(kernel=[], name="nothing")
    with pytest.raises(tta.PluginError, match="is not a kernel spec"):
        tta.custom_plugin(kernel=[launch], name="raw_function")

    def two(x, out, *, BLOCK=1):
        pass

    with pytest.raises(tta.PluginError, match="disagree on how many tensors"):
        tta.custom_plugin(kernel=[tta.triton(launch, configs=[{"BLOCK": 1}]), tta.triton(two, configs=[{"BLOCK": 1}])], name="mixed")


@pytest.mark.torch_independent
def test_missing_backend_is_reported_by_name(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name.startswith("cuda.tile") else real(name, *a))
    with pytest.raises(tta.PluginError, match=r"backend 'cutile' .* is not installed \(no module 'cuda.tile'\)"):
        tta.custom_plugin(kernel=tta.cutile(launch, configs=[{"BLOCK": 1}]), name="needs_cutile")


@pytest.mark.torch_independent
def test_plugin_declares_tensor_ports_from_the_launch_function():
    p = tta.custom_plugin(kernel=tta.triton(add_relu.launch_add_relu, configs=[{"BLOCK": 1024}]), name="launch_tensors")
    assert p.declaration()["launch_tensors"] == 3  # x, y, out


def test_launch_function_that_does_not_fit_the_region_is_refused():
    import torch

    p = tta.custom_plugin(kernel=tta.triton(add_relu.launch_add_relu, configs=[{"BLOCK": 1024}]), name="add_relu_3ports")

    class M(torch.nn.Module):
        def forward(self, x, y, z):
            with tta.lower_as(p):
                return x + y + z

    args = (torch.randn(4), torch.randn(4), torch.randn(4))
    (r,) = tta.rewrite(torch.export.export(M(), args), on_refused="keep").refused
    assert "takes 3 tensor(s) (inputs, then outputs) but the region has 3 input(s)" in r.reason
