"""Which path each ``tta::<op>`` took when it ran eagerly: the plugin's kernel, or the region
body and why. Running the body on CPU tensors is right (the kernels are CUDA kernels); on CUDA
tensors it means the user's kernel did not run, so the first such fallback per op and cause
warns."""

from __future__ import annotations

import threading
import warnings
from collections import Counter

from ..errors import EagerFallbackWarning

KERNEL = "kernel"

_counts: dict[str, Counter] = {}
_warned: set[tuple[str, str]] = set()
_lock = threading.Lock()


def record(op: str, why: str | None, on_cuda: bool) -> None:
    """One eager call of ``tta::<op>``: ``why`` is None when the kernel ran."""
    path = KERNEL if why is None else f"region body: {why}"
    with _lock:
        _counts.setdefault(op, Counter())[path] += 1
        first = why is not None and on_cuda and (op, why) not in _warned
        if first:
            _warned.add((op, why))
    if first:
        warnings.warn(
            f"tta::{op} ran its region body instead of the plugin's kernel on CUDA inputs: {why}", EagerFallbackWarning, stacklevel=4
        )


def eager_paths() -> dict[str, dict[str, int]]:
    """Per op, how many eager calls took each path (``"kernel"`` or ``"region body: <why>"``)."""
    with _lock:
        return {op: dict(c) for op, c in _counts.items()}


def reset() -> None:
    with _lock:
        _counts.clear()
        _warned.clear()
