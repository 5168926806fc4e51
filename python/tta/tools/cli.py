"""``tta`` command line: run the Rust pass on a graph JSON file and print what it would do.

    tta report tests/fixtures/loop12.json          # region report + rewritten graph
    tta report graph.json --impls impls.json --json
    tta explain graph.json --svg graph.svg         # region table (+ picture, needs Graphviz)
    tta doctor                                     # what this machine has and what tta does with it

Write a graph file from Python with ``tta.save_graph(program, "graph.json")`` (or
``python -m tta.tools.graph_file model.pt2 graph.json``).
"""

# Only the Rust core and the standard library: the pass takes a millisecond, importing torch
# takes seconds, and nothing here needs it.

from __future__ import annotations

import argparse
import json
import sys

from ..common import bridge as core
from ..errors import GraphError


class _BadInput(Exception):
    """A file the report cannot read; the message is the one line the user sees."""


def _read_json(path: str, what: str):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise _BadInput(f"{path}: no such file") from None
    except IsADirectoryError:
        raise _BadInput(f"{path}: is a directory, not a {what} file") from None
    except OSError as e:
        raise _BadInput(f"{path}: cannot read it ({e.strerror or e})") from None
    except UnicodeDecodeError:
        raise _BadInput(f"{path}: not a {what} file (not UTF-8 text)") from None
    except json.JSONDecodeError as e:
        if e.pos >= len(e.doc.rstrip()) or e.msg.startswith("Unterminated"):
            raise _BadInput(f"{path}: not valid JSON: it ends early (is the file truncated?)") from None
        raise _BadInput(f"{path}: not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from None


def _object(value, path: str, what: str) -> dict:
    if not isinstance(value, dict):
        raise _BadInput(f"{path}: {what} must be a JSON object, got {_json_type(value)}")
    return value


def _json_type(v) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(type(v), "a number")


def _document(args: argparse.Namespace) -> dict:
    return _object(_read_json(args.file, "graph JSON"), args.file, "the graph file")


def _inputs(args: argparse.Namespace, doc: dict | None = None) -> tuple[str, dict, dict | None]:
    doc = _document(args) if doc is None else doc
    # A file from tta.save_graph holds {"graph", "impls", "selectors"?}; a bare graph file is
    # the graph itself.
    graph_doc = _object(doc["graph"], args.file, '"graph"') if "graph" in doc else doc
    impls = _object(doc.get("impls", {}), args.file, '"impls"')
    selectors = doc.get("selectors")
    if selectors is not None:
        _object(selectors, args.file, '"selectors"')
    if args.impls:
        impls = _object(_read_json(args.impls, "plugin declarations JSON"), args.impls, "the impls file")
    return json.dumps(graph_doc), impls, selectors


def _meta(doc: dict, path: str) -> dict:
    """The ``meta_impl`` results ``tta.save_graph`` recorded (none in a bare graph file)."""
    meta = _object(doc.get("meta", {}), path, '"meta"')
    try:
        return core.decode_meta(meta)
    except (KeyError, TypeError, AttributeError):
        raise _BadInput(f'{path}: "meta" is not a map of region id to {{"ok": [...]}} or {{"error": "..."}}') from None


def _report(args: argparse.Namespace) -> int:
    doc = _document(args)
    graph_json, impls, selectors = _inputs(args, doc)
    try:
        outcome = core.analyze(graph_json, impls, selectors).outline(_meta(doc, args.file))
    except GraphError as e:
        raise _BadInput(f"{args.file}: {e}") from None
    if args.json:
        doc = {"report": outcome.report(), "unmatched": outcome.unmatched(), "edits": outcome.edits, "moves": outcome.moves}
        print(json.dumps(core.to_jsonable(doc), indent=1))
    else:
        print(outcome.report_text())
        print(outcome.graph_text())
    return 0


def _explain(args: argparse.Namespace) -> int:
    from ..errors import TTAError
    from .explain import explain_outcome
    from .kernel_info import decode_kernels

    doc = _document(args)
    graph_json, impls, selectors = _inputs(args, doc)
    # Files written before kernel specs were saved have no "kernels": the columns say so.
    kernels = decode_kernels(_object(doc["kernels"], args.file, '"kernels"')) if "kernels" in doc else None
    try:
        outcome = core.analyze(graph_json, impls, selectors).outline(_meta(doc, args.file))
        text = explain_outcome(outcome, graph_json, kernels, args.svg, args.max_nodes)
    except GraphError as e:
        raise _BadInput(f"{args.file}: {e}") from None
    except (TTAError, OSError) as e:
        raise _BadInput(str(e)) from None
    print(text, end="")
    if args.svg:
        print(f"wrote {args.svg}")
    return 0


def _doctor(args: argparse.Namespace) -> int:
    from .doctor import run

    return run(args)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="tta", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("report", help="run the pass on a graph JSON file and print the region report")
    r.add_argument("file")
    r.add_argument("--impls", help="JSON file of plugin declarations (default: the file's own 'impls')")
    r.add_argument("--json", action="store_true", help="print the report and edits as JSON")
    r.set_defaults(run=_report)
    e = sub.add_parser("explain", help="print a table of every region; draw the graph with --svg")
    e.add_argument("file")
    e.add_argument("--impls", help="JSON file of plugin declarations (default: the file's own 'impls')")
    e.add_argument("--svg", help="write the picture of the graph here (needs Graphviz's dot)")
    e.add_argument("--max-nodes", type=int, default=300, help="past this many drawn nodes, draw only the regions and their neighbours")
    e.set_defaults(run=_explain)
    d = sub.add_parser("doctor", help="check this machine: GPU, driver, CUDA, torch, DSLs, TensorRT, cache; build a test engine")
    d.add_argument("--json", action="store_true", help="print the rows as JSON (what to send back with a bug report)")
    d.set_defaults(run=_doctor)
    from .doctor import add_arguments

    add_arguments(d)
    args = p.parse_args(argv)
    try:
        return args.run(args)
    except _BadInput as e:
        print(f"tta {args.cmd}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
