"""Writing the graph file that ``tta report`` reads: ``tta.save_graph(program, path)`` in Python,
or from a shell (this needs torch, which ``tta report`` does not):

    python -m tta.tools.graph_file model.pt2 graph.json            # a torch.export.save file
    python -m tta.tools.graph_file mypkg.models:exported graph.json  # an ExportedProgram (or a
                                                               # function returning one)

The file holds ``{"graph", "impls", "kernels", "selectors"?, "meta"?}`` (docs/graph-format.md):
the graph JSON the pass reads, the declarations of the plugins its regions use, their kernel
specs (for ``tta explain``), the selectors, if given, and each region's ``meta_impl`` result, so
that the report is the one ``tta.rewrite`` would print.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys

from ..errors import TTAError


def graph_document(program, selectors=None, caller: str = "tta.save_graph") -> dict:
    """The ``{"graph", "impls", "kernels", "selectors"?, "meta"?}`` document for ``program``."""
    import torch
    from torch.export import ExportedProgram

    from ..declare.plugin import declarations
    from ..fx import selectors as _selectors
    from ..fx.pipeline import graph_document as rewrite_document
    from .kernel_info import kernels_document

    if isinstance(program, ExportedProgram):
        gm = program.graph_module
    elif isinstance(program, torch.fx.GraphModule):
        gm = program
    else:
        raise TypeError(f"{caller} takes an ExportedProgram or a GraphModule, got {type(program).__name__}")
    doc = rewrite_document(program, caller)
    sel, keys = _selectors.encode(selectors, gm)
    used = {r["impl"] for r in doc.get("regions", {}).values()} | keys
    out = {"graph": doc, "impls": declarations(used), "kernels": kernels_document(used)}
    if sel is not None:
        out["selectors"] = sel
    meta = _meta(gm.graph, doc, out["impls"], sel)
    if meta:
        out["meta"] = meta
    return out


def _meta(g, doc: dict, impls: dict, selectors: dict | None) -> dict:
    """Each region's ``meta_impl`` result, run now (it needs torch, which the readers of the
    file do not import), so that their report checks what ``tta.rewrite`` checks."""
    from ..common import bridge as core
    from ..errors import GraphError
    from ..fx import serialize as graph
    from ..fx.pipeline import run_meta_impls

    try:
        summary = core.analyze(graph.dumps(doc), impls, selectors).summary()
    except GraphError:
        return {}  # the readers report the broken graph themselves
    return core.meta_document(run_meta_impls(summary, {n.name: n for n in g.nodes}))


def save_graph(program, path: str | os.PathLike, *, selectors=None) -> None:
    """Write ``program``'s graph, with its plugin declarations (and ``selectors``), as the JSON
    file ``tta report PATH`` reads."""
    doc = graph_document(program, selectors)
    tmp = f"{os.fspath(path)}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(doc, f, separators=(",", ":"), allow_nan=False)
    os.replace(tmp, path)  # never leave a truncated file for the report to choke on


def _load(source: str):
    if source.endswith(".pt2"):
        import torch

        from ..declare import markers  # noqa: F401  (registers the op lower_as leaves in saved programs)

        return torch.export.load(source)
    module, sep, attr = source.partition(":")
    if not sep or not module or not attr:
        raise TTAError(f"{source!r} is neither a .pt2 file nor module:attr")
    obj = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj() if callable(obj) and not hasattr(obj, "graph_module") else obj


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m tta.tools.graph_file", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("source", help="a torch.export.save .pt2 file, or module:attr naming an ExportedProgram")
    p.add_argument("out", help="graph JSON file to write")
    args = p.parse_args(argv)
    try:
        save_graph(_load(args.source), args.out)
    except (TTAError, TypeError, ImportError, AttributeError, OSError) as e:
        print(f"python -m tta.tools.graph_file: error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
