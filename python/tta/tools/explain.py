"""``tta.explain``: what the pass does to a program, as a table of every region and a picture.

The table has one row per region: its name (and what chose it), impl, plugin op, inputs and
outputs with dtypes and symbolic shapes, source line, outlined or refused with the reason, and
the backends and tactics its kernels offer (one tactic per kernel config). The picture is the
graph with each region drawn as a cluster beside its plugin node: DOT from the Rust core,
rendered to SVG by Graphviz's ``dot``.

``tta explain GRAPH.json`` (``cli.py``) prints the same from a file ``tta.save_graph`` wrote,
without torch: only ``explain()`` itself imports it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import textwrap
from typing import Mapping, Sequence

from ..common import bridge as core
from ..common.bridge import Port, RegionReport
from ..errors import TTAError
from .kernel_info import KernelInfo, decode_kernels

COLUMNS = ("region", "impl", "op", "inputs", "outputs", "source", "status", "backend", "tactics")
_REASON_WIDTH = 48


# -- the table -------------------------------------------------------------------------------


def _port(p: Port) -> str:
    what = f"{p.dtype}[{', '.join(str(d) for d in p.shape)}]" if p.is_tensor else f"SymInt {p.expr}"
    return f"{p.name}: {what}" + (" (written in place)" if p.mutated else "")


def _base_dir() -> str:
    return os.path.join(os.getcwd(), "")


def _relative(source: str) -> str:
    """A source path under the working directory, relative to it (as the user typed it)."""
    base = _base_dir()
    return source[len(base) :] if source.startswith(base) else source


def _origin(r: RegionReport) -> str:
    o = r.origin
    if o.kind == "module":
        return f"module {o.path}" if o.selector == o.path else f"module {o.selector} at {o.path}"
    if o.kind == "pattern":
        return f"pattern {o.pattern}"
    return "lower_as"


def _kernel_cells(r: RegionReport, kernels: Mapping[str, Sequence[KernelInfo]] | None) -> tuple[list[str], list[str]]:
    if kernels is None:
        return ["(not recorded)"], [""]
    specs = kernels.get(r.impl)
    if specs is None:
        return ["(plugin not registered)"], [""]
    if not specs:
        return ["none: region body"], ["-"]
    backend, tactics = [], []
    for k in specs:
        for i, c in enumerate(k.configs or ({},)):
            config = " ".join(f"{n}={v}" for n, v in c.items()) or "(no config)"
            backend.append(f"{k.backend} {k.identity.rsplit('.', 1)[-1]} {config}")
            tactics.append(str(k.tactics[i]) if k.tactics and i < len(k.tactics) else "-")
    return backend, tactics


def rows(regions: Sequence[RegionReport], kernels: Mapping[str, Sequence[KernelInfo]] | None) -> list[dict[str, list[str]]]:
    """One row per region: column name -> the cell's lines."""
    out = []
    for r in regions:
        if r.outlined:
            status = ["outlined"]
        else:
            status = textwrap.wrap(f"REFUSED: {r.reason or '?'}", _REASON_WIDTH) or ["REFUSED"]
        backend, tactics = _kernel_cells(r, kernels)
        out.append(
            {
                "region": [r.id, f"({_origin(r)})"],
                "impl": [r.impl],
                "op": [f"tta::{r.op}", f"node {r.node}"] if r.outlined else ["-"],
                "inputs": [_port(p) for p in r.inputs] or ["-"],
                "outputs": [_port(p) for p in r.outputs] or ["-"],
                "source": [_relative(r.source) if r.source else "unknown"],
                "status": status,
                "backend": backend,
                "tactics": tactics,
            }
        )
    return out


