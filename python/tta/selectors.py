"""Choosing regions without editing model code: by module type or path (``lower_modules``) and
by subgraph pattern (``lower_pattern``).

Both only describe what to select; the Rust pass (``src/regions/selectors.rs``) finds the
regions and validates and outlines them together with ``lower_as`` annotations, so overlaps
between any of them are refused. Pass selectors to ``tta.rewrite(program, selectors=[...])``,
or use the shortcuts here:

    res = tta.lower_modules(ep, {LlamaRMSNorm: rmsnorm_impl})          # -> RewriteResult
    res = tta.lower_modules(model, {"model.layers": block_impl}, example_inputs=(ids,))
    res = tta.lower_pattern(rmsnorm_fn, rmsnorm_impl, (x, w)).apply(ep)
    res = tta.rewrite(ep, selectors=[{LlamaRMSNorm: a}, tta.lower_pattern(mlp_fn, b, (h,))])
    tta.find_regions(ep, [tta.lower_pattern(...)])  # which regions, without rewriting

The rules (nesting, repeated calls, port order, literals, commutativity, overlaps) are in
docs/selectors.md.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any, Callable, Iterable, Mapping, Sequence

import torch
import torch.fx
from torch import nn

from . import graph
from .errors import PluginError
from .plugin import Plugin

__all__ = ["ModuleSelector", "PatternSelector", "lower_pattern", "is_decomposed"]


def _check_impl(impl: Any, where: str) -> Plugin:
    if not isinstance(impl, Plugin):
        raise PluginError(f"{where}: the impl must be a tta.custom_plugin(...), got {type(impl).__name__}")
    return impl


class ModuleSelector:
    """Every call of a module class (compared exactly: subclasses may override ``forward``), or
    of the modules at or under a dotted path prefix (``"model.layers"``: each layer is one
    region). An instance nested in another one chosen by the same key is part of the outer
    region. Region inputs come in first-use order (shown in the report)."""

    def __init__(self, mapping: Mapping[type | str, Plugin]):
        self.entries: list[dict] = []
        for key, impl in mapping.items():
            plugin = _check_impl(impl, f"lower_modules({key!r}: ...)")
            if isinstance(key, str):
                self.entries.append({"path": key, "impl": plugin.key})
            elif isinstance(key, type) and issubclass(key, nn.Module):
                self.entries.append({"type": graph.module_type(key), "impl": plugin.key})
            else:
                raise TypeError(f"lower_modules keys are nn.Module classes or dotted path prefixes, got {key!r}")

    def labels(self) -> list[str]:
        return [e.get("type", e.get("path")) for e in self.entries]

    def __repr__(self) -> str:
        return f"ModuleSelector({', '.join(self.labels())})"


class _Call(nn.Module):
    """Wraps a pattern function so that torch.export can trace it like a model."""

    def __init__(self, fn: Callable):
        super().__init__()
        self.fn = fn

    def forward(self, *args, **kwargs):
        return self.fn(*args, **kwargs)


class PatternSelector:
    """Every occurrence of the graph ``pattern`` traces to (see ``lower_pattern``)."""

    def __init__(self, pattern: Callable | nn.Module, impl: Plugin, example_inputs: Sequence[Any], *,
                 example_kwargs: Mapping[str, Any] | None = None, decompose: bool | None = None, name: str | None = None):
        self.impl = _check_impl(impl, "lower_pattern")
        if not callable(pattern):
            raise TypeError(f"lower_pattern takes a function or an nn.Module as the pattern, got {type(pattern).__name__}")
        if decompose not in (None, True, False):
            raise TypeError(f"lower_pattern(decompose=...) is True, False or None (match the target), got {decompose!r}")
        self.pattern = pattern
        self.example_inputs = tuple(example_inputs)
        tensors = [(i, t) for i, t in enumerate(self.example_inputs) if isinstance(t, torch.Tensor)]
        for k, (i, a) in enumerate(tensors):
            for j, b in tensors[k + 1:]:
                if a is b:
                    # export would trace both as one input, and the pattern would need one
                    # producer read twice.
                    raise TypeError(f"lower_pattern: example inputs {i} and {j} are the same tensor; pass distinct tensors (e.g. x.clone())")
        self.example_kwargs = dict(example_kwargs or {})
        self.decompose = decompose
        self.name = name or getattr(pattern, "__name__", None) or type(pattern).__name__
        self._docs: dict[bool, dict] = {}

    def graph_doc(self, decomposed: bool) -> dict:
        """The pattern's graph JSON (as a dict), exported once per form."""
        doc = self._docs.get(decomposed)
        if doc is None:
            doc = self._docs[decomposed] = self._export(decomposed)
        return doc

    def _export(self, decomposed: bool) -> dict:
        module = self.pattern if isinstance(self.pattern, nn.Module) else _Call(self.pattern)
        ep = torch.export.export(module, self.example_inputs, kwargs=self.example_kwargs, strict=False)
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

    def decomposed_for(self, target: torch.fx.GraphModule) -> bool:
        return is_decomposed(target) if self.decompose is None else self.decompose

    def apply(self, program, *, check: bool | str = True):
        """``tta.rewrite(program, selectors=[self])``."""
        from .rewrite import rewrite

        return rewrite(program, selectors=[self], check=check)

    def __repr__(self) -> str:
        return f"PatternSelector({self.name}, impl={self.impl.key})"


