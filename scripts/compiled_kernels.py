"""What the test run compiled, from the compile ledger (tests/python/compile_ledger.py writes
LOG-DIR/compiles.tsv): kernels per environment and DSL, and any kernel compiled twice.

    python3 scripts/compiled_kernels.py LOG-DIR          # the summary lines
    python3 scripts/compiled_kernels.py --check LOG-DIR  # exit 1 naming each kernel compiled twice

A kernel is compiled twice when one environment compiles the same identity again in a test not
marked `compiles_again` (one run shares one cache folder across every step: scripts/test.sh).
Standard library only, so it runs with any python3.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

TITLES = {"triton": "Triton", "cutile": "cuTile", "cutedsl": "CuTeDSL"}


@dataclass(frozen=True)
class Compile:
    env: str
    test: str
    dsl: str
    identity: str
    seconds: float
    on_purpose: bool


def read(logs: Path) -> list[Compile]:
    path = logs / "compiles.tsv"
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        fields = line.split("\t")
        if len(fields) == 6:  # a worker killed mid-write leaves a short line
            env, test, dsl, identity, seconds, again = fields
            out.append(Compile(env, test, dsl, identity, float(seconds), again == "1"))
    return out


def again(compiles: list[Compile]) -> list[tuple[Compile, Compile]]:
    """(first, repeat) for each compile of a kernel its environment already compiled. A test
    marked `compiles_again` compiles in a cache of its own on purpose, so its compile is never the
    first that a later one should have reused."""
    first: dict[tuple[str, str, str], Compile] = {}
    repeats = []
    for c in compiles:
        key = (c.env, c.dsl, c.identity)
        if key in first:
            repeats.append((first[key], c))
        elif not c.on_purpose:
            first[key] = c
    return repeats


def summary(compiles: list[Compile]) -> None:
    if not compiles:
        return
    per_env: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    seconds: dict[str, float] = defaultdict(float)
    for c in compiles:
        per_env[c.env][c.dsl] += 1
        seconds[c.env] += c.seconds
    print("   kernels compiled (the compile ledger):")
    for env, counts in per_env.items():
        said = ", ".join(f"{n} {TITLES.get(d, d)}" for d, n in sorted(counts.items()))
        print(f"     {env}: {said} in {seconds[env]:.1f} s")
    repeats = again(compiles)
    marked = [r for _, r in repeats if r.on_purpose]
    if marked:
        tests = sorted({r.test for r in marked})
        print(f"     compiled again on purpose (compiles_again): {len(marked)} in {', '.join(tests)}")
    unmarked = len(repeats) - len(marked)
    print(f"     compiled twice otherwise: {unmarked}")


def check(compiles: list[Compile]) -> int:
    bad = [(f, r) for f, r in again(compiles) if not r.on_purpose]
    for f, r in bad:
        print(f"compiled twice in {r.env}: {r.test} compiled the {TITLES.get(r.dsl, r.dsl)} kernel {r.identity} ({r.seconds:.2f} s), which {f.test} compiled first")
    if bad:
        print("Reuse the first compile (a fixture, or the same cache), or mark the test `compiles_again` saying why.")
        return 1
    print(f"no kernel compiled twice ({len(compiles)} compiles)")
    return 0


def main(argv: list[str]) -> int:
    if argv[1:2] == ["--check"]:
        return check(read(Path(argv[2])))
    summary(read(Path(argv[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
