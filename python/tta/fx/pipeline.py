"""``tta.rewrite``: run the Rust pass on an exported program and apply its result to the fx graph.

Steps: copy the fx graph (a GraphModule's own graph is edited instead, with an undo log), read
it into the pass (``core.FxReader`` with ``graph.py``'s helpers), analyze it in Rust, run each
region's ``meta_impl`` on the region's fake inputs, outline in Rust, replay the edits on the
graph (registering one ``tta::<op>`` per plugin), have Rust check that both graphs agree, and
only then hand the result out. ``find_regions`` and ``lower_modules`` run the same pass.
"""

from __future__ import annotations

import contextlib
import json
import operator
import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import torch
import torch.fx
from torch import nn
from torch.export import ExportedProgram

from ..common import bridge as core
from ..common.bridge import Edit, MetaOutput, Move, Origin, RegionMembers, RegionReport, RegionSummary
from ..declare import markers
from ..declare.plugin import Plugin, declarations, lookup
from ..errors import GraphError
from ..runtime import first_use, ops
from ..runtime.eager import run as launch
from . import layout, refusals, user_names
from . import selectors as _selectors
from . import serialize as graph
from .exported import with_new_graph
from .graph_copy import copy_graph

# Node meta copied from a region's first op onto the node replacing it; the reader reads
# these, so the copy is what makes the fx graph equal the pass's graph.
_CARRIED_META = ("nn_module_stack", "stack_trace", "source_fn_stack", "torch_fn")


@dataclass
class RewriteResult:
    """What ``tta.rewrite`` returns: the rewritten program and a report per region."""

    program: Any
    regions: list[RegionReport]
    report_text: str
    timings: dict = field(default_factory=dict)
    kernel_check: Any = None  # the last check_kernels() report tta.compile made, if any

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
        signature (``tta.fx.kernels.compile_kernels``): op name -> ``CompiledKernel``s."""
        from ..aot.compile import export_ranges
        from .kernels import compile_kernels

        # The sizes export proved bound the dims (a constexpr constant over them is accepted).
        return compile_kernels(self.outlined, sm=sm, max_ptx=max_ptx, ranges=export_ranges(self.program), **options)

    def check_kernels(self, **options):
        """Run every outlined plugin's kernels against their region bodies (``tta.verify.check``): a
        ``KernelCheck``; a kernel that computes something else raises ``KernelCheckError``."""
        import tta  # the public API: the check runs on the pass's results, so the pass cannot import it

        return tta.check_kernels(self, **options)


def run_meta_impls(summary: list[RegionSummary], nodes: dict[str, torch.fx.Node]) -> dict[str, list[MetaOutput] | str]:
    """Each region's ``meta_impl`` outputs on its fake inputs. Regions of one plugin with the
    same input signature (a block called in a loop) give the same answer, so it is computed once
    per (plugin, signature): the symbols are the graph's own, so equal text means equal shapes."""
    return _run_meta_impls(summary, nodes)[0]


def _run_meta_impls(summary: list[RegionSummary], nodes: dict[str, torch.fx.Node]) -> tuple[dict[str, list[MetaOutput] | str], bool]:
    """``run_meta_impls``, and whether any meta_impl ran under the program's fake mode (which
    may add guards to its shape environment) rather than on meta tensors only."""
    out: dict[str, list[MetaOutput] | str] = {}
    seen: dict[tuple, list[MetaOutput] | str] = {}
    under_fake = False
    for r in summary:
        plugin = lookup(r.impl)
        if not r.valid or plugin is None or plugin.meta_impl is None:
            continue
        key = (r.impl, tuple(p.signature() for p in r.inputs))
        if key not in seen:
            seen[key], fake = _meta_outputs(plugin, [nodes[p.name].meta.get("val") for p in r.inputs])
            under_fake |= fake
        out[r.id] = seen[key]
    return out, under_fake


# Mutable objects that two rewrites in two threads may share, one lock each: a program's
# FakeTensorMode (and its ShapeEnv), which every rewrite of that program enters, and a
# GraphModule's graph, which a rewrite edits in place.
_locks: "weakref.WeakKeyDictionary[Any, threading.Lock]" = weakref.WeakKeyDictionary()
_locks_guard = threading.Lock()