def lower_pattern(pattern: Callable | nn.Module, impl: Plugin, example_inputs: Sequence[Any], *,
                  example_kwargs: Mapping[str, Any] | None = None, decompose: bool | None = None,
                  name: str | None = None) -> PatternSelector:
    """Select every occurrence of a subgraph: ``pattern`` (a function or an nn.Module) is
    exported with ``example_inputs`` like a model, and every occurrence of its graph in the
    target becomes a region replaced by ``impl``.

    The pattern's tensor inputs match any producer (for an nn.Module, its parameters and
    buffers are inputs too, after forward's); they are the region's inputs in that order, and
    the pattern's outputs are the region's outputs, in order.
    Ops and literal arguments must match exactly, so give example inputs of the target's
    shapes where the pattern reshapes. ``decompose`` picks the form to match, like with like:
    True matches ``run_decompositions()`` output, False the graph ``torch.export`` gives;
    None (default) decides per target with ``is_decomposed``.
    """
    return PatternSelector(pattern, impl, example_inputs, example_kwargs=example_kwargs, decompose=decompose, name=name)


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
        if isinstance(t, torch._ops.OpOverload) and t in table:
            return False
    return True


def normalize(selectors) -> list[ModuleSelector | PatternSelector]:
    """A selector, a ``{module type or path: impl}`` mapping, or a list of these."""
    if selectors is None:
        return []
    if isinstance(selectors, (ModuleSelector, PatternSelector, Mapping)):
        selectors = [selectors]
    out = []
    for s in selectors:
        if isinstance(s, Mapping):
            s = ModuleSelector(s)
        if not isinstance(s, (ModuleSelector, PatternSelector)):
            raise TypeError(f"selectors are tta.lower_pattern(...) results or {{module type or path: impl}} mappings, got {type(s).__name__}")
        out.append(s)
    return out


def _pattern_labels(items: Sequence[ModuleSelector | PatternSelector]) -> list[str | None]:
    """The name each pattern selector's regions are labelled with (``pattern:<name>:<k>``):
    pattern names must be unique, so a repeated name gets ``#2``, ``#3``, ..."""
    counts: dict[str, int] = {}
    out: list[str | None] = []
    for s in items:
        if isinstance(s, PatternSelector):
            k = counts[s.name] = counts.get(s.name, 0) + 1
            out.append(s.name if k == 1 else f"{s.name}#{k}")
        else:
            out.append(None)
    return out


def encode(selectors, target: torch.fx.Graph) -> tuple[dict | None, set[str]]:
    """The selectors document the pass takes (``src/regions/selectors.rs``) and the impl keys
    it uses."""
    items = normalize(selectors)
    if not items:
        return None, set()
    modules, patterns, keys = [], [], set()
    for s, label in zip(items, _pattern_labels(items)):
        if isinstance(s, ModuleSelector):
            modules.extend(s.entries)
            keys.update(e["impl"] for e in s.entries)
        else:
            patterns.append({"name": label, "impl": s.impl.key, "graph": s.graph_doc(s.decomposed_for(target))})
            keys.add(s.impl.key)
    return {"modules": modules, "patterns": patterns}, keys


def warn_unmatched(selectors, regions: Iterable) -> None:
    """Warn about selector keys that chose nothing (a typo in a path, a pattern in the other
    form), since an empty report is otherwise silent."""
    hit_modules = {r.origin.selector for r in regions if r.origin.kind == "module"}
    hit_patterns = {r.origin.pattern for r in regions if r.origin.kind == "pattern"}
    items = normalize(selectors)
    for s, label in zip(items, _pattern_labels(items)):
        if isinstance(s, ModuleSelector):
            for key in s.labels():
                if key not in hit_modules:
                    warnings.warn(f"tta: no module in the graph matches {key!r}", stacklevel=4)
        elif label not in hit_patterns:
            warnings.warn(f"tta: pattern {s.name!r} occurs nowhere in the graph", stacklevel=4)
