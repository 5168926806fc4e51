"""Types of the Rust extension (``src/python/``). Only ``tta.common.bridge`` calls it. Graphs,
declarations and other arguments go in as JSON text, bytes or plain values (``FxReader`` reads
fx graph nodes themselves); results come back as the frozen classes below, whose attributes
are getters. ``tests/python/test_core_stub.py`` checks this file against the built extension."""

from typing import Any, ClassVar, Iterable, final

# -- pass results (src/python/results.rs): equal by field values; all but RegionReport hash ----

@final
class Port:
    """A value crossing a region's boundary: a tensor (``dtype``, ``shape``) or an integer
    (``expr``) produced outside the region. ``name`` is the node producing it."""

    __match_args__: ClassVar[tuple[str, ...]]
    name: str
    kind: str  # "tensor" | "sym_int"
    dtype: str | None
    shape: tuple[int | str, ...]
    expr: str | None
    mutated: bool
    def __init__(
        self,
        name: str,
        kind: str,
        dtype: str | None = None,
        shape: Iterable[int | str] | None = None,
        expr: str | None = None,
        mutated: bool = False,
    ) -> None: ...
    @property
    def is_tensor(self) -> bool: ...
    def signature(self) -> tuple[str, str | None, tuple[int | str, ...], str | None, bool]: ...

@final
class Origin:
    """What chose a region: a ``lower_as`` annotation, a module selector or a pattern."""

    __match_args__: ClassVar[tuple[str, ...]]
    kind: str  # "annotation" | "module" | "pattern"
    selector: str | None
    path: str | None
    pattern: str | None
    def __init__(self, kind: str, selector: str | None = None, path: str | None = None, pattern: str | None = None) -> None: ...

@final
class RegionReport:
    """The pass's verdict on one region: the op that replaced it, or why it was refused."""

    __match_args__: ClassVar[tuple[str, ...]]
    id: str
    impl: str
    origin: Origin
    source: str | None
    status: str  # "outlined" | "refused"
    nodes: list[str]
    inputs: list[Port]
    outputs: list[Port]
    reason: str | None
    op: str | None
    node: str | None
    absorbed: list[str]
    def __init__(
        self,
        id: str,
        impl: str,
        origin: Origin,
        source: str | None,
        status: str,
        nodes: Iterable[str],
        inputs: Iterable[Port],
        outputs: Iterable[Port],
        reason: str | None = None,
        op: str | None = None,
        node: str | None = None,
        absorbed: Iterable[str] | None = None,
    ) -> None: ...
    @property
    def outlined(self) -> bool: ...

@final
class RegionSummary:
    """A region between the two steps of the pass: its boundary, for running ``meta_impl``."""

    __match_args__: ClassVar[tuple[str, ...]]
    id: str
    impl: str
    valid: bool
    inputs: tuple[Port, ...]
    outputs: tuple[Port, ...]

@final
class RegionMembers:
    """A region's member nodes, and why it was refused before outlining (None when valid)."""

    __match_args__: ClassVar[tuple[str, ...]]
    id: str
    nodes: tuple[str, ...]
    reason: str | None

@final
class Edit:
    """One outlined region, as the fx graph replays it."""

    __match_args__: ClassVar[tuple[str, ...]]
    region: str
    op: str
    node: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    getitems: tuple[str, ...]
    mutated: tuple[int, ...]
    after: str
    remove: tuple[str, ...]
    derived: tuple[tuple[str, int, int], ...]  # (node, input number, dim)

@final
class Move:
    """After every edit: ``node`` goes right after ``after``."""

    __match_args__: ClassVar[tuple[str, ...]]
    node: str
    after: str

# -- PTX results (src/python/ptx.rs) -----------------------------------------------------------

@final
class PtxParam:
    __match_args__: ClassVar[tuple[str, ...]]
    name: str
    ty: str
    size: int
    array_len: int | None
    align: int | None
    ptr_space: str | None
    is_ptr: bool
    hidden: bool

@final
class PtxEntry:
    __match_args__: ClassVar[tuple[str, ...]]
    name: str
    visible: bool
    params: tuple[PtxParam, ...]
    reqntid: tuple[int, ...] | None
    maxntid: tuple[int, ...] | None
    language: int | None
    directives: tuple[str, ...]

