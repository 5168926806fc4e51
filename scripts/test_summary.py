"""The closing lines of scripts/test.sh: tests per pytest step, the kernels the run compiled
(scripts/compiled_kernels.py) and the 20 slowest tests of the run.

Reads the JUnit files the pytest steps wrote into the log folder (standard library only, so it
runs with any python3). Usage: python3 scripts/test_summary.py LOG-DIR [N]
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import compiled_kernels  # beside this file


def _cases(xml: Path):
    """(step title, test id, seconds, outcome) of each test case in one JUnit file."""
    root = ET.parse(xml).getroot()
    for suite in root.iter("testsuite"):
        step = suite.get("name", xml.stem)
        for case in suite.iter("testcase"):
            test = f"{case.get('classname', '')}::{case.get('name', '')}"
            outcome = "passed"
            for tag in ("failure", "error", "skipped"):
                found = case.find(tag)
                if found is not None:
                    outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[tag]
                    if found.get("type") == "pytest.xfail":
                        outcome = "xfailed"
            yield step, test, float(case.get("time") or 0.0), outcome


def main(argv: list[str]) -> int:
    logs = Path(argv[1])
    slowest = int(argv[2]) if len(argv) > 2 else 20
    cases = []
    for xml in sorted(logs.glob("*.xml")):
        try:
            cases.extend(_cases(xml))
        except ET.ParseError as e:  # a step killed mid-write leaves a partial file
            print(f"   (unreadable {xml.name}: {e})")
    if not cases:
        return 0
    steps: dict[str, dict[str, int]] = {}
    for step, _, _, outcome in cases:
        counts = steps.setdefault(step, {})
        counts[outcome] = counts.get(outcome, 0) + 1
    print("   tests per step:")
    for step, counts in steps.items():
        said = ", ".join(f"{n} {o}" for o, n in sorted(counts.items()))
        print(f"     {step}: {said}")
    compiled_kernels.summary(compiled_kernels.read(logs))
    print(f"== {slowest} slowest tests")
    for step, test, seconds, _ in sorted(cases, key=lambda c: -c[2])[:slowest]:
        print(f"   {seconds:7.1f} s  {test}  [{step}]")
    print(f"   all tests: {sum(c[2] for c in cases):.0f} s in {len(cases)} tests")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
