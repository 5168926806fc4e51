"""The bridge to the Rust core (``tta._core``, typed in ``_core.pyi``).

Every call into the extension goes through this module: it encodes arguments, decodes the
JSON the core returns into the dataclasses below, and turns ``_core.CoreError`` into
``GraphError``. The rest of the package never sees JSON text from Rust or a raw CoreError.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence, TypeVar

from .. import _core
from ..errors import GraphError

_T = TypeVar("_T")


def _compact(doc: Any) -> str:
    return json.dumps(doc, separators=(",", ":"), allow_nan=False, check_circular=False)


def to_jsonable(value: Any) -> Any:
    """Dataclasses from here (and lists/dicts of them) as plain JSON values, unset fields left
    out: what ``tta report --json`` prints."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value) if getattr(value, f.name) is not None}
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


def _frozen(cls: type[_T], **fields: Any) -> _T:
    """An instance of the frozen dataclass ``cls`` with every field given: what its ``__init__``
    makes, without one ``object.__setattr__`` call per field (decoding a report makes
    thousands of ports)."""
    obj = object.__new__(cls)
    obj.__dict__.update(fields)
    return obj


# -- graph values crossing the boundary -------------------------------------------------------


@dataclass(frozen=True)
class Port:
    """A value crossing a region's boundary: a tensor (``dtype``, ``shape``) or an integer
    (``expr``) produced outside the region. ``name`` is the node producing it."""

    name: str
    kind: str  # "tensor" | "sym_int"
    dtype: str | None = None
    shape: tuple[int | str, ...] = ()
    expr: str | None = None
    mutated: bool = False

    @property
    def is_tensor(self) -> bool:
        return self.kind == "tensor"

    @staticmethod
    def decode(d: Mapping[str, Any]) -> "Port":
        if d["kind"] == "tensor":
            return _frozen(
                Port, name=d["name"], kind="tensor", dtype=d["dtype"], shape=tuple(d["shape"]), expr=None, mutated=d.get("mutated", False)
            )
        return _frozen(Port, name=d["name"], kind=d["kind"], dtype=None, shape=(), expr=d["expr"], mutated=d.get("mutated", False))

    def signature(self) -> tuple:
        """What makes two ports interchangeable for a plugin (everything but the node name)."""
        return (self.kind, self.dtype, self.shape, self.expr, self.mutated)


@dataclass(frozen=True)
class Origin:
    """What chose a region: a ``lower_as`` annotation, a module selector or a pattern."""

    kind: str  # "annotation" | "module" | "pattern"
    selector: str | None = None  # module selectors: the type or path prefix
    path: str | None = None  # module selectors: the module's path
    pattern: str | None = None  # pattern selectors: the pattern's name

    @staticmethod
    def decode(d: Mapping[str, Any]) -> "Origin":
        return _frozen(Origin, kind=d["kind"], selector=d.get("selector"), path=d.get("path"), pattern=d.get("pattern"))


@dataclass(frozen=True)
class RegionSummary:
    """A region between the two steps of the pass: its boundary, for running ``meta_impl``."""

    id: str
    impl: str
    valid: bool
    inputs: tuple[Port, ...]
    outputs: tuple[Port, ...]


@dataclass(frozen=True)
class RegionMembers:
    """A region's member nodes, and why it was refused before outlining (None when valid)."""

    id: str
    nodes: tuple[str, ...]
    reason: str | None = None


