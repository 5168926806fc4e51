"""Tactic ids for a plugin's kernels, and which of them may run over an optimization profile.

A tactic is one (kernel spec, config). Its id is a positive int32 derived from a hash of the
spec's identity and the config, so it is the same in every process and on every machine;
TensorRT reserves 0 for "default tactic", and custom tactics must be positive.

A kernel compiled under guards (conditions on input dims its launch code relied on, e.g.
``i0_1 <= 1024``) may be offered only when the guards hold for every shape the profile
allows: checked at every corner of the range box, which is exact for conditions monotonic in
each dimension; conditions that are not (modulo, bitwise functions, ``Ne``: ``aot/guards.py``)
are checked at every point of small boxes and otherwise treated as not proven.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from typing import Any, Sequence

_INT32_MAX = 2**31 - 1
_EXHAUSTIVE_LIMIT = 4096


def tactic_ids(keys: Sequence[tuple[str, str, dict]]) -> list[int]:
    """One id per ``(backend, spec identity, config)``, in order. A collision between two
    different keys is resolved by rehashing the later one with a counter, deterministically."""
    out: list[int] = []
    seen: dict[int, str] = {}
    for backend, identity, config in keys:
        text = json.dumps([backend, identity, sorted(config.items())], default=repr)
        salt = 0
        while True:
            digest = hashlib.sha256(f"{text}#{salt}".encode() if salt else text.encode()).digest()
            tid = int.from_bytes(digest[:8], "big") % _INT32_MAX + 1
            if seen.get(tid, text) == text:
                break
            salt += 1
        if tid in seen:
            raise ValueError(f"the tactic {text} is listed twice")
        seen[tid] = text
        out.append(tid)
    return out


def guard_over(guard: str, ranges: dict[str, tuple[int, int]]) -> tuple[bool, dict[str, int] | None]:
    """Whether ``guard`` holds for every value of its symbols in ``ranges`` (inclusive); when
    not, a witness assignment (or None when it could not be proven either way). The guard is
    read by ``aot/guards.py`` (bitwise functions and ``next_power_of_2`` chains included)."""
    from ..aot.guards import parse

    g = parse(guard)
    free = sorted(g.symbols)
    missing = [s for s in free if s not in ranges]
    if missing:
        raise KeyError(f"guard {guard!r} mentions {missing}, which have no range")
    size = 1
    for s in free:
        lo, hi = ranges[s]
        size *= hi - lo + 1
    if not g.monotone and size > _EXHAUSTIVE_LIMIT:
        return False, None
    points = (
        itertools.product(*(range(ranges[s][0], ranges[s][1] + 1) for s in free))
        if size <= _EXHAUSTIVE_LIMIT
        else itertools.product(*(sorted({ranges[s][0], ranges[s][1]}) for s in free))
    )
    for point in points:
        env = dict(zip(free, point))
        if not g.holds(env):
            return False, env
    return True, None


def dim_name(symbol: str) -> str:
    """``i0_1`` -> ``input 0 dim 1``."""
    k, _, j = symbol[1:].partition("_")
    return f"input {k} dim {j}"


def describe_ranges(ranges: dict[str, tuple[int, int]], only: Any = None) -> str:
    keys = [s for s in ranges if only is None or s in only]
    return ", ".join(f"{dim_name(s)} ({s}) in [{ranges[s][0]}, {ranges[s][1]}]" for s in keys)
