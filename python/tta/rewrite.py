"""``tta.rewrite``: run the Rust pass on an exported program and apply its result to the fx graph.

Steps: serialize the graph (``graph.py``), analyze it in Rust, run each region's ``meta_impl``
on the region's fake inputs, outline in Rust, replay the edits on the fx graph (registering
one ``tta::<op>`` per plugin), then re-serialize and have Rust check that both graphs agree.
"""

from __future__ import annotations

import contextlib
import copy
import json
import operator
import time
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx
from torch.export import ExportedProgram

from . import _core, graph, ops
from . import selectors as _selectors
from .annotate import TAG_PREFIX
from .errors import GraphError, PluginError, from_core
from .plugin import declarations, lookup

# Node meta copied from a region's first op onto the node replacing it; the serializer reads
# these, so the copy is what makes the fx graph equal the pass's graph.
_CARRIED_META = ("nn_module_stack", "stack_trace", "source_fn_stack", "torch_fn")


@dataclass
class RegionReport:
    id: str
    impl: str
    origin: dict
    source: str | None
    status: str
    nodes: list[str]
    inputs: list[dict]
    outputs: list[dict]
    reason: str | None = None
    op: str | None = None
    node: str | None = None

    @property
    def outlined(self) -> bool:
        return self.status == "outlined"


@dataclass
class RewriteResult:
    """What ``tta.rewrite`` returns: the rewritten program and a report per region."""

    program: Any
    regions: list[RegionReport]
    report_text: str
    timings: dict = field(default_factory=dict)

    @property
    def outlined(self) -> list[RegionReport]:
        return [r for r in self.regions if r.outlined]

    @property
    def refused(self) -> list[RegionReport]:
        return [r for r in self.regions if not r.outlined]

    def __str__(self) -> str:
        head = f"tta: {len(self.outlined)} region(s) outlined, {len(self.refused)} refused\n"
        return head + self.report_text

    def compile_kernels(self, sm: int = 90, max_ptx: int | None = 90, **options) -> dict[str, list]:
        """Compile, ahead of time, the kernels of every outlined plugin op for its region's
        signature: one ``CompiledKernel`` per (kernel spec, config), dims that are symbolic in
        the graph stay dynamic. Returns op name -> kernels (ops whose plugin has no kernels are
        left out)."""
        from .aot.compile import compile_plugin
        from .aot.record import TensorMeta

        out: dict[str, list] = {}
        for r in self.outlined:
            plugin = lookup(r.impl)
            if r.op in out or plugin is None or not plugin.kernels:
                continue
            if any(p["kind"] != "tensor" for p in r.inputs):
                raise PluginError(f"{r.op}: a kernel plugin takes tensors only; region {r.id} also reads integers")
            metas = [TensorMeta.make(p["dtype"], [int(d) if d.lstrip("-").isdigit() else None for d in p["shape"]]) for p in r.inputs]
            outputs = plugin.meta_impl or ops.body_of(r.op)
            out[r.op] = compile_plugin(plugin, metas, outputs, sm=sm, max_ptx=max_ptx, **options)
        return out


def _run_meta_impls(summary: list[dict], nodes: dict[str, torch.fx.Node]) -> dict:
    """Each region's ``meta_impl`` outputs on its fake inputs. Regions of one plugin with the
    same input signature (a block called in a loop) give the same answer, so it is computed once
    per (plugin, signature): the symbols are the graph's own, so equal text means equal shapes."""
    out: dict[str, dict] = {}
    seen: dict[tuple, dict] = {}
    for r in summary:
        plugin = lookup(r["impl"])
        if not r["valid"] or plugin is None or plugin.meta_impl is None:
            continue
        key = (r["impl"], json.dumps([{k: v for k, v in p.items() if k != "name"} for p in r["inputs"]]))
        if key not in seen:
            seen[key] = _meta_outputs(plugin, [nodes[p["name"]].meta.get("val") for p in r["inputs"]])
        out[r["id"]] = seen[key]
    return out