@dataclass
class RegionReport:
    """The pass's verdict on one region: the op that replaced it, or why it was refused."""

    id: str
    impl: str
    origin: Origin
    source: str | None
    status: str  # "outlined" | "refused"
    nodes: list[str]
    inputs: list[Port]
    outputs: list[Port]
    reason: str | None = None
    op: str | None = None
    node: str | None = None
    # Export's untagged checks of a value inside the region (assertions and the nodes only they
    # read, such as `sym_size` -> `le`), taken into it.
    absorbed: list[str] = field(default_factory=list)

    @property
    def outlined(self) -> bool:
        return self.status == "outlined"

    @staticmethod
    def decode(d: Mapping[str, Any]) -> "RegionReport":
        return RegionReport(
            id=d["id"],
            impl=d["impl"],
            origin=Origin.decode(d["origin"]),
            source=d.get("source"),
            status=d["status"],
            nodes=list(d["nodes"]),
            inputs=[Port.decode(p) for p in d["inputs"]],
            outputs=[Port.decode(p) for p in d["outputs"]],
            reason=d.get("reason"),
            op=d.get("op"),
            node=d.get("node"),
            absorbed=list(d.get("absorbed", ())),
        )


@dataclass(frozen=True)
class Edit:
    """One outlined region, as the fx graph replays it: insert ``node`` (a call of ``op`` on
    ``inputs``) after ``after``, then ``getitems``; point readers of ``outputs`` at them; erase
    ``remove``."""

    region: str
    op: str
    node: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    getitems: tuple[str, ...]
    mutated: tuple[int, ...]
    after: str
    remove: tuple[str, ...]
    # Sizes the region reads that the op derives from an input's shape: (node, input number, dim).
    derived: tuple[tuple[str, int, int], ...] = ()


@dataclass(frozen=True)
class Move:
    """After every edit: ``node`` goes right after ``after`` (a reader sat between members)."""

    node: str
    after: str


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

    # Decoded when first read: a caller that only wants the report or the graph (find_regions,
    # `tta report`) never pays for a thousand regions' edits.
    @functools.cached_property
    def _edits_doc(self) -> dict:
        return json.loads(self._raw.edits_json())

    @functools.cached_property
    def edits(self) -> list[Edit]:
        return [
            Edit(
                e["region"],
                e["op"],
                e["node"],
                tuple(e["inputs"]),
                tuple(e["outputs"]),
                tuple(e["getitems"]),
                tuple(e["mutated"]),
                e["after"],
                tuple(e["remove"]),
                tuple((d["node"], d["input"], d["dim"]) for d in e.get("derived", ())),
            )
            for e in self._edits_doc["edits"]
        ]

    @functools.cached_property
    def moves(self) -> list[Move]:
        return [Move(m["node"], m["after"]) for m in self._edits_doc["moves"]]

    def report(self) -> list[RegionReport]:
        return [RegionReport.decode(r) for r in json.loads(self._raw.report_json())]

    def report_text(self) -> str:
        return self._raw.report_text()

    def unmatched(self) -> dict[str, str]:
        """Pattern label -> its closest partial match, for each pattern that occurs nowhere."""
        return {u["pattern"]: u["closest"] for u in json.loads(self._raw.unmatched_json())}

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
        return json.loads(self._raw.timings_json())

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
        return [
            _frozen(
                RegionSummary,
                id=r["id"],
                impl=r["impl"],
                valid=r["valid"],
                inputs=tuple(Port.decode(p) for p in r["inputs"]),
                outputs=tuple(Port.decode(p) for p in r["outputs"]),
            )
            for r in json.loads(self._raw.summary_json())
        ]

    @_calls_core
    def members(self) -> list[RegionMembers]:
        return [
            _frozen(RegionMembers, id=r["id"], nodes=tuple(r["nodes"]), reason=r.get("reason"))
            for r in json.loads(self._raw.members_json())
        ]

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


@dataclass(frozen=True)
class PtxParam:
    name: str
    ty: str  # ".u64", ".u32", ".b8" (byte arrays) ...
    size: int
    array_len: int | None = None
    align: int | None = None
    ptr_space: str | None = None  # ".global" for a ``.ptr.global`` pointer
    is_ptr: bool = False
    hidden: bool = False  # a parameter the compiler added (not in the user's signature)


