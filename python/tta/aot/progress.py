"""The progress line of long ahead-of-time compiles, on stderr.

On a terminal it is one line redrawn in place (a bar, the count, the time and the kernel just
finished); anywhere else, when asked, one line per finished compile, so that logs keep every
step. Shown by default only on a terminal and for compiles long enough to need it;
``progress=True`` or ``TTA_PROGRESS=1`` asks for it anywhere, ``progress=False`` or
``TTA_PROGRESS=0`` turns it off.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from typing import TextIO

MIN_STEPS = 4  # fewer compiles than this finish too soon to need a progress line
_BAR = 24


def wanted(total: int, asked: bool | None, stream: TextIO) -> bool:
    if asked is not None:
        return asked
    env = os.environ.get("TTA_PROGRESS", "")
    if env in ("0", "1"):
        return env == "1"
    return total >= MIN_STEPS and _isatty(stream)


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Progress:
    """``with Progress(n, asked) as p: ... p.step(label)`` once per finished compile."""

    def __init__(self, total: int, asked: bool | None = None, stream: TextIO | None = None, what: str = "compiled"):
        self.stream = stream or sys.stderr
        self.total = total
        self.what = what
        self.enabled = wanted(total, asked, self.stream)
        self.tty = _isatty(self.stream)
        self.done = 0
        self.t0 = time.perf_counter()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        # Leave the terminal's cursor on a fresh line, also when a compile failed midway.
        if self.enabled and self.tty and self.done:
            self.stream.write("\n")
            self.stream.flush()

    def step(self, label: str) -> None:
        self.done += 1
        if not self.enabled:
            return
        elapsed = time.perf_counter() - self.t0
        head = f"tta: {self.what} {self.done}/{self.total} ({elapsed:.1f}s)"
        if not self.tty:
            self.stream.write(f"{head} {label}\n")
        else:
            filled = _BAR * self.done // max(self.total, 1)
            line = f"{head} [{'#' * filled}{'.' * (_BAR - filled)}] {label}"
            width = shutil.get_terminal_size((100, 20)).columns - 1
            self.stream.write("\r" + line[:width].ljust(width))
        self.stream.flush()
