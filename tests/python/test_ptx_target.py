"""Compiled PTX targets the plain architecture (``sm_90``) unless the kernel needs the
arch-specific one (``sm_90a``, e.g. for wgmma): plain PTX also JIT-compiles on later GPUs. A
kernel whose instruction forms ptxas already accepted for sm_90 gets the plain target without a
second assembly (aot/plain_forms.py), with the same bytes as when ptxas decided."""

import subprocess

import pytest
import torch
import wgmma_kernel

import tta
from tta.aot import plain_forms
from tta.aot.compile import compile_specs
from tta.aot.session import TensorType
from tta.common.cache import default_dir
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


@pytest.fixture
def target_checks(monkeypatch, tmp_path):
    """An empty record (its own tta cache folder), and the count of tta's plain-target ptxas runs."""
    monkeypatch.setenv("TTA_CACHE_DIR", str(tmp_path / "tta"))
    runs = []
    real = subprocess.run

    def counting(args, *a, **kw):
        if any("tta-target-" in str(x) for x in args):
            runs.append(args)
        return real(args, *a, **kw)

    monkeypatch.setattr(subprocess, "run", counting)
    return runs


def _compile(spec, metas, meta):
    return compile_specs([spec], metas, meta, cache=False, jobs=1, progress=False)


@pytest.mark.kernels
def test_known_forms_give_the_plain_target_without_ptxas_and_the_same_bytes(target_checks):
    ex = by_name("triton_softmax")
    first = _compile(ex.spec(), ex.input_metas(torch.float16), ex.meta)
    assert len(target_checks) >= 1  # the empty record: ptxas decided
    assert all(k.meta["arch_specific"] is None for k in first)
    target_checks.clear()
    again = _compile(ex.spec(), ex.input_metas(torch.float16), ex.meta)
    assert target_checks == []
    assert [k.code for k in again] == [k.code for k in first]
    assert all(b".target sm_90\n" in k.code for k in again)


@pytest.mark.kernels
def test_a_kernel_that_needs_sm_90a_is_assembled_and_keeps_the_suffix_every_time(target_checks):
    metas = [TensorType.make(torch.float16, (64, 64))] * 2
    for _ in range(2):
        target_checks.clear()
        (k,) = _compile(tta.triton(wgmma_kernel.launch, configs=[{"BLOCK": 64}]), metas, lambda a, b: a.new_empty(a.shape).float())
        assert len(target_checks) == 1
        assert "wgmma" in k.meta["arch_specific"] and b".target sm_90a" in k.code
    # Forms of kernels ptxas refused are never recorded.
    assert not (default_dir() / "plain-target-forms").exists()


@pytest.mark.torch_independent
def test_the_record_ignores_a_line_still_being_written_and_survives_no_folder(tmp_path):
    path = tmp_path / "r.txt"
    path.write_text("ld.global.b32\nst.glo")
    assert plain_forms.accepted(path, ["ld.global.b32"])
    assert not plain_forms.accepted(path, ["st.glo"])
    plain_forms.add(path, ["st.global.b32", "ld.global.b32"])
    assert plain_forms.accepted(path, ["st.global.b32"])
    (tmp_path / "file").write_text("")
    plain_forms.add(tmp_path / "file" / "r.txt", ["ret"])  # its folder is a file: nothing recorded
    assert not plain_forms.accepted(tmp_path / "file" / "r.txt", ["ret"])
