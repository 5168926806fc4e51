"""The compile ledger of scripts/test.sh: a real Triton compile is recorded once, a cache hit not
at all, and the check names a kernel one environment compiled twice unless the test says why."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import compile_ledger
import pytest
import triton
import triton.language as tl

_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "compiled_kernels.py"
_spec = importlib.util.spec_from_file_location("compiled_kernels", _SCRIPT)
compiled_kernels = sys.modules["compiled_kernels"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(compiled_kernels)


@triton.jit
def _double(x_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + i, tl.load(x_ptr + i, mask=i < n) * 2, mask=i < n)


def _compile_double():
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    src = ASTSource(fn=_double, signature={"x_ptr": "*fp32", "n": "i32"}, constexprs={"BLOCK": 128})
    triton.compile(src, target=GPUTarget("cuda", 90, 32))


@pytest.mark.kernels
def test_a_compile_is_recorded_once_and_a_second_cache_compiles_it_again(monkeypatch, tmp_path):
    log = tmp_path / "compiles.tsv"
    monkeypatch.setattr(triton.knobs.compilation, "listener", compile_ledger._triton_listener(str(log)))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "one"))
    _compile_double()
    _compile_double()  # a hit in the same cache: nothing compiled
    (first,) = compiled_kernels.read(tmp_path)
    assert (
        first.dsl == "triton"
        and first.seconds > 0
        and first.test.endswith(test_a_compile_is_recorded_once_and_a_second_cache_compiles_it_again.__name__)
    )
    assert compiled_kernels.check([first]) == 0
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "two"))
    _compile_double()  # an empty cache: the same kernel compiled again
    compiles = compiled_kernels.read(tmp_path)
    assert [c.identity for c in compiles] == [first.identity] * 2
    assert compiled_kernels.check(compiles) == 1


def _row(env, test, identity, again=False):
    return compiled_kernels.Compile(env, test, "cutile", identity, 0.5, again)


@pytest.mark.torch_independent
def test_the_check_names_both_tests_and_spares_other_environments_and_marked_tests(capsys):
    assert compiled_kernels.check([_row(".venv", "t::a", "k1"), _row(".venv-torch2.14", "t::b", "k1")]) == 0
    assert compiled_kernels.check([_row(".venv", "t::a", "k1"), _row(".venv", "t::b", "k1", again=True)]) == 0
    # A marked test's compile (in a cache of its own) is no first compile to reuse.
    assert compiled_kernels.check([_row(".venv", "t::a", "k1", again=True), _row(".venv", "t::b", "k1")]) == 0
    capsys.readouterr()
    assert compiled_kernels.check([_row(".venv", "t::a", "k1"), _row(".venv", "t::b", "k1")]) == 1
    said = capsys.readouterr().out
    assert "t::b compiled the cuTile kernel k1" in said and "which t::a compiled first" in said and "compiles_again" in said
