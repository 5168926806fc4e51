"""``tta.lower_pattern``'s selector: how a pattern function or module is traced into the graphs
the Rust matcher (``src/regions/pattern/``) looks for.

A user writes a pattern once, with whatever example inputs are at hand, and expects it to match
a model exported with other sizes and in another dtype. So, unless pinned:
- sizes: the pattern is exported with every dim of its example tensors dynamic, so a size it
  computes from its inputs (a decomposed Linear's view sizes) is an expression over its inputs'
  dims, which the matcher binds to the target's sizes or symbols;
- dtypes: a pattern's graph itself depends on the dtype (``x.float()`` is no op on float32
  and a conversion on bfloat16), so it is traced once per floating dtype the target computes
  in, and an occurrence of any of these forms counts.
"""

from __future__ import annotations

import copy
import functools
import inspect
import json
import warnings
import weakref
from typing import Any, Callable, Mapping, Sequence

import torch
import torch.fx
from torch import nn

from ..declare.plugin import Plugin
from ..errors import PluginError
from . import serialize as graph


def check_impl(impl: Any, where: str) -> Plugin:
    if not isinstance(impl, Plugin):
        raise PluginError(f"{where}: the impl must be a tta.custom_plugin(...), got {type(impl).__name__}")
    return impl


class _Call(nn.Module):
    """Wraps a pattern function so that torch.export can trace it like a model."""

    def __init__(self, fn: Callable):
        super().__init__()
        self.fn = fn

    def forward(self, *args, **kwargs):
        return self.fn(*args, **kwargs)