def _lock_of(obj: Any) -> threading.Lock:
    with _locks_guard:
        lock = _locks.get(obj)
        if lock is None:
            lock = _locks[obj] = threading.Lock()
        return lock


def _static_metas(vals: list) -> list[torch.Tensor] | None:
    """Meta tensors like ``vals`` when each is a tensor of static sizes and strides, else None."""
    out = []
    for v in vals:
        if not isinstance(v, torch.Tensor) or v.layout != torch.strided:
            return None
        shape, stride = v.shape, v.stride()
        if not all(type(d) is int for d in (*shape, *stride)):
            return None
        out.append(torch.empty_strided(shape, stride, dtype=v.dtype, device="meta"))
    return out


def _meta_outputs(plugin: Plugin, vals: list) -> tuple[list[MetaOutput] | str, bool]:
    """The outputs (or what is wrong), and whether the meta_impl ran under a fake mode."""
    # On static shapes a meta_impl runs on meta tensors first: the same meta kernels the fake
    # mode runs, without its dispatch (about half a millisecond a call, as much as the rest
    # of a small model's rewrite). What fails there (a device check, a data-dependent size)
    # runs again under the program's fake mode, whose answer or error counts.
    metas = _static_metas(vals)
    if metas is not None:
        try:
            out = _outputs_of(plugin, plugin.meta_impl(*metas))
            if not isinstance(out, str):
                return out, False
        except Exception:
            pass
    # Exported graphs carry fake tensors; hand-built ones may carry meta tensors, which compute
    # shapes without any mode.
    fake_mode = torch._guards.detect_fake_mode(vals)
    under_fake = fake_mode is not None
    lock = _lock_of(fake_mode) if under_fake else contextlib.nullcontext()
    try:
        with lock, fake_mode if under_fake else contextlib.nullcontext():
            res = plugin.meta_impl(*vals)
        return _outputs_of(plugin, res), under_fake
    except Exception as e:  # the user's meta_impl: report, never crash the rewrite
        return f"{type(e).__name__}: {e}", under_fake


def _outputs_of(plugin: Plugin, res: Any) -> list[MetaOutput] | str:
    """What a meta_impl returned, as MetaOutputs, or what is wrong with it."""
    res = list(res) if isinstance(res, (tuple, list)) else [res]
    bad = next((t for t in res if not isinstance(t, torch.Tensor)), None)
    if bad is not None or not res:
        got = "nothing" if not res else f"a {type(bad).__name__}"
        code = getattr(plugin.meta_impl, "__code__", None)
        where = f" ({code.co_filename}:{code.co_firstlineno})" if code is not None else ""
        return (
            f"meta_impl{where} returned {got}; it must return a tensor, or a tuple of tensors, "
            "shaped like the region's outputs (e.g. x.new_empty(x.shape))"
        )
    return [MetaOutput(graph.dtype_text(t.dtype), tuple(graph.dims(t.shape))) for t in res]


class _Undo:
    """What ``_apply`` did to a graph it edits in place, to be undone (last step first) when a
    later step fails: new nodes erased, rewired readers pointed back, moved nodes moved back.
    Region members are not erased until the rewrite succeeded, so nothing erased needs undoing."""

    def __init__(self, g: torch.fx.Graph) -> None:
        self._g = g
        self._steps: list[Callable[[], Any]] = []

    def created(self, node: torch.fx.Node) -> None:
        self._steps.append(lambda: self._g.erase_node(node))

    def rewired(self, old: torch.fx.Node, new: torch.fx.Node, readers: list[torch.fx.Node]) -> None:
        self._steps.append(lambda: [r.replace_input_with(new, old) for r in readers])

    def moving(self, node: torch.fx.Node) -> None:
        prev = node.prev
        self._steps.append(lambda: prev.append(node))

    def run(self) -> None:
        for step in reversed(self._steps):
            step()
        self._steps.clear()


