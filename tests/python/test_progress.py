"""The compile progress line (``tta/aot/progress.py``): a bar redrawn in place on a terminal,
one line per compile elsewhere when asked, nothing when not asked off a terminal."""

import io

import pytest

from tta.aot.progress import MIN_STEPS, Progress

pytestmark = pytest.mark.torch_independent


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _run(stream, total, asked=None, fail_at=None):
    with Progress(total, asked, stream=stream) as p:
        for i in range(total):
            if i == fail_at:
                raise RuntimeError("compile failed")
            p.step(f"triton k{i} BLOCK=1024")
    return stream.getvalue()


def test_terminal_gets_one_bar_redrawn_in_place(monkeypatch):
    monkeypatch.delenv("TTA_PROGRESS", raising=False)
    out = _run(Terminal(), 8)
    assert out.count("\r") == 8 and out.endswith("\n") and out.count("\n") == 1
    last = out.rsplit("\r", 1)[1]
    assert last.startswith("tta: compiled 8/8 (") and "[" + "#" * 24 + "]" in last and "triton k7 BLOCK=1024" in last
    halfway = out.split("\r")[4]
    assert "[" + "#" * 12 + "." * 12 + "]" in halfway


def test_terminal_line_ends_even_when_a_compile_fails(monkeypatch):
    monkeypatch.delenv("TTA_PROGRESS", raising=False)
    stream = Terminal()
    with pytest.raises(RuntimeError):
        _run(stream, 8, fail_at=3)
    assert stream.getvalue().endswith("\n") and "3/8" in stream.getvalue()


def test_short_compiles_and_non_terminals_stay_quiet_unless_asked(monkeypatch):
    monkeypatch.delenv("TTA_PROGRESS", raising=False)
    assert _run(Terminal(), MIN_STEPS - 1) == ""
    assert _run(io.StringIO(), 8) == ""
    asked = _run(io.StringIO(), 3, asked=True)
    assert asked.splitlines()[0].startswith("tta: compiled 1/3 (") and len(asked.splitlines()) == 3 and "\r" not in asked
    assert _run(Terminal(), 8, asked=False) == ""


def test_environment_asks_or_silences(monkeypatch):
    monkeypatch.setenv("TTA_PROGRESS", "1")
    assert len(_run(io.StringIO(), 2).splitlines()) == 2
    monkeypatch.setenv("TTA_PROGRESS", "0")
    assert _run(Terminal(), 8) == ""
