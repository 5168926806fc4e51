"""torch.fx graph -> graph JSON (docs/graph-format.md), the input of the Rust pass.

Written for speed, close to the cost of walking the fx graph: node text is assembled from
pieces computed once per target (name, written arguments, views), per tensor shape, per
``nn_module_stack`` and per stack trace, without building a dict per node.
"""

from __future__ import annotations

import gc
import json
import math
from typing import Any

import torch
import torch.fx
from torch.fx.immutable_collections import immutable_list

from ..common.source import first_user_frame
from ..declare.markers import TAG_PREFIX

FORMAT = "tta-graph"
VERSION = 1


def target_name(target: Any) -> str:
    """Qualified name of a node target: ``aten.add.Tensor``, ``_operator.getitem``, ..."""
    if isinstance(target, str):
        return target
    if isinstance(target, torch._ops.OpOverload):
        ns, rest = target.name().split("::", 1)
        name, _, overload = rest.partition(".")
        return f"{ns}.{name}.{overload or 'default'}"
    if isinstance(target, torch._ops.HigherOrderOperator):
        return f"higher_order.{target.name()}"
    module = getattr(target, "__module__", None) or "builtins"
    return f"{module}.{getattr(target, '__qualname__', getattr(target, '__name__', repr(target)))}"


def _schema_effects(target: Any) -> tuple[list[str], bool]:
    """(arguments the op writes, whether an output aliases an input) from the op schema."""
    schema = getattr(target, "_schema", None)
    if schema is None:
        return [], False
    writes = []
    for i, a in enumerate(schema.arguments):
        if a.alias_info is not None and a.alias_info.is_write:
            writes.append(a.name if a.kwarg_only else str(i))
    aliases = any(r.alias_info is not None for r in schema.returns)
    return writes, aliases


_DTYPES: dict[torch.dtype, str] = {}
# sympy's printer is slow and the same few expressions recur on every node of a dynamic graph.
_EXPR_TEXT: dict[Any, int | str] = {}


def dtype_text(d: torch.dtype) -> str:
    """``torch.float32`` -> ``"float32"``."""
    name = _DTYPES.get(d)
    if name is None:
        name = _DTYPES[d] = str(d)[6:]  # "torch.float32" -> "float32"
    return name


def _dim(d) -> int | str:
    if type(d) is int:
        return d
    expr = d.node.expr
    text = _EXPR_TEXT.get(expr)
    if text is None:
        text = _EXPR_TEXT[expr] = int(expr) if expr.is_number else str(expr)
    return text


def dims(ds) -> list:
    """Sizes as the graph format writes them: ints, and expression text for symbolic ones."""
    out = list(ds)
    for i, d in enumerate(out):
        if type(d) is not int:
            out[i] = _dim(d)
    return out


def encode_value(v: Any) -> Any:
    """``node.meta["val"]`` -> JSON."""
    if isinstance(v, torch.Tensor):
        out = {"dtype": dtype_text(v.dtype), "shape": dims(v.shape)}
        if v.layout == torch.strided:
            out["stride"] = dims(v.stride())
        return out
    if v is None or isinstance(v, (bool, str)):
        return v if not isinstance(v, str) else {"opaque": v}
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else {"float": _special(v)}
    if isinstance(v, (list, tuple)):
        return [encode_value(x) for x in v]
    if isinstance(v, torch.SymInt):
        d = _dim(v)
        return d if isinstance(d, int) else {"sym": d}
    return {"opaque": type(v).__name__}


def _special(x: float) -> str:
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")


def encode_arg(a: Any) -> Any:
    """A node argument -> JSON."""
    if isinstance(a, torch.fx.Node):
        return {"ref": a.name}
    if a is None or isinstance(a, (bool, int, str)):
        return a
    if isinstance(a, float):
        return a if math.isfinite(a) else {"float": _special(a)}
    if isinstance(a, (list, tuple)):
        return [encode_arg(x) for x in a]
    if isinstance(a, torch.dtype):
        return {"dtype": dtype_text(a)}
    if isinstance(a, torch.device):
        return {"device": str(a)}
    if isinstance(a, torch.layout):
        return {"layout": str(a)[6:]}
    if isinstance(a, torch.memory_format):
        return {"memory_format": str(a)[6:]}
    if isinstance(a, slice):
        return {"slice": [encode_arg(a.start), encode_arg(a.stop), encode_arg(a.step)]}
    return {"opaque": repr(a)[:200]}