def _meta_outputs(plugin, vals: list) -> dict:
    # Exported graphs carry fake tensors; hand-built ones may carry meta tensors, which compute
    # shapes without any mode.
    fake_mode = torch._guards.detect_fake_mode(vals)
    try:
        with fake_mode if fake_mode is not None else contextlib.nullcontext():
            res = plugin.meta_impl(*vals)
        res = list(res) if isinstance(res, (tuple, list)) else [res]
        bad = next((t for t in res if not isinstance(t, torch.Tensor)), None)
        if bad is not None or not res:
            got = "nothing" if not res else f"a {type(bad).__name__}"
            code = getattr(plugin.meta_impl, "__code__", None)
            where = f" ({code.co_filename}:{code.co_firstlineno})" if code is not None else ""
            return {"error": f"meta_impl{where} returned {got}; it must return a tensor, or a tuple of tensors, "
                             "shaped like the region's outputs (e.g. x.new_empty(x.shape))"}
        return {"ok": [{"dtype": graph._dtype(t.dtype), "shape": graph._dims(t.shape)} for t in res]}
    except Exception as e:  # the user's meta_impl: report, never crash the rewrite
        return {"error": f"{type(e).__name__}: {e}"}


def _apply(g: torch.fx.Graph, root: torch.nn.Module, edits: dict, summary: list[dict]) -> None:
    nodes = {n.name: n for n in g.nodes}
    # An input may be another region's output that an earlier edit already replaced.
    replaced: dict[str, torch.fx.Node] = {}
    ports = {r["id"]: r for r in summary}
    for e in edits["edits"]:
        members = [nodes[m] for m in e["remove"]]
        inputs = [replaced.get(i) or nodes[i] for i in e["inputs"]]
        outputs = [nodes[o] for o in e["outputs"]]
        region = ports[e["region"]]
        plugin = lookup(region["impl"])
        op = ops.ensure_op(e["op"], region["inputs"], region["outputs"], plugin, lambda: ops.extract_body(root, members, inputs, outputs))
        first = members[0]
        with g.inserting_after(nodes[e["after"]]):
            call = g.create_node("call_function", op, tuple(inputs), {}, name=e["node"])
        vals = [o.meta.get("val") for o in outputs]
        call.meta["val"] = vals[0] if len(vals) == 1 else tuple(vals)
        carried = {k: first.meta[k] for k in _CARRIED_META if k in first.meta}
        call.meta.update(carried)
        call.meta["tta"] = {"region": e["region"], "op": e["op"], "impl": region["impl"]}
        created = [call]
        prev = call
        for i, name in enumerate(e["getitems"]):
            with g.inserting_after(prev):
                gi = g.create_node("call_function", operator.getitem, (call, i), {}, name=name)
            gi.meta["val"] = vals[i]
            gi.meta.update(carried)
            created.append(gi)
            prev = gi
        for n, want in zip(created, [e["node"], *e["getitems"]]):
            if n.name != want:
                raise GraphError(f"fx named the new node {n.name!r} instead of {want!r}", kind="mismatch", node=want)
        for old, new in zip(outputs, created[1:] if e["getitems"] else created):
            old.replace_all_uses_with(new)
            replaced[old.name] = new
        for m in reversed(members):
            g.erase_node(m)
            del nodes[m.name]
        nodes.update((n.name, n) for n in created)
    for mv in edits["moves"]:
        nodes[mv["after"]].append(nodes[mv["node"]])


def _with_new_graph(ep: ExportedProgram, g: torch.fx.Graph) -> ExportedProgram:
    """A new ExportedProgram over the rewritten graph (the original module is the root its
    attributes come from), with output specs following renamed nodes. Built directly rather
    than through a GraphModule so fx generates the module's code once."""
    sig = copy.deepcopy(ep.graph_signature)
    out_node = next(n for n in reversed(g.nodes) if n.op == "output")
    for spec, arg in zip(sig.output_specs, out_node.args[0]):
        if isinstance(arg, torch.fx.Node) and hasattr(spec.arg, "name"):
            spec.arg.name = arg.name
    return ExportedProgram(
        root=ep.graph_module,
        graph=g,
        graph_signature=sig,
        state_dict=ep.state_dict,
        range_constraints=copy.deepcopy(ep.range_constraints),
        module_call_graph=copy.deepcopy(ep._module_call_graph),
        example_inputs=ep.example_inputs,
        constants=ep.constants,
        verifiers=ep.verifiers,
    )