def _as_module(fn: Callable) -> nn.Module:
    """``fn`` as a module whose forward has ``fn``'s signature: export names the pattern's
    inputs after its parameters, and messages about them use the user's names."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return _Call(fn)

    def forward(self, *args, **kwargs):
        return self.fn(*args, **kwargs)

    self_param = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    forward.__signature__ = sig.replace(parameters=[self_param, *sig.parameters.values()])
    return type("_Call", (_Call,), {"forward": forward})(fn)


def _computes_sizes(doc: dict) -> bool:
    return any(n["op"] == "call_function" and isinstance(n.get("val"), dict) and "sym" in n["val"] for n in doc["nodes"])


def _structure(doc: dict) -> str:
    # What the matcher compares: two forms with the same ops and literals match the same.
    return json.dumps([(n["op"], n["target"], n.get("args"), n.get("kwargs")) for n in doc["nodes"]], sort_keys=True)


class PatternSelector:
    """Every occurrence of the graph ``pattern`` traces to (see ``tta.lower_pattern``)."""

    def __init__(
        self,
        pattern: Callable | nn.Module,
        impl: Plugin,
        example_inputs: Sequence[Any],
        *,
        example_kwargs: Mapping[str, Any] | None = None,
        decompose: bool | None = None,
        name: str | None = None,
        pin_sizes: bool = False,
        pin_dtypes: bool = False,
    ):
        self.impl = check_impl(impl, "lower_pattern")
        if not callable(pattern):
            raise TypeError(f"lower_pattern takes a function or an nn.Module as the pattern, got {type(pattern).__name__}")
        if decompose not in (None, True, False):
            raise TypeError(f"lower_pattern(decompose=...) is True, False or None (match the target), got {decompose!r}")
        if not isinstance(example_inputs, (tuple, list)):
            raise TypeError(f"lower_pattern(example_inputs=...) is a tuple of the pattern's arguments, got {type(example_inputs).__name__}")
        self.pattern = pattern
        self.example_inputs = tuple(example_inputs)
        tensors = [(i, t) for i, t in enumerate(self.example_inputs) if isinstance(t, torch.Tensor)]
        for k, (i, a) in enumerate(tensors):
            for j, b in tensors[k + 1 :]:
                if a is b:
                    # export would trace both as one input, and the pattern would need one
                    # producer read twice.
                    raise TypeError(
                        f"lower_pattern: example inputs {i} and {j} are the same tensor; pass distinct tensors (e.g. x.clone())"
                    )
        self.example_kwargs = dict(example_kwargs or {})
        self.decompose = decompose
        self.pin_sizes = bool(pin_sizes)
        self.pin_dtypes = bool(pin_dtypes)
        self.name = name or getattr(pattern, "__name__", None) or type(pattern).__name__
        self._docs: dict[tuple, dict] = {}

    def graph_doc(self, decomposed: bool, dtype: torch.dtype | None = None, symbolic: bool | None = None) -> dict:
        """The pattern's graph JSON (as a dict), exported once per form; ``dtype`` casts the
        floating example inputs (and a module pattern's weights) first; ``symbolic`` (default:
        unless ``pin_sizes``) exports with dynamic dims."""
        symbolic = not self.pin_sizes if symbolic is None else symbolic
        key = (decomposed, dtype, symbolic)
        # Keyed by what decides the graph, looked up each time: the pattern may have changed in
        # place (its code, closure, defaults, a module's weights) since the last rewrite. Another
        # selector of the same pattern and examples (a second `lower_pattern` call) shares it.
        full = (key, _examples_key(self.pattern, self.example_inputs, self.example_kwargs))
        try:
            hash(full)
            cache = _export_cache(self.pattern)
        except TypeError:  # an example that does not hash: this selector's exports, by form
            full, cache = key, None
        if cache is None:
            cache = self._docs
        doc = cache.get(full)
        if doc is None:
            doc = cache[full] = self._export(decomposed, dtype, symbolic)
        return doc

    def forms(self, decomposed: bool, target_dtypes: Sequence[torch.dtype] = ()) -> list[dict]:
        """The graphs to match: as traced, then (unless ``pin_dtypes``) traced in each floating
        dtype of the target, leaving out forms that match exactly what an earlier one does.
        Each symbolic trace that computes sizes is followed by the trace with the example's
        sizes: ops with defaults trace differently with literal and symbolic sizes (a slice to
        ``n // 2`` records fewer arguments than a slice to ``4``), and the example's own sizes
        must match whatever the symbolic form misses."""
        dtypes = [None]
        if not self.pin_dtypes:
            dtypes += [d for d in target_dtypes if self._floating_dtypes() not in (set(), {d})]
        docs: list[dict] = []
        seen: set[str] = set()
        for d in dtypes:
            for symbolic in (True, False) if not self.pin_sizes else (False,):
                doc = self.graph_doc(decomposed, d, symbolic)
                if _structure(doc) not in seen:
                    seen.add(_structure(doc))
                    docs.append(doc)
                if symbolic and not _computes_sizes(doc):
                    break  # the static trace would be the same graph
        return docs

    def _floating(self) -> bool:
        return bool(self._floating_dtypes())

    def _floating_dtypes(self) -> set[torch.dtype]:
        tensors = [*self.example_inputs, *self.example_kwargs.values()]
        if isinstance(self.pattern, nn.Module):
            tensors += [*self.pattern.parameters(), *self.pattern.buffers()]
        return {t.dtype for t in tensors if isinstance(t, torch.Tensor) and t.is_floating_point()}

    def _examples(self, dtype: torch.dtype | None):
        module = self.pattern if isinstance(self.pattern, nn.Module) else _as_module(self.pattern)
        args, kwargs = self.example_inputs, self.example_kwargs
        if dtype is not None:
            cast = lambda t: t.to(dtype) if isinstance(t, torch.Tensor) and t.is_floating_point() else t  # noqa: E731
            args = tuple(cast(t) for t in args)
            kwargs = {k: cast(v) for k, v in kwargs.items()}
            if isinstance(self.pattern, nn.Module):
                module = copy.deepcopy(module).to(dtype)
        return module, args, kwargs

    def _export(self, decomposed: bool, dtype: torch.dtype | None, symbolic: bool) -> dict:
        module, args, kwargs = self._examples(dtype)
        ep = _export_dynamic(module, args, kwargs, self.name) if symbolic else None
        if ep is None:
            ep = torch.export.export(module, args, kwargs=kwargs, strict=False)
        if decomposed:
            ep = ep.run_decompositions()
        doc = graph.graph_to_dict(ep.graph_module.graph)
        # Pattern inputs are its placeholders in order; put forward's inputs before the
        # parameters, buffers and constants export lifts in front of them, so an impl for a
        # module pattern takes (inputs..., weights...).
        user = set(ep.graph_signature.user_inputs)
        nodes = doc["nodes"]
        head = [n for n in nodes if n["op"] == "placeholder"]
        head = [n for n in head if n["name"] in user] + [n for n in head if n["name"] not in user]
        doc["nodes"] = head + [n for n in nodes if n["op"] != "placeholder"]
        # Annotations inside a pattern function mean nothing here.
        doc.pop("regions", None)
        for n in doc["nodes"]:
            n.pop("regions", None)
        return doc

    def decomposed_for(self, target: torch.fx.GraphModule | torch.fx.Graph) -> bool:
        return is_decomposed(target) if self.decompose is None else self.decompose

    def apply(self, program, *, check: bool | str = True, on_refused: str = "raise"):
        """``tta.rewrite(program, selectors=[self])``."""
        import tta  # the public API: the pass runs selectors, so this module cannot import it

        return tta.rewrite(program, selectors=[self], check=check, on_refused=on_refused)

    def __repr__(self) -> str:
        return f"PatternSelector({self.name}, impl={self.impl.key})"


# Exported pattern graphs by pattern object (function or module), then by form and examples.
# Export traces the examples as fake tensors, so only their kind, dtype, shape, strides and
# device shape the graph (with a module's parameter and buffer shapes and its training flag);
# a pattern object that cannot be weakly referenced is not cached.
_EXPORTS: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()


def _export_cache(pattern: Any) -> dict | None:
    try:
        return _EXPORTS.setdefault(pattern, {})
    except TypeError:
        return None


def _example_key(v: Any) -> Any:
    if isinstance(v, torch.Tensor):
        strides = v.stride() if v.layout == torch.strided else None
        return ("tensor", type(v), v.dtype, tuple(v.shape), strides, v.device, v.layout, v.requires_grad)
    if isinstance(v, (list, tuple)):
        return (type(v), tuple(_example_key(x) for x in v))
    if isinstance(v, dict):
        return (dict, tuple((k, _example_key(x)) for k, x in v.items()))
    if v is None or isinstance(v, (bool, int, float, str, torch.dtype, torch.device)):
        return (type(v), v)
    return ("object", id(v), v)  # identity: the pattern may read anything on it


def _cell_key(cell: Any) -> Any:
    try:
        return _example_key(cell.cell_contents)
    except ValueError:  # a cell not yet filled
        return ("empty",)


def _examples_key(pattern: Any, args: tuple, kwargs: dict) -> tuple:
    """What, beside the pattern object, decides its exported graph: the examples, a module's
    weights and mode, a function's code, defaults and closed-over values."""
    if isinstance(pattern, nn.Module):
        named = [*pattern.named_parameters(), *pattern.named_buffers()]
        state = (pattern.training, tuple((name, _example_key(t)) for name, t in named))
    else:
        cells = tuple(_cell_key(c) for c in getattr(pattern, "__closure__", None) or ())
        state = (
            getattr(pattern, "__code__", None),
            _example_key(getattr(pattern, "__defaults__", None)),
            _example_key(getattr(pattern, "__kwdefaults__", None)),
            cells,
        )
    return (_example_key(args), _example_key(kwargs), state)


def _export_dynamic(module: nn.Module, args: tuple, kwargs: dict, name: str):
    """Export with every dim of every example tensor dynamic (``Dim.AUTO``: dims the pattern
    ties to a weight or a literal stay static), or None when export refuses."""
    from torch.fx.experimental import _config as fx_config

    shapes = torch.export.ShapesCollection()
    for t in [*args, *kwargs.values()]:
        if isinstance(t, torch.Tensor) and t.dim() > 0:
            shapes[t] = {i: torch.export.Dim.AUTO for i in range(t.dim())}
    dynamic = shapes.dynamic_shapes(module, args, kwargs)
    try:
        # Size-1 example dims would otherwise be fixed at 1 (torch specializes 0 and 1), and a
        # pattern written with batch 1 would then miss every other batch size.
        with fx_config.patch(backed_size_oblivious=True):
            return torch.export.export(module, args, kwargs=kwargs, dynamic_shapes=dynamic, strict=False)
    except Exception:  # export's own errors vary by version
        pass
    try:
        # A size-1 dim the pattern broadcasts (rotary cos/sin) must stay 1: let torch fix them.
        return torch.export.export(module, args, kwargs=kwargs, dynamic_shapes=dynamic, strict=False)
    except Exception as e:  # the static export below says the rest
        warnings.warn(
            f"tta: pattern {name!r} could not be traced with symbolic sizes ({type(e).__name__}: {str(e).splitlines()[0]}); "
            "it matches only its example sizes",
            stacklevel=5,
        )
        return None


def target_dtypes(target: torch.fx.GraphModule | torch.fx.Graph) -> list[torch.dtype]:
    """Floating dtypes the target graph computes in, most used first."""
    g = target if isinstance(target, torch.fx.Graph) else target.graph
    count: dict[torch.dtype, int] = {}
    for n in g.nodes:
        v = n.meta.get("val")
        if isinstance(v, torch.Tensor) and v.dtype.is_floating_point:
            count[v.dtype] = count.get(v.dtype, 0) + 1
    return sorted(count, key=lambda d: (-count[d], str(d)))


@functools.cache
def _default_decompositions():
    return torch.export.default_decompositions()


def is_decomposed(gm: torch.fx.GraphModule | torch.fx.Graph) -> bool:
    """True when ``gm`` (a GraphModule or its Graph) looks like ``run_decompositions()`` output: none of its ATen ops is one
    the default decomposition table would still decompose (``aten.linear``, ``aten.conv2d``,
    ...). A graph of core ops only counts as decomposed, which is the same either way."""
    table = _default_decompositions()
    g = gm if isinstance(gm, torch.fx.Graph) else gm.graph
    # Each distinct target once (by id: OpOverload hashes in Python, slowly).
    seen: set[int] = set()
    for n in g.nodes:
        t = n.target
        if n.op != "call_function" or id(t) in seen:
            continue
        seen.add(id(t))
        # Size queries (`aten.sym_size.int`) are in the table but survive run_decompositions.
        if isinstance(t, torch._ops.OpOverload) and t in table and not isinstance(n.meta.get("val"), (int, torch.SymInt)):
            return False
    return True
