"""``tta`` command line: run the Rust pass on a graph JSON file and print what it would do.

    tta report tests/fixtures/loop12.json          # region report + rewritten graph
    tta report graph.json --impls impls.json --json
"""

from __future__ import annotations

import argparse
import json
import sys

from . import core
from .errors import GraphError


def _report(args: argparse.Namespace) -> int:
    with open(args.file) as f:
        doc = json.load(f)
    # A fixture file holds {"graph", "impls"}; a bare graph file is the graph itself.
    graph_doc = doc.get("graph", doc)
    impls = doc.get("impls", {})
    if args.impls:
        with open(args.impls) as f:
            impls = json.load(f)
    try:
        outcome = core.analyze(json.dumps(graph_doc), impls).outline()
    except GraphError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.json:
        doc = {"report": outcome.report(), "edits": outcome.edits, "moves": outcome.moves}
        print(json.dumps(core.to_jsonable(doc), indent=1))
    else:
        print(outcome.report_text())
        print(outcome.graph_text())
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="tta", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("report", help="run the pass on a graph JSON file and print the region report")
    r.add_argument("file")
    r.add_argument("--impls", help="JSON file of plugin declarations (default: the file's own 'impls')")
    r.add_argument("--json", action="store_true", help="print the report and edits as JSON")
    r.set_defaults(run=_report)
    args = p.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
