"""Where one kernel compile's time goes, phase by phase.

``driver.compile_spec`` times its steps (``session``: fake inputs and outputs; ``record``: the
launch function run under the backend's interceptor and planned; ``read back``: the artifact
brought to the QDP ABI) and each backend marks the call into its DSL (``dsl``: ``triton.compile``,
cuTile's export and tileiras, ``cute.compile``) and tta's own ptxas check of a plain target
(``ptxas check``). ``compile.py`` adds ``cache`` (key, lookup, store). Phases nest; each second
counts once, in the innermost phase open at the time, so the phases of a compile add up to its
wall time.

Only ``dsl`` is the DSL's time; every other phase is tta's, which a user waits for too
(``python -m tta.aot.bench_compile`` prints tta's own share per DSL).
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Iterator

DSL = "dsl"
NAMES = ("session", "record", DSL, "ptxas check", "read back", "cache")  # in the order a compile runs them

_local = threading.local()  # .times: the dict being filled, .stack: [phase, started] of open phases


@contextlib.contextmanager
def timing() -> Iterator[dict[str, float]]:
    """Collect the phases run inside into the dict it yields (seconds per phase name)."""
    outer = getattr(_local, "times", None), getattr(_local, "stack", None)
    times: dict[str, float] = {}
    _local.times, _local.stack = times, []
    try:
        yield times
    finally:
        _local.times, _local.stack = outer


@contextlib.contextmanager
def phase(name: str) -> Iterator[None]:
    """Charge the time inside to ``name`` (time in phases nested inside goes to those)."""
    times = getattr(_local, "times", None)
    if times is None:  # nobody is timing
        yield
        return
    stack = _local.stack
    now = time.perf_counter()
    if stack:
        outer = stack[-1]
        times[outer[0]] = times.get(outer[0], 0.0) + now - outer[1]
    stack.append([name, now])
    try:
        yield
    finally:
        now = time.perf_counter()
        _, started = stack.pop()
        times[name] = times.get(name, 0.0) + now - started
        if stack:
            stack[-1][1] = now  # the outer phase resumes


def add(total: dict[str, float], times: dict[str, float]) -> dict[str, float]:
    """``total`` with ``times`` added in (phase by phase)."""
    for k, v in times.items():
        total[k] = total.get(k, 0.0) + v
    return total


def own_share(times: dict[str, float]) -> float:
    """tta's share of the time in ``times``: everything but the DSL's own compile."""
    wall = sum(times.values())
    return (wall - times.get(DSL, 0.0)) / wall if wall else 0.0
