"""``tta doctor`` (also ``python -m tta.doctor``): one table of what this machine has (GPU,
driver, CUDA, torch, the kernel DSLs, TensorRT and Torch-TensorRT, tta's cache) and what tta
will do with it; where TensorRT and a GPU are present, a tiny engine with one AOT plugin per
installed DSL is built, run and compared with eager. docs/doctor.md describes each check.

Exit status 0 when everything present works (absent pieces are skipped, saying why), 1 with one
line per problem. Every check runs inside a guard: a check that fails unexpectedly is a
problem line naming it, never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from dataclasses import asdict

from .doctor_rows import OK, PROBLEM, SKIP, WARN, Row, one_line  # noqa: F401  (the statuses, for callers)


def run_checks(checks=None) -> list[Row]:
    """Every check in order; one that raises becomes a PROBLEM row naming it."""
    from . import doctor_checks

    state = doctor_checks.State()
    rows: list[Row] = []
    for name, check in checks if checks is not None else doctor_checks.CHECKS:
        try:
            rows.extend(check(state))
        except Exception as e:  # a check must never end the report
            rows.append(Row(name, "?", status=PROBLEM, note=f"the check itself failed: {one_line(e)}"))
    return rows


def problems(rows: list[Row]) -> list[str]:
    return [f"{r.check}: {r.note or r.found}" for r in rows if r.status == PROBLEM]


def render(rows: list[Row]) -> str:
    """The table (check | status | found | tta will), each row's note under it, then one line
    per problem. Long values are never cut: they push their row's later columns right."""
    cells = [("check", "status", "found", "tta will")] + [(r.check, r.status, r.found, r.plan) for r in rows]
    widths = [min(max(len(c[i]) for c in cells), cap) for i, cap in enumerate((20, 8, 44))]
    lines = []
    for k, c in enumerate(cells):
        lines.append(("  ".join(v.ljust(w) for v, w in zip(c[:3], widths)) + "  " + c[3]).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths) + "  " + "-" * 8)
        elif rows[k - 1].note:
            lines.append(" " * (widths[0] + 2) + f"why: {rows[k - 1].note}")
    bad = problems(rows)
    lines.append("")
    if bad:
        lines.append(f"{len(bad)} problem(s):")
        lines += [f"  {b}" for b in bad]
    else:
        skipped = sum(r.status == SKIP for r in rows)
        lines.append("no problems: everything present works" + (f" ({skipped} check(s) skipped: their rows say why)" if skipped else ""))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="tta doctor", description=__doc__.split("\n\n")[0])
    p.add_argument("--json", action="store_true", help="print the rows as JSON (what to send back with a bug report)")
    add_arguments(p)
    return run(p.parse_args(argv))


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-engine", action="store_true", help="skip building the test engine (the slow step)")


def run(args: argparse.Namespace) -> int:
    from . import doctor_checks

    checks = doctor_checks.CHECKS if not args.no_engine else [c for c in doctor_checks.CHECKS if c[0] != "engine"]
    # What the checked packages print while importing goes to stderr: stdout is the report.
    with contextlib.redirect_stdout(sys.stderr):
        rows = run_checks(checks)
    if args.no_engine:
        rows.append(Row("engine", "not built", status=SKIP, note="--no-engine"))
    if getattr(args, "json", False):
        print(json.dumps({"rows": [asdict(r) for r in rows], "problems": problems(rows)}, indent=1))
    else:
        print(render(rows))
    return 1 if problems(rows) else 0


if __name__ == "__main__":
    sys.exit(main())