def _apply(
    g: torch.fx.Graph,
    nodes: dict[str, torch.fx.Node],
    root: torch.nn.Module,
    edits: Sequence[Edit],
    moves: Sequence[Move],
    summary: list[RegionSummary],
    undo: _Undo | None = None,
    named: dict[str, list[str]] | None = None,
) -> tuple[list[torch.fx.Node], list[torch.fx.Node]]:
    """Replay the pass's edits on ``g``, whose nodes ``nodes`` holds by name (kept up to date);
    returns the nodes it added, and the region members left to erase. Without ``undo`` the
    members are erased here (``g`` is a copy, thrown away on failure); with it, ``g`` is the
    caller's graph: every step is logged for undoing, and the members stay in ``g`` until the
    rewrite has succeeded (then the caller erases them). ``named`` gets each region's outputs
    by the user's names (``user_names.py``), read before the members go."""
    added: list[torch.fx.Node] = []
    kept: list[torch.fx.Node] = []
    # An input may be another region's output that an earlier edit already replaced.
    replaced: dict[str, torch.fx.Node] = {}
    regions = {r.id: r for r in summary}
    for e in edits:
        members = [nodes[m] for m in e.remove]
        inputs = [replaced.get(i) or nodes[i] for i in e.inputs]
        outputs = [nodes[o] for o in e.outputs]
        if named is not None:
            named[e.region] = user_names.output_names(outputs)
        region = regions[e.region]
        plugin = lookup(region.impl)
        derived = [(nodes[name], i, dim) for name, i, dim in e.derived]
        op = ops.ensure_op(
            e.op, region.inputs, region.outputs, plugin, lambda: ops.extract_body(root, members, inputs, outputs, derived), launch
        )
        first = members[0]
        with g.inserting_after(nodes[e.after]):
            call = g.create_node("call_function", op, tuple(inputs), {}, name=e.node)
        if undo is not None:
            undo.created(call)
        vals = [o.meta.get("val") for o in outputs]
        call.meta["val"] = vals[0] if len(vals) == 1 else tuple(vals)
        carried = {k: first.meta[k] for k in _CARRIED_META if k in first.meta}
        call.meta.update(carried)
        call.meta["tta"] = {"region": e.region, "op": e.op, "impl": region.impl}
        created = [call]
        prev = call
        for i, name in enumerate(e.getitems):
            with g.inserting_after(prev):
                gi = g.create_node("call_function", operator.getitem, (call, i), {}, name=name)
            if undo is not None:
                undo.created(gi)
            gi.meta["val"] = vals[i]
            gi.meta.update(carried)
            created.append(gi)
            prev = gi
        for n, want in zip(created, [e.node, *e.getitems]):
            if n.name != want:
                _take_name(g, n, want, in_place=undo is not None)
        for old, new in zip(outputs, created[1:] if e.getitems else created):
            readers = old.replace_all_uses_with(new)
            if undo is not None:
                undo.rewired(old, new, readers)
            replaced[old.name] = new
        if undo is None:
            for m in reversed(members):
                g.erase_node(m)
                del nodes[m.name]
        else:
            kept.extend(members)
        nodes.update((n.name, n) for n in created)
        added.extend(created)
    for mv in moves:
        node = nodes[mv.node]
        if undo is not None:
            undo.moving(node)
        nodes[mv.after].append(node)
    return added, kept


def _take_name(g: torch.fx.Graph, node: torch.fx.Node, want: str, in_place: bool) -> None:
    """fx named a new node otherwise than the pass did. In a graph edited in place that is a
    name a node erased before held (fx never gives a name twice; the pass only avoids the names
    of nodes in the graph), and the node takes the pass's name; in a fresh copy it is a bug."""
    names = g._graph_namespace
    if not in_place or not hasattr(names, "_rename_object"):
        raise GraphError(f"fx named the new node {node.name!r} instead of {want!r}", kind="mismatch", node=want)
    node.name = want
    names._rename_object(node, want)