@final
class PtxModule:
    __match_args__: ClassVar[tuple[str, ...]]
    version: str
    target: tuple[str, ...]
    address_size: int | None
    entries: tuple[PtxEntry, ...]
    has_intermediate_source: bool
    def entry(self, name: str) -> PtxEntry: ...

@final
class QdpSlots:
    """How many parameters of each kind the QDP order has."""

    __match_args__: ClassVar[tuple[str, ...]]
    inputs: int
    extras: int
    outputs: int
    def __init__(self, inputs: int, extras: int, outputs: int) -> None: ...
    def encode(self) -> dict[str, int]: ...

@final
class CubinParam:
    __match_args__: ClassVar[tuple[str, ...]]
    ordinal: int
    offset: int
    size: int

# -- the pass ----------------------------------------------------------------------------------

class CoreError(Exception):
    """``args == (kind, message, node, source)``; kind is one of "parse", "verify", "input",
    "mismatch", "ptx"; node and source (``file:line``) may be None."""

    args: tuple[str, str, str | None, str | None]

@final
class Analysis:
    """Step 1 of the pass; consumed by ``outline``."""

    def summary(self) -> list[RegionSummary]: ...
    def members(self) -> list[RegionMembers]: ...
    def outline(self, meta_json: str) -> Outcome: ...

@final
class Outcome:
    """Step 2 of the pass: rewritten graph, edits, report."""

    def edits(self) -> list[Edit]: ...
    def moves(self) -> list[Move]: ...
    def report(self) -> list[RegionReport]: ...
    def unmatched(self) -> list[tuple[str, str]]: ...
    def report_text(self) -> str: ...
    def graph_json(self) -> str: ...
    def graph_text(self) -> str: ...
    def dot(self, graph_json: str, max_nodes: int, base_dir: str | None = None) -> str: ...
    def timings(self) -> dict[str, float]: ...
    def check_fx(self, reader: FxReader, nodes: Iterable[Any], skip: list[Any] = ...) -> None: ...
    def check_matches(self, graph_json: str) -> None: ...

@final
class FxReader:
    """Reads fx graph nodes into the pass; ``facts`` is a ``tta.fx.serialize.Serializer``."""

    def __init__(self, facts: Any, node_type: type, tensor_type: type, sym_int_type: type, strided: Any, weights: list[str]) -> None: ...
    def read(self, nodes: Iterable[Any], by_name: dict[str, Any] | None = None) -> None: ...
    def nodes_json(self) -> str: ...

def analyze(
    graph_json: str, impls_json: str, selectors_json: str | None = None, nodes: list[str] | None = None, reader: FxReader | None = None
) -> Analysis: ...
def canonical_expr(text: str) -> str: ...
def eval_expr(text: str, env_json: str) -> int: ...
def trtp_expr(text: str, leaves_json: str) -> str: ...
def ptx_parse(ptx_text: str) -> PtxModule: ...
def ptx_permute_params(ptx_text: str, entry: str, order_json: str) -> str: ...
def ptx_drop_trailing_scratch(ptx_text: str, entry: str, sizes_json: str) -> str: ...
def ptx_check_version(ptx_text: str, max_version: str) -> None: ...
def ptx_relabel_version(ptx_text: str, to: str) -> str: ...
def ptx_drop_arch_suffix(ptx_text: str) -> str: ...
def ptx_to_qdp_abi(ptx_text: str, spec_json: str) -> tuple[str, PtxEntry]: ...
def ptx_qdp_layout(roles_json: str) -> tuple[list[int], QdpSlots]: ...
def ptx_check_qdp_roles(roles_json: str, inputs: int, outputs: int) -> None: ...
def ptx_check_cubin_slots(cubin: bytes, entry: str, slots: QdpSlots) -> None: ...
def ptx_from_cubin(cubin: bytes) -> str: ...
def ptx_cubin_params(cubin: bytes, entry: str) -> list[CubinParam]: ...
def ptx_max_isa_for_driver(cuda: str) -> str | None: ...
def ptx_stored_params(ptx_text: str, entry: str) -> list[int]: ...
def ptx_instruction_forms(ptx_text: str) -> list[str]: ...