def _untag_placeholders(g: torch.fx.Graph) -> None:
    """Strict export creates an input's placeholder lazily, when the traced code first reads it,
    so an input first read inside a region gets the region's tag. Reading an input does not
    put it in the region: drop those tags (the pass refuses any placeholder left in a region)."""
    for n in g.nodes:
        if n.op != "placeholder":
            break
        custom = n.meta.get("custom")
        if custom and any(k.startswith(TAG_PREFIX) for k in custom):
            n.meta["custom"] = {k: v for k, v in custom.items() if not k.startswith(TAG_PREFIX)}


def rewrite(program: ExportedProgram | torch.fx.GraphModule, *, selectors=None, check: bool | str = True) -> RewriteResult:
    """Outline every valid region of ``program`` into one ``tta::<op>`` node.

    Regions are the ``lower_as`` annotations plus what ``selectors`` choose: ``tta.lower_pattern``
    results and ``{module type or path prefix: impl}`` mappings (``tta/selectors.py``).

    Returns the rewritten program (same type as given; an ExportedProgram is not modified, a
    GraphModule is rewritten in place) and a report that says, per region, which op replaced
    it or why it was refused. ``check`` has the pass confirm that the edited fx graph is exactly
    the graph it computed: by default from the node order and a re-serialization of every node
    that is new or whose inputs changed (every other node is verified unchanged by identity);
    ``check="full"`` re-serializes the whole graph.
    """
    with graph.NoGC():
        return _rewrite(program, selectors, check)


def _rewrite(program, selectors, check: bool | str) -> RewriteResult:
    clock = [time.perf_counter()]
    stages: dict[str, float] = {}

    def lap(name: str) -> None:
        clock.append(time.perf_counter())
        stages[name + "_s"] = clock[-1] - clock[-2]

    # An ExportedProgram is left as it was: edit a copy of its graph (a Graph copy generates no
    # code) and build the new program once at the end. A GraphModule is edited in place.
    if isinstance(program, ExportedProgram):
        g, root = copy.deepcopy(program.graph), program.graph_module
    elif isinstance(program, torch.fx.GraphModule):
        g, root = program.graph, program
    else:
        raise TypeError(f"tta.rewrite takes an ExportedProgram or a GraphModule, got {type(program).__name__}")
    _untag_placeholders(g)
    lap("copy")
    serializer = graph.Serializer()
    doc = serializer.graph_to_dict(g)
    graph_json = json.dumps(doc, separators=(",", ":"), allow_nan=False, check_circular=False)
    lap("serialize")
    selectors_json, selector_impls = _selectors.encode(selectors, g)
    impls = declarations({r["impl"] for r in doc.get("regions", {}).values()} | selector_impls)
    del doc
    lap("selectors")
    try:
        analysis = _core.analyze(graph_json, json.dumps(impls), selectors_json)
        summary = json.loads(analysis.summary_json())
        nodes = {n.name: n for n in g.nodes}
        meta = _run_meta_impls(summary, nodes)
        outcome = analysis.outline(json.dumps(meta))
    except _core.CoreError as e:
        raise from_core(e) from None
    lap("pass")
    edits = json.loads(outcome.edits_json())
    if edits["edits"]:
        _apply(g, root, edits, summary)
    lap("apply")
    if edits["edits"] and not isinstance(program, ExportedProgram):
        program.recompile()
    lap("recompile")
    if check:
        try:
            if check == "full":
                outcome.check_matches(graph.to_json(g))
            else:
                outcome.check_delta(json.dumps(serializer.delta(g), separators=(",", ":"), allow_nan=False))
        except _core.CoreError as e:
            raise from_core(e) from None
    lap("check")
    result = program if not isinstance(program, ExportedProgram) else _with_new_graph(program, g)
    lap("wrap")
    regions = [RegionReport(**r) for r in json.loads(outcome.report_json())]
    unmatched = {u["pattern"]: u["closest"] for u in json.loads(outcome.unmatched_json())}
    _selectors.warn_unmatched(selectors, regions, unmatched)
    stages["total_s"] = time.perf_counter() - clock[0]
    stages["rust"] = json.loads(outcome.timings_json())
    return RewriteResult(program=result, regions=regions, report_text=outcome.report_text(), timings=stages)