def _graph_of(program: Any, caller: str) -> torch.fx.Graph:
    if isinstance(program, ExportedProgram):
        return program.graph
    if isinstance(program, torch.fx.GraphModule):
        return program.graph
    raise TypeError(f"{caller} takes an ExportedProgram or a GraphModule, got {type(program).__name__}")


def _weight_names(program: Any) -> frozenset[str]:
    """Placeholders holding parameters, buffers and constants (a GraphModule reads those with
    get_attr, which the pass recognizes by itself)."""
    if not isinstance(program, ExportedProgram):
        return frozenset()
    user = (torch.export.graph_signature.InputKind.USER_INPUT, torch.export.graph_signature.InputKind.TOKEN)
    return frozenset(s.arg.name for s in program.graph_signature.input_specs if s.kind not in user and hasattr(s.arg, "name"))


def graph_document(program: Any, caller: str) -> dict:
    """The graph JSON of ``program`` exactly as ``tta.rewrite`` hands it to the pass (region
    markers taken out, weights and marker declarations in)."""
    g = _graph_of(program, caller)
    g = copy_graph(g, codegen=False) if markers.present(g) else g  # taking the markers out changes it
    found, _ = markers.take(g, program.graph_module if isinstance(program, ExportedProgram) else program)
    return json.loads(graph.Serializer(_weight_names(program), markers.declared(found)).graph_json(g, declare_all=True))


def _analyze(
    g: torch.fx.Graph,
    selectors,
    weights: frozenset[str] = frozenset(),
    declared: dict[str, dict] | None = None,
    by_name: dict[str, torch.fx.Node] | None = None,
) -> tuple[core.Analysis, core.FxReader]:
    """Step 1 of the pass on ``g`` with the annotations in it and ``selectors``. ``weights`` and
    ``declared`` (from the region markers) are what the graph alone does not say. The nodes go
    to the pass through a reader (no JSON per node), which can re-read them after edits, and
    fills ``by_name``, when given, with the nodes by name."""
    serializer = graph.Serializer(weights, declared)
    reader = serializer.reader()
    with graph.NoGC():
        reader.read(g.nodes, by_name)
    # A region whose `with` block traced nothing has a marker but no tagged node: it is
    # declared too (`declare_all`), and the pass refuses it as empty.
    header = serializer.header(declare_all=True)
    selectors_doc, selector_impls = _selectors.encode(selectors, g)
    impls = declarations({r["impl"] for r in serializer.regions.values()} | selector_impls)
    return core.analyze(header, impls, selectors_doc, reader=reader), reader


def rewrite(
    program: ExportedProgram | torch.fx.GraphModule,
    *,
    selectors=None,
    check: bool | str = True,
    on_refused: str = "raise",
    check_kernels: bool | None = None,
) -> RewriteResult:
    """Outline every valid region of ``program`` into one ``tta::<op>`` node.

    Regions are the ``lower_as`` annotations plus what ``selectors`` choose: ``tta.lower_pattern``
    results and ``{module type or path prefix: impl}`` mappings (``tta/fx/selectors.py``).

    Returns the rewritten program (same type as given; an ExportedProgram is not modified, a
    GraphModule's own graph is edited, as an fx pass edits it, and recompiled; a failure at any
    step undoes every edit, leaving it as it was) and a report that says, per region, which op
    replaced it or why it was refused. ``check`` has the pass confirm that the edited fx graph
    is exactly the graph it computed: by default from the node order and a re-reading of every
    node that is new or whose inputs or value changed (every other node is verified unchanged
    by identity); ``check="full"`` re-serializes the whole graph.

    A region that cannot be lowered raises ``RegionRefusedError`` listing every refused region
    with its reason and source line (``on_refused="raise"``); ``"warn"`` warns with the same
    text and ``"keep"`` says nothing, both returning a program that runs those regions as
    ordinary ops.

    ``check_kernels``: the rewritten program's ops check their kernel on the first eager call
    of each new signature against the region body, raising ``KernelCheckError`` on a mismatch
    (``tta.runtime.first_use``). Default (None): ``TTA_CHECK_KERNELS`` if set, else on for
    CUDA inputs only (on a CPU the call runs the region body; True runs the kernel under
    Triton's interpreter to check it there).
    """
    refusals.check_choice(on_refused)
    # Two threads rewriting one GraphModule take turns: it is edited in place.
    lock = _lock_of(program.graph) if isinstance(program, torch.fx.GraphModule) else contextlib.nullcontext()
    with lock, graph.NoGC():
        result = _rewrite(program, selectors, check, check_kernels)
    refusals.handle(result, on_refused)
    return result