def module_type(t: Any) -> str:
    """The qualified name module selectors and ``nn_module_stack`` entries use."""
    if isinstance(t, str):
        return t
    return f"{t.__module__}.{t.__qualname__}"


def _module_entry(key: str, path: str, t: Any) -> dict:
    """One ``nn_module_stack`` entry; torch.export suffixes the key of a repeated call of the
    same module with ``@N``, which becomes ``call`` (the module-type selector keeps calls apart)."""
    entry = {"path": path, "type": module_type(t)}
    _, at, call = key.rpartition("@")
    if at and call.isdigit() and int(call) > 0:
        entry["call"] = int(call)
    return entry


def _module_entries(stack: dict) -> list[dict]:
    return [_module_entry(k, p, t) for k, (p, t) in stack.items()]


def _document(nodes: str, regions: str) -> str:
    return '{"format":"' + FORMAT + '","version":' + str(VERSION) + ',"nodes":[' + nodes + "]" + regions + "}"


class _TargetInfo:
    __slots__ = ("name", "writes", "aliases")

    def __init__(self, target: Any):
        self.name = target_name(target)
        self.writes, self.aliases = _schema_effects(target)


class NoGC:
    """Pause the cyclic GC: building ~1M small containers next to a large fx graph otherwise
    triggers full collections that cost more than the work itself. Re-entrant.

    On the way out, when many objects were made (a large graph's copy), they join the oldest
    generation (``gc.freeze`` then ``gc.unfreeze``, two list splices) instead of waiting for the
    next young collection, which would walk every one of them (100-200 ms on 100k nodes) only
    to find them alive. The caller's own young objects move with them (there is no moving
    some): all stay collectable, and a cycle among them is freed by the next full collection
    instead of a young one. Objects a caller froze itself are left frozen: then nothing is
    moved."""

    def __enter__(self):
        self.was = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc):
        if self.was:
            if gc.get_count()[0] > _MANY_OBJECTS and gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()


# Objects made while the collector was off past which `NoGC` moves them to the oldest
# generation: a young collection of this many costs about a millisecond.
_MANY_OBJECTS = 10_000


def _json(v: Any) -> str:
    return json.dumps(v, separators=(",", ":"), allow_nan=False, check_circular=False)


def _text(s: str) -> str:
    """A JSON string literal; fx names and targets are nearly always plain identifiers, which
    need no escaping."""
    if s.isascii() and s.isidentifier():
        return '"' + s + '"'
    return json.dumps(s)


# The JSON of a tensor value by (dtype, sizes, strides): exported graphs repeat a few shapes
# on thousands of nodes, and each node has its own fake tensor.
_VAL_TEXT: dict[tuple, str] = {}


def value_text(v: Any) -> str:
    """``node.meta["val"]`` -> JSON text."""
    if isinstance(v, torch.Tensor):
        strided = v.layout == torch.strided
        try:
            key = (v.dtype, v.shape, v.stride() if strided else None)
            hit = _VAL_TEXT.get(key)
        except TypeError:  # symbolic sizes do not hash
            key, hit = None, None
        if hit is None:
            hit = _json(encode_value(v))
            if key is not None:
                _VAL_TEXT[key] = hit
        return hit
    if type(v) is tuple or type(v) is list:
        return "[" + ",".join([value_text(x) for x in v]) + "]"
    return _json(encode_value(v))


_Node = torch.fx.Node


def arg_text(a: Any) -> str:
    """A node argument -> JSON text (``encode_arg``'s JSON)."""
    if isinstance(a, _Node):
        return '{"ref":' + _text(a.name) + "}"
    t = type(a)
    if t is int:
        return str(a)
    if t is float and a - a == 0:  # finite: JSON's own float text
        return float.__repr__(a)
    if t is tuple or t is list or t is immutable_list:
        return "[" + ",".join([arg_text(x) for x in a]) + "]"
    if a is None:
        return "null"
    if t is str:
        return _text(a)
    if t is bool:
        return "true" if a else "false"
    try:
        hit = _LITERAL_TEXT.get((t, a))
    except TypeError:
        return _json(encode_arg(a))
    if hit is None:
        hit = _json(encode_arg(a))
        if t in _CACHED_LITERALS:
            _LITERAL_TEXT[(t, a)] = hit
    return hit


# dtypes, devices, layouts and memory formats recur on many nodes.
_CACHED_LITERALS = frozenset((torch.dtype, torch.device, torch.layout, torch.memory_format))
_LITERAL_TEXT: dict[tuple, str] = {}


