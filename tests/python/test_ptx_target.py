"""Compiled PTX targets the plain architecture (``sm_90``) unless the kernel needs the
arch-specific one (``sm_90a``, e.g. for wgmma): plain PTX also JIT-compiles on later GPUs."""

import pytest
import torch
import wgmma_kernel

import tta
from tta.aot.compile import compile_specs
from tta.aot.session import TensorType
from tta.examples.kernels import by_name


def _targets(k):
    return [line for line in k.code.decode().splitlines() if line.startswith(".target")]


@pytest.mark.kernels
def test_elementwise_kernel_gets_the_plain_target():
    ex = by_name("triton_add_relu")
    for k in compile_specs([ex.spec()], ex.input_metas(torch.float16), ex.meta):
        assert _targets(k) == [".target sm_90"] and k.meta["arch_specific"] is None


@pytest.mark.kernels
def test_wgmma_kernel_keeps_sm_90a_and_says_why():
    spec = tta.triton(wgmma_kernel.launch, configs=[{"BLOCK": 64}])
    (k,) = compile_specs([spec], [TensorType.make("float16", (64, 64))] * 2, lambda a, b: a.new_empty(a.shape).float())
    assert _targets(k) == [".target sm_90a"]
    assert "needs sm_90a" in k.meta["arch_specific"] and "wgmma" in k.meta["arch_specific"]
