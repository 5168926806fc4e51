"""The bridge to the Rust core (``tta._core``, typed in ``_core.pyi``).

Every call into the extension goes through this module: it encodes arguments (graphs and
declarations as JSON text: the fast path), hands on the typed result classes the core returns
(``Port``, ``RegionReport``, ``Edit``, ``PtxEntry``, ... from ``_core``), and turns
``_core.CoreError`` into ``GraphError``. The rest of the package never sees JSON text from Rust
or a raw CoreError.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence, TypeVar

from .. import _core
from ..errors import GraphError

_T = TypeVar("_T")


def _compact(doc: Any) -> str:
    return json.dumps(doc, separators=(",", ":"), allow_nan=False, check_circular=False)


def to_jsonable(value: Any) -> Any:
    """The extension's result classes and dataclasses (and lists/dicts of them) as plain JSON
    values, unset fields left out: what ``tta report --json`` prints."""
    if type(value).__module__ == _core.__name__ or (dataclasses.is_dataclass(value) and not isinstance(value, type)):
        # Both list their fields, in order, as __match_args__.
        fields = type(value).__match_args__
        return {f: to_jsonable(getattr(value, f)) for f in fields if getattr(value, f) is not None}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: to_jsonable(v) for k, v in value.items()}
    return value


def translate(exc: _core.CoreError) -> GraphError:
    """A CoreError (args: kind, message, node, source) as the GraphError tta raises."""
    kind, message, node, source = exc.args
    return GraphError(message, kind=kind, node=node, source=source)


def _calls_core(fn: Callable[..., _T]) -> Callable[..., _T]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> _T:
        try:
            return fn(*args, **kwargs)
        except _core.CoreError as e:
            raise translate(e) from None

    return wrapper


# -- results crossing the boundary -------------------------------------------------------------
# Typed classes of the extension (src/python/results.rs, ptx.rs): frozen, a getter per field,
# equal and hashed by field values like the dataclasses they replaced. Python never decodes them.

Port = _core.Port
Origin = _core.Origin
RegionReport = _core.RegionReport
RegionSummary = _core.RegionSummary
RegionMembers = _core.RegionMembers
Edit = _core.Edit
Move = _core.Move


@dataclass(frozen=True)
class MetaOutput:
    """A fake output of a ``meta_impl``, as the pass checks it against the region."""

    dtype: str
    shape: tuple[int | str, ...]


# -- the pass ---------------------------------------------------------------------------------


class Outcome:
    """Step 2's result: the rewritten graph, the edits that make it from the fx graph, and the
    report. ``check_delta``/``check_matches`` confirm an edited fx graph equals it."""

    def __init__(self, raw: _core.Outcome):
        self._raw = raw

    # Built when first read: a caller that only wants the report or the graph (find_regions,
    # `tta report`) never pays for a thousand regions' edits.
    @functools.cached_property
    def edits(self) -> list[Edit]:
        return self._raw.edits()

    @functools.cached_property
    def moves(self) -> list[Move]:
        return self._raw.moves()

    def report(self) -> list[RegionReport]:
        return self._raw.report()

    def report_text(self) -> str:
        return self._raw.report_text()

    def unmatched(self) -> dict[str, str]:
        """Pattern label -> its closest partial match, for each pattern that occurs nowhere."""
        return dict(self._raw.unmatched())

    def graph_json(self) -> str:
        return self._raw.graph_json()

    def graph_text(self) -> str:
        return self._raw.graph_text()

    @_calls_core
    def dot(self, graph_json: str, max_nodes: int = 300, base_dir: str | None = None) -> str:
        """Graphviz DOT of ``graph_json`` (the graph before the rewrite) with each region drawn
        as a cluster beside its plugin node; past ``max_nodes`` only the regions and their
        neighbours are drawn (the picture's title says so). Source paths under ``base_dir``
        are shown relative to it."""
        return self._raw.dot(graph_json, max_nodes, base_dir)

    def timings(self) -> dict[str, float]:
        return self._raw.timings()

    @_calls_core
    def check_fx(self, reader: "FxReader", nodes: Any, skip: Sequence[Any] = ()) -> None:
        """``check_delta`` on the edited fx graph's ``nodes`` themselves: ``reader``, which
        read the graph before the edits, re-reads only the nodes that changed. Nodes in
        ``skip`` (region members a graph edited in place still holds) do not count."""
        self._raw.check_fx(reader._raw, nodes, list(skip))

    @_calls_core
    def check_matches(self, graph_json: str) -> None:
        """Raise GraphError(kind="mismatch") unless ``graph_json`` is the rewritten graph."""
        self._raw.check_matches(graph_json)


class Analysis:
    """Step 1's result. ``outline`` consumes it."""

    def __init__(self, raw: _core.Analysis):
        self._raw = raw

    @_calls_core
    def summary(self) -> list[RegionSummary]:
        return self._raw.summary()

    @_calls_core
    def members(self) -> list[RegionMembers]:
        return self._raw.members()

    @_calls_core
    def outline(self, meta: Mapping[str, Sequence[MetaOutput] | str] | None = None) -> Outcome:
        """Step 2. ``meta`` maps region ids to their ``meta_impl``'s outputs, or to the error
        text it raised."""
        return Outcome(self._raw.outline(_compact(meta_document(meta or {}))))


def meta_document(meta: Mapping[str, Sequence[MetaOutput] | str]) -> dict:
    """``meta_impl`` results as JSON: region id -> {"ok": [{"dtype", "shape"}]} or {"error"}."""
    return {
        rid: {"error": v} if isinstance(v, str) else {"ok": [{"dtype": o.dtype, "shape": list(o.shape)} for o in v]}
        for rid, v in meta.items()
    }


def decode_meta(doc: Mapping[str, Any]) -> dict[str, list[MetaOutput] | str]:
    """The inverse of ``meta_document`` (a graph file's ``"meta"``)."""
    return {rid: v["error"] if "error" in v else [MetaOutput(o["dtype"], tuple(o["shape"])) for o in v["ok"]] for rid, v in doc.items()}


class FxReader:
    """Reads an fx graph's nodes straight into the pass (``src/python/fx.rs``), as ``facts``
    (a ``graph.Serializer``, whose helpers say what targets, values and stacks mean) would
    write them; then, after the edits, the nodes that changed (``Outcome.check_fx``)."""

    def __init__(self, facts: Any, weights: frozenset[str] = frozenset()):
        import torch
        import torch.fx

        self._raw = _core.FxReader(facts, torch.fx.Node, torch.Tensor, torch.SymInt, torch.strided, sorted(weights))

    @_calls_core
    def read(self, nodes: Any, by_name: dict | None = None) -> None:
        """Read ``nodes`` (``graph.nodes``) for the next ``analyze(..., reader=self)``; fill
        ``by_name``, when given, with the nodes by name."""
        self._raw.read(nodes, by_name)

    @_calls_core
    def nodes(self) -> list[dict]:
        """The nodes read, as graph JSON's ``"nodes"`` (for tests and debugging)."""
        return json.loads(self._raw.nodes_json()) or []


@_calls_core
def analyze(
    graph_json: str,
    impls: Mapping[str, Any],
    selectors: Mapping[str, Any] | None = None,
    nodes: Sequence[str] | None = None,
    reader: FxReader | None = None,
) -> Analysis:
    """Step 1 of the pass on a graph JSON text (docs/graph-format.md): verify, collect regions
    (annotations, and the module/pattern ``selectors`` document), validate them. With
    ``nodes`` (each node's JSON text), ``graph_json`` is the document without its nodes
    (``Serializer.graph_parts``); with ``reader``, the nodes are those it read from the fx graph
    (``graph_json`` is then ``Serializer.header()``)."""
    sel = None if selectors is None else _compact(selectors)
    return Analysis(_core.analyze(graph_json, _compact(dict(impls)), sel, nodes, None if reader is None else reader._raw))


# -- shape expressions ------------------------------------------------------------------------


@_calls_core
def canonical_expr(text: str) -> str:
    """Canonical text of a shape expression."""
    return _core.canonical_expr(text)


@_calls_core
def eval_expr(text: str, env: Mapping[str, int]) -> int:
    """The value of a shape expression for these symbol values."""
    return int(_core.eval_expr(text, _compact(dict(env))))


@_calls_core
def trtp_expr(text: str, leaves: Mapping[str, str] | None = None) -> str:
    """The expression in trtp's shape arithmetic; ``leaves`` maps symbols to Python source."""
    return _core.trtp_expr(text, _compact(dict(leaves or {})))


# -- PTX and CUBIN ----------------------------------------------------------------------------


PtxParam = _core.PtxParam
PtxEntry = _core.PtxEntry
PtxModule = _core.PtxModule
QdpSlots = _core.QdpSlots
CubinParam = _core.CubinParam


@_calls_core
def ptx_parse(ptx: str) -> PtxModule:
    """Header and entries of a PTX module."""
    return _core.ptx_parse(ptx)


ParamRole = tuple[str, int]
"""A kernel parameter's place in TensorRT's launch: ("input" | "extra" | "output", index)."""


@_calls_core
def qdp_layout(roles: Sequence[ParamRole]) -> tuple[list[int], QdpSlots]:
    """The permutation into the QDP order (new i = old order[i]) and the slots of parameters
    with these roles, in declaration order."""
    return _core.ptx_qdp_layout(_compact([list(r) for r in roles]))


@_calls_core
def check_qdp_roles(roles: Sequence[ParamRole], inputs: int, outputs: int) -> None:
    """Raise unless parameters with these roles take each of the ``inputs`` inputs and
    ``outputs`` outputs exactly once (TensorRT passes one pointer for each)."""
    _core.ptx_check_qdp_roles(_compact([list(r) for r in roles]), inputs, outputs)


@_calls_core
def ptx_to_qdp_abi(
    ptx: str,
    entry: str,
    *,
    roles: Sequence[ParamRole] | None = None,
    slots: QdpSlots | None = None,
    trailing_scratch: Sequence[int] = (),
    max_version: str | None = None,
) -> tuple[str, PtxEntry]:
    """All QDP changes at once: drop trailing scratch parameters (sizes must be 0), put the
    parameters in the QDP order their ``roles`` give, check each slot's kind (against the
    roles' slots, or ``slots`` for a kernel already in order), check ``.version``.
    Returns the new PTX and its entry."""
    spec: dict[str, Any] = {"entry": entry, "trailing_scratch": list(trailing_scratch)}
    if roles is not None:
        spec["roles"] = [list(r) for r in roles]
    if slots is not None:
        spec["slots"] = slots.encode()
    if max_version is not None:
        spec["max_version"] = max_version
    return _core.ptx_to_qdp_abi(ptx, _compact(spec))


@_calls_core
def check_cubin_slots(cubin: bytes, entry: str, slots: QdpSlots) -> None:
    """Raise unless the parameter layout ptxas recorded for ``entry`` is TensorRT's for
    ``slots``: 8-byte pointers around 4-byte int32 extras."""
    _core.ptx_check_cubin_slots(cubin, entry, slots)


@_calls_core
def ptx_relabel_version(ptx: str, to: str) -> str:
    """``.version`` lowered to ``to`` ("9.0") and ``.language`` dropped (a cuTile tile kernel
    becomes a plain one); entries with hidden parameters are refused."""
    return _core.ptx_relabel_version(ptx, to)


@_calls_core
def ptx_drop_arch_suffix(ptx: str) -> str:
    """``.target sm_90a`` -> ``.target sm_90``; text without the suffix comes back unchanged."""
    return _core.ptx_drop_arch_suffix(ptx)


@_calls_core
def ptx_from_cubin(cubin: bytes) -> str:
    """The PTX tileiras embedded in a cuTile CUBIN."""
    return _core.ptx_from_cubin(cubin)


@_calls_core
def cubin_params(cubin: bytes, entry: str) -> list[CubinParam]:
    """Parameter layout of kernel ``entry`` in a CUBIN, in parameter order."""
    return sorted(_core.ptx_cubin_params(cubin, entry), key=lambda p: p.ordinal)


@_calls_core
def max_isa_for_driver(cuda: str) -> str | None:
    """The newest PTX ISA a CUDA driver accepts ("13.0" -> "9.0"), None outside the table."""
    return _core.ptx_max_isa_for_driver(cuda)


@_calls_core
def ptx_stored_params(ptx: str, entry: str) -> list[int]:
    """Indices of the parameters of ``entry`` the kernel may store through."""
    return list(_core.ptx_stored_params(ptx, entry))


def ptx_instruction_forms(ptx: str) -> list[str]:
    """The module's opcodes with their qualifiers, special registers and entry directives: what
    decides whether an assembler accepts it for a target."""
    return list(_core.ptx_instruction_forms(ptx))