# Per-target facts never change; shared by every serializer in the process. Keyed by id():
# OpOverload hashes in Python, which costs more than the lookup; the entry keeps the target
# alive, so its id cannot be reused.
_TARGET_INFOS: dict[int, tuple[Any, "_TargetInfo"]] = {}
# A module stack's entries as JSON, by the stack's items (every export of a model repeats the
# same few stacks), and the `"module"` + `"module_stack"` members by that text.
_STACK_JSON: dict[tuple, str] = {}
_STACK_TEXT: dict[str, str] = {}
# `"source"` members by stack trace text (the same trace recurs on every op of a source line).
_SOURCE_TEXT: dict[str, str] = {}
_CALLS = frozenset(("call_function", "call_method", "call_module", "get_attr"))


class Serializer:
    """fx graph -> graph JSON text, written directly (no intermediate dicts). Its helpers
    (``target_facts``, ``value_json``, ...) also tell the Rust reader of fx graphs
    (``reader()``, what ``tta.rewrite`` uses) what each object means, so both write the same
    graph.

    Tags are written as the annotations left them, placeholders included; which tags make a
    region member is the pass's rule (``src/regions/collect.rs``)."""

    def __init__(self, weights: frozenset[str] = frozenset(), declared: dict[str, dict] | None = None) -> None:
        """``weights``: names of placeholders holding parameters, buffers or constants.
        ``declared``: what region markers add to a region's declaration (``markers.py``)."""
        self._infos = _TARGET_INFOS
        self._heads: dict[int, tuple] = {}
        self._vals: dict[int, tuple[Any, str]] = {}
        self._stacks: dict[int, tuple[dict, str]] = {}
        self.regions: dict[str, dict] = {}
        self._weights = weights
        self._declared = declared or {}

    def graph_json(self, graph: torch.fx.Graph, declare_all: bool = False) -> str:
        """The document's text. ``declare_all`` also declares the marker-declared regions that
        tag no node (the pass refuses them as empty)."""
        nodes = self._nodes(graph)
        return _document(",".join(nodes), self._regions_member(declare_all))

    def graph_parts(self, graph: torch.fx.Graph, declare_all: bool = False) -> tuple[str, list[str]]:
        """The document without its nodes (``"nodes": []``) and each node's text, as the pass
        also takes them (``core.analyze(header, ..., nodes=...)`` parses them in parallel)."""
        nodes = self._nodes(graph)
        return self.header(declare_all), nodes

    def header(self, declare_all: bool = False) -> str:
        """The document without its nodes, once they were written or read (by ``reader()``):
        the region declarations come from the nodes' tags."""
        return _document("", self._regions_member(declare_all))

    def _nodes(self, graph: torch.fx.Graph) -> list[str]:
        with NoGC():
            encode = self._encode
            return [encode(n) for n in graph.nodes]

    def _regions_member(self, declare_all: bool) -> str:
        if declare_all:
            for rid, decl in self._declared.items():
                self.regions.setdefault(rid, decl)
        return ',"regions":' + _json(self.regions) if self.regions else ""

    def graph_to_dict(self, graph: torch.fx.Graph) -> dict:
        return json.loads(self.graph_json(graph))

    # -- what objects mean: used by _encode below and by the Rust reader of fx graphs
    # (`core.FxReader`, src/python/fx.rs), which asks once per distinct object.

    def reader(self) -> Any:
        """A ``core.FxReader`` that hands fx nodes to the pass directly, as this serializer
        would write them (``core.analyze(self.header(), ..., reader=...)``)."""
        from ..common import bridge as core

        return core.FxReader(self, self._weights)

    def _info(self, target: Any) -> _TargetInfo:
        hit = self._infos.get(id(target))
        if hit is None or hit[0] is not target:
            hit = self._infos[id(target)] = (target, _TargetInfo(target))
        return hit[1]

    def target_facts(self, target: Any) -> tuple[str, list[str], bool]:
        """(name, arguments it writes, whether an output aliases an input) of a call's target."""
        info = self._info(target)
        return info.name, info.writes, info.aliases

    def region_tags(self, custom: dict) -> list[str]:
        """The region ids a node's ``meta["custom"]`` tags it with; the first node of each
        region declares it."""
        tags = [k[len(TAG_PREFIX) :] for k in custom if k.startswith(TAG_PREFIX)]
        for t in tags:
            if t not in self.regions:
                decl = custom[TAG_PREFIX + t]
                decl = {"impl": decl["impl"]} if decl.get("source") is None else dict(decl)
                self.regions[t] = {**self._declared.get(t, {}), **decl}
        return tags

    @staticmethod
    def value_json(v: Any) -> str:
        return value_text(v)

    # The reader writes tensors and SymInts itself, from these two.
    @staticmethod
    def dtype_text(d: torch.dtype) -> str:
        return dtype_text(d)

    @staticmethod
    def dim_text(d: Any) -> int | str:
        return _dim(d)

    @staticmethod
    def module_stack_json(stack: dict) -> str:
        """The stack's entries as JSON; one text object per distinct stack."""
        try:
            key = tuple(stack.items())
            text = _STACK_JSON.get(key)
        except TypeError:  # an unhashable entry
            return _json(_module_entries(stack))
        if text is None:
            text = _STACK_JSON[key] = _json(_module_entries(stack))
        return text

    @staticmethod
    def source_of(trace: str) -> str | None:
        return first_user_frame(trace)

    @staticmethod
    def literal_json(a: Any) -> str:
        """An argument that is not a node, None, bool, int, float, str, tuple or list."""
        return arg_text(a)

    def _head(self, target: Any, op: str) -> tuple:
        """(target, op, the node text after its name, the text that closes it) for ``op`` on
        ``target``: what every node of that target shares."""
        info = self._info(target)
        tail = (',"mutates":' + _json(info.writes) if info.writes else "") + (',"aliases":true' if info.aliases else "")
        return (target, op, ',"op":"' + op + '","target":' + _text(info.name), tail)

    def _stack_text(self, stack: dict) -> str:
        # Export gives every node its own copy of the stack: look it up by content (keys are
        # module paths, so the keys alone are one lookup), identity first.
        cached = self._stacks.get(id(stack))
        if cached is not None and cached[0] is stack:
            return cached[1]
        # The entries' text is one object per distinct stack (`module_stack_json`).
        entries = self.module_stack_json(stack)
        text = _STACK_TEXT.get(entries)
        if text is None:
            text = _STACK_TEXT[entries] = ',"module":' + _json(_module_entries(stack)[-1]) + ',"module_stack":' + entries
        self._stacks[id(stack)] = (stack, text)
        return text

    def _encode(self, n: torch.fx.Node) -> str:
        op = n.op
        name = n.name
        text = '{"name":' + ('"' + name + '"' if name.isidentifier() and name.isascii() else json.dumps(name))
        if op in _CALLS:
            target = n.target
            head = self._heads.get(id(target))
            if head is None or head[0] is not target or head[1] != op:
                head = self._heads[id(target)] = self._head(target, op)
            text += head[2]
            tail = head[3]
        else:
            text += ',"op":"' + op + '","target":' + (_text(n.target) if op == "placeholder" else '"output"')
            tail = ""
        args = n.args
        if args:
            text += ',"args":[' + ",".join([arg_text(a) for a in args]) + "]"
        kwargs = n.kwargs
        if kwargs:
            text += ',"kwargs":{' + ",".join([_text(k) + ":" + arg_text(v) for k, v in kwargs.items()]) + "}"
        meta = n.meta
        val = meta.get("val")
        if val is not None:
            hit = self._vals.get(id(val))
            if hit is None or hit[0] is not val:
                hit = self._vals[id(val)] = (val, ',"val":' + value_text(val))
            text += hit[1]
        custom = meta.get("custom")
        if custom:
            tags = self.region_tags(custom)
            if tags:
                text += ',"regions":' + _json(tags)
        stack = meta.get("nn_module_stack")
        if stack:
            text += self._stack_text(stack)
        trace = meta.get("stack_trace")
        if trace:
            src = _SOURCE_TEXT.get(trace)
            if src is None:
                where = self.source_of(trace)
                src = _SOURCE_TEXT[trace] = "" if where is None else ',"source":' + _json(where)
            text += src
        if op == "placeholder" and name in self._weights:
            text += ',"weight":true'
        text += tail + "}"
        return text


def graph_to_dict(graph: torch.fx.Graph) -> dict:
    """The graph as a JSON-ready dict."""
    return Serializer().graph_to_dict(graph)


def dumps(doc: dict) -> str:
    """Compact JSON text of a freshly built graph dict (no cycles: json's check is skipped)."""
    return _json(doc)


def to_json(graph: torch.fx.Graph) -> str:
    return Serializer().graph_json(graph)