def _in_place(program: Any, check: bool | str) -> bool:
    """Whether the rewrite edits ``program``'s own graph: a GraphModule's (it gets the rewritten
    graph either way), unless its graph holds region markers (taking them out is an edit with no
    undo) or ``check="full"`` (which serializes the graph without the region members)."""
    return isinstance(program, torch.fx.GraphModule) and check != "full" and not markers.present(program.graph)


def _rewrite(program, selectors, check: bool | str, check_kernels: bool | None = None) -> RewriteResult:
    clock = [time.perf_counter()]
    stages: dict[str, Any] = {}

    def lap(name: str) -> None:
        clock.append(time.perf_counter())
        stages[name + "_s"] = clock[-1] - clock[-2]

    # A failure midway leaves the caller's program as it was: an ExportedProgram's graph is
    # copied (a Graph copy generates no code) and the copy edited; a GraphModule's graph is
    # edited in place with every step logged, undone on failure (`_Undo`), as an fx pass edits
    # it, without the copy (the larger share of a large graph's rewrite).
    in_place = _in_place(program, check)
    root = program.graph_module if isinstance(program, ExportedProgram) else program
    nodes: dict[str, torch.fx.Node] = {}
    if in_place:
        g = program.graph
        found, nested = markers.find(g, root)  # `found` is empty: no markers in `g`
    else:
        # An ExportedProgram's new graph gets a flat code generator (`with_new_graph`), as
        # ExportedProgram's constructor gives it; a GraphModule keeps its own.
        g = copy_graph(_graph_of(program, "tta.rewrite"), nodes, codegen=not isinstance(program, ExportedProgram))
        found, nested = markers.take(g, root)  # the markers' names stay in `nodes`; the pass never names them
    lap("copy")
    weights, declared = _weight_names(program), markers.declared(found)
    analysis, reader = _analyze(g, selectors, weights, declared, by_name=nodes if in_place else None)
    lap("read")
    summary = analysis.summary()
    meta, under_fake = _run_meta_impls(summary, nodes)
    outcome = analysis.outline(meta)
    lap("pass")
    undo = _Undo(g) if in_place else None
    named: dict[str, list[str]] = {}
    try:
        added, members = _apply(g, nodes, root, outcome.edits, outcome.moves, summary, undo, named) if outcome.edits else ([], [])
        lap("apply")
        if check == "full":
            outcome.check_matches(graph.Serializer(weights, declared).graph_json(g))
        elif check:
            outcome.check_fx(reader, g.nodes, members)
        lap("check")
    except BaseException:
        if undo is not None:
            undo.run()
        raise
    for m in reversed(members):
        g.erase_node(m)
    lap("erase")
    # The pass planned the op's outputs with the region outputs' strides; the kernel writes
    # contiguous buffers, and the nodes reading them are traced again to match.
    under_fake |= layout.densify(g, added, _lock_of) if added else False
    lap("layout")
    if not isinstance(program, ExportedProgram) and outcome.edits:
        if in_place:
            program.recompile()
        else:
            program.graph = g  # the setter regenerates the module's code
    lap("recompile")
    # meta_impls that ran on meta tensors only never saw the program's shape environment.
    result = with_new_graph(program, g, added, same_guards=not under_fake) if isinstance(program, ExportedProgram) else program
    lap("wrap")
    regions = outcome.report()
    dims = user_names.dim_names(program) if outcome.edits else {}
    for r in regions:
        if r.outlined and r.op:
            first_use.describe(r.op, r.id, r.source, r.origin.kind, named.get(r.id, ()), dims, check_kernels)
    _selectors.warn_unmatched(selectors, regions, outcome.unmatched())
    vanished = [_in_subgraph(m) for m in nested]
    report_text = outcome.report_text() + "".join(_text(r) for r in vanished)
    lap("report")
    stages["total_s"] = time.perf_counter() - clock[0]
    stages["rust"] = outcome.timings()
    return RewriteResult(program=result, regions=regions + vanished, report_text=report_text, timings=stages)