def table(regions: Sequence[RegionReport], kernels: Mapping[str, Sequence[KernelInfo]] | None) -> str:
    """A plain-text table of the regions; a cell of several lines spans several text lines."""
    body = rows(regions, kernels)
    widths = {c: max([len(c)] + [len(line) for row in body for line in row[c]]) for c in COLUMNS}
    rule = "-+-".join("-" * widths[c] for c in COLUMNS)

    def line(cells: Mapping[str, str]) -> str:
        return " | ".join(cells[c].ljust(widths[c]) for c in COLUMNS).rstrip()

    lines = [line({c: c for c in COLUMNS}), rule]
    for row in body:
        for i in range(max(len(v) for v in row.values())):
            lines.append(line({c: row[c][i] if i < len(row[c]) else "" for c in COLUMNS}))
        lines.append(rule)
    return "\n".join(lines) + "\n"


def report_text(outcome: core.Outcome, kernels: Mapping[str, Sequence[KernelInfo]] | None) -> str:
    regions = outcome.report()
    outlined = sum(r.outlined for r in regions)
    text = f"tta explain: {len(regions)} region(s), {outlined} outlined, {len(regions) - outlined} refused\n"
    if regions:
        text += table(regions, kernels)
    for pattern, closest in outcome.unmatched().items():
        text += f"pattern {pattern} occurs nowhere; {closest}\n"
    return text


# -- the picture ------------------------------------------------------------------------------

_NO_DOT = (
    "Graphviz's `dot` was not found on PATH, and the picture needs it: install Graphviz "
    "(`apt-get install graphviz`, `brew install graphviz`, or `conda install graphviz`; "
    "scripts/setup.sh installs it when run as root)"
)


def render_svg(dot_text: str, path: str | os.PathLike) -> None:
    """Render DOT to an SVG file with Graphviz's ``dot -Tsvg``; the file appears only whole."""
    exe = shutil.which("dot")
    if exe is None:
        raise TTAError(_NO_DOT)
    tmp = f"{os.fspath(path)}.tmp{os.getpid()}"
    try:
        done = subprocess.run([exe, "-Tsvg", "-o", tmp], input=dot_text, text=True, capture_output=True, timeout=300)
        if done.returncode != 0:
            raise TTAError(f"Graphviz `dot -Tsvg` failed (exit {done.returncode}): {done.stderr.strip()[:2000]}")
        os.replace(tmp, path)
    except subprocess.TimeoutExpired:
        raise TTAError("Graphviz `dot -Tsvg` took more than 300 s; draw fewer nodes (max_nodes=)") from None
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def explain_outcome(
    outcome: core.Outcome,
    graph_json: str,
    kernels: Mapping[str, Sequence[KernelInfo]] | None,
    svg: str | os.PathLike | None = None,
    max_nodes: int = 300,
) -> str:
    """The report of an outlined pass result; with ``svg``, also the picture at that path."""
    if not isinstance(max_nodes, int) or max_nodes < 1:
        raise TTAError(f"max_nodes must be a positive number of nodes, got {max_nodes!r}")
    text = report_text(outcome, kernels)
    if svg is not None:
        render_svg(outcome.dot(graph_json, max_nodes, _base_dir()), svg)
    return text


def explain(program, svg: str | os.PathLike | None = None, *, selectors=None, max_nodes: int = 300) -> str:
    """Explain what ``tta.rewrite(program, selectors=selectors)`` does, without changing
    ``program``: returns the region table (see the module docstring) and, when ``svg`` is a
    path, writes the picture there (needs Graphviz). Past ``max_nodes`` drawn nodes, only the
    regions and their neighbours are drawn.

    It reads what ``tta.save_graph`` would write, so ``tta explain`` on that file prints the
    same table."""
    from ..fx import serialize as graph
    from .graph_file import graph_document

    doc = graph_document(program, selectors, caller="tta.explain")
    graph_json = graph.dumps(doc["graph"])
    outcome = core.analyze(graph_json, doc["impls"], doc.get("selectors")).outline(core.decode_meta(doc.get("meta", {})))
    return explain_outcome(outcome, graph_json, decode_kernels(doc["kernels"]), svg, max_nodes)
