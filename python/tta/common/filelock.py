"""One holder at a time across threads and processes: an exclusive ``flock`` on a lock file.

tta uses it where two compile workers could otherwise do the same work side by side (two
tactics whose kernels compile to the same thing): the second waits, then finds the first's result
in the DSL's cache. The kernel drops the lock when its holder exits, even on a crash, so a killed
worker never leaves one behind. Where no lock can be taken (no ``fcntl``, a read-only folder) the
work runs unlocked: the lock saves time, correctness never depends on it.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Iterator

try:
    import fcntl
except ImportError:  # not POSIX
    fcntl = None  # type: ignore[assignment]


@contextlib.contextmanager
def held(path: str | os.PathLike) -> Iterator[bool]:
    """Hold the lock file ``path`` (created with its folder) inside the block; yields whether the
    lock was taken."""
    fd = None
    if fcntl is not None:
        try:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            fcntl.flock(fd, fcntl.LOCK_EX)  # blocks; releases the GIL while it waits
        except OSError:
            if fd is not None:
                os.close(fd)
            fd = None
    try:
        yield fd is not None
    finally:
        if fd is not None:
            os.close(fd)  # closing the only descriptor releases the lock