def _in_subgraph(m: markers.Marker) -> RegionReport:
    """A region traced inside a subgraph (a ``torch.cond`` branch, a ``torch.while_loop`` body):
    export keeps its ops there, out of the graph the pass outlines."""
    reason = (
        f"it was traced inside the subgraph `{m.subgraph}` (a torch.cond branch or another "
        "higher-order op's body), which tta does not outline; put the `with tta.lower_as(...)` "
        "block outside the branch, around the whole torch.cond call or in code without it"
    )
    return RegionReport(
        id=m.id, impl=m.impl, origin=Origin("annotation"), source=m.source, status="refused", nodes=[], inputs=[], outputs=[], reason=reason
    )


def _text(r: RegionReport) -> str:
    return f"region {r.id} [lower_as] impl={r.impl} at {r.source or 'unknown source'}\n  REFUSED: {r.reason}\n"


def find_regions(program: ExportedProgram | torch.fx.GraphModule, selectors=None) -> list[RegionMembers]:
    """The regions ``tta.rewrite(program, selectors=selectors)`` would take, without rewriting:
    each with its id, member nodes and, on regions that would be refused before outlining
    (overlap, not convex, leaked values, unregistered impl), the ``reason``. The impl's
    signature and ``meta_impl`` are not checked here. For inspecting selectors."""
    with graph.NoGC():
        g = _graph_of(program, "tta.find_regions")
        # Only taking the markers out changes the graph; without them it is read as it is.
        g = copy_graph(g, codegen=False) if markers.present(g) else g
        found, _ = markers.take(g, program.graph_module if isinstance(program, ExportedProgram) else program)
        analysis, _ = _analyze(g, selectors, _weight_names(program), markers.declared(found))
        return analysis.members()


def lower_modules(
    target: ExportedProgram | torch.fx.GraphModule | nn.Module,
    mapping: Mapping[type | str, Plugin],
    *,
    example_inputs: Sequence[Any] | None = None,
    example_kwargs: Mapping[str, Any] | None = None,
    dynamic_shapes: Any = None,
    strict: bool = False,
    decompose: bool = True,
    selectors: Sequence[Any] = (),
    check: bool | str = True,
    on_refused: str = "raise",
    check_kernels: bool | None = None,
) -> RewriteResult:
    """Replace every call of the chosen modules by a plugin, without editing the model.

    ``mapping`` maps nn.Module classes and dotted path prefixes to ``tta.custom_plugin``s.
    Given an ExportedProgram (or GraphModule) this is ``tta.rewrite(target, selectors=...)``
    and returns its RewriteResult. Given a plain nn.Module it first exports it with
    ``example_inputs`` (``strict``, ``dynamic_shapes``; then ``run_decompositions()`` unless
    ``decompose=False``) and returns the RewriteResult of that program. ``selectors`` adds
    more selectors (e.g. ``lower_pattern`` results) to the same rewrite.
    """
    items = [_selectors.ModuleSelector(mapping), *_selectors.normalize(selectors)]
    if isinstance(target, nn.Module) and not isinstance(target, torch.fx.GraphModule):
        if example_inputs is None:
            raise TypeError(
                "lower_modules(model, ...) exports the model first and needs example_inputs=(...); "
                "or pass the ExportedProgram from torch.export.export"
            )
        ep = torch.export.export(
            target, tuple(example_inputs), kwargs=dict(example_kwargs or {}), dynamic_shapes=dynamic_shapes, strict=strict
        )
        target = ep.run_decompositions() if decompose else ep
    return rewrite(target, selectors=items, check=check, on_refused=on_refused, check_kernels=check_kernels)