@dataclass(frozen=True)
class PtxEntry:
    name: str
    visible: bool
    params: tuple[PtxParam, ...]
    reqntid: tuple[int, ...] | None
    maxntid: tuple[int, ...] | None
    language: int | None
    directives: tuple[str, ...]


@dataclass(frozen=True)
class PtxModule:
    version: str
    target: tuple[str, ...]
    address_size: int | None
    entries: tuple[PtxEntry, ...]
    has_intermediate_source: bool

    def entry(self, name: str) -> PtxEntry:
        for e in self.entries:
            if e.name == name:
                return e
        raise KeyError(name)


def _entry(e: Mapping[str, Any]) -> PtxEntry:
    params = tuple(
        PtxParam(
            p["name"],
            p["ty"],
            p["size"],
            p.get("array_len"),
            p.get("align"),
            (p.get("ptr") or {}).get("space"),
            p.get("ptr") is not None,
            p.get("hidden", False),
        )
        for p in e["params"]
    )
    opt = lambda v: None if v is None else tuple(v)  # noqa: E731
    return PtxEntry(
        e["name"], e["visible"], params, opt(e.get("reqntid")), opt(e.get("maxntid")), e.get("language"), tuple(e.get("directives", ()))
    )


@_calls_core
def ptx_parse(ptx: str) -> PtxModule:
    """Header and entries of a PTX module."""
    d = json.loads(_core.ptx_parse(ptx))
    return PtxModule(
        d["version"],
        tuple(d["target"]),
        d.get("address_size"),
        tuple(_entry(e) for e in d["entries"]),
        d.get("has_intermediate_source", False),
    )


@dataclass(frozen=True)
class QdpSlots:
    """How many parameters of each kind the QDP order has: (inputs, extras, outputs)."""

    inputs: int
    extras: int
    outputs: int

    def encode(self) -> dict[str, int]:
        return {"inputs": self.inputs, "extras": self.extras, "outputs": self.outputs}


ParamRole = tuple[str, int]
"""A kernel parameter's place in TensorRT's launch: ("input" | "extra" | "output", index)."""


@_calls_core
def qdp_layout(roles: Sequence[ParamRole]) -> tuple[list[int], QdpSlots]:
    """The permutation into the QDP order (new i = old order[i]) and the slots of parameters
    with these roles, in declaration order."""
    d = json.loads(_core.ptx_qdp_layout(_compact([list(r) for r in roles])))
    return d["order"], QdpSlots(**d["slots"])


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
    out = json.loads(_core.ptx_to_qdp_abi(ptx, _compact(spec)))
    return out["ptx"], _entry(out["entry"])


@_calls_core
def check_cubin_slots(cubin: bytes, entry: str, slots: QdpSlots) -> None:
    """Raise unless the parameter layout ptxas recorded for ``entry`` is TensorRT's for
    ``slots``: 8-byte pointers around 4-byte int32 extras."""
    _core.ptx_check_cubin_slots(cubin, entry, _compact(slots.encode()))


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


@dataclass(frozen=True)
class CubinParam:
    ordinal: int
    offset: int
    size: int


@_calls_core
def cubin_params(cubin: bytes, entry: str) -> list[CubinParam]:
    """Parameter layout of kernel ``entry`` in a CUBIN, in parameter order."""
    params = [CubinParam(p["ordinal"], p["offset"], p["size"]) for p in json.loads(_core.ptx_cubin_params(cubin, entry))]
    return sorted(params, key=lambda p: p.ordinal)


@_calls_core
def max_isa_for_driver(cuda: str) -> str | None:
    """The newest PTX ISA a CUDA driver accepts ("13.0" -> "9.0"), None outside the table."""
    return _core.ptx_max_isa_for_driver(cuda)


@_calls_core
def ptx_stored_params(ptx: str, entry: str) -> list[int]:
    """Indices of the parameters of ``entry`` the kernel may store through."""
    return list(_core.ptx_stored_params(ptx, entry))
