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

import warnings
from typing import Any, Callable, Iterable, Mapping, Sequence

import torch
import torch.fx
from torch import nn

from ..declare.plugin import Plugin
from . import serialize as graph
from .patterns import PatternSelector, check_impl, is_decomposed, target_dtypes

__all__ = ["ModuleSelector", "PatternSelector", "lower_pattern", "is_decomposed"]


class ModuleSelector:
    """Every call of a module class (compared exactly: subclasses may override ``forward``), or
    of the modules at or under a dotted path prefix (``"model.layers"``: each layer is one
    region). An instance nested in another one chosen by the same key is part of the outer
    region. Region inputs come in first-use order (shown in the report)."""

    def __init__(self, mapping: Mapping[type | str, Plugin]):
        self.entries: list[dict] = []
        for key, impl in mapping.items():
            plugin = check_impl(impl, f"lower_modules({key!r}: ...)")
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


def lower_pattern(
    pattern: Callable | nn.Module,
    impl: Plugin,
    example_inputs: Sequence[Any],
    *,
    example_kwargs: Mapping[str, Any] | None = None,
    decompose: bool | None = None,
    name: str | None = None,
    pin_sizes: bool = False,
    pin_dtypes: bool = False,
) -> PatternSelector:
    """Select every occurrence of a subgraph: ``pattern`` (a function or an nn.Module) is
    exported with ``example_inputs`` like a model, and every occurrence of its graph in the
    target becomes a region replaced by ``impl``.

    The pattern's tensor inputs match any producer (for an nn.Module, its parameters and
    buffers are inputs too, after forward's); they are the region's inputs in that order, and
    the pattern's outputs are the region's outputs, in order.
    Ops and literal arguments must match exactly, except what comes from the example inputs:
    sizes computed from their dims match the target's sizes or symbols (consistently: one dim,
    one binding), and the pattern matches in every floating dtype the target uses, unless
    ``pin_sizes`` / ``pin_dtypes`` fix them to the examples'. ``decompose`` picks the form to
    match, like with like: True matches ``run_decompositions()`` output, False the graph
    ``torch.export`` gives; None (default) decides per target with ``is_decomposed``.
    """
    return PatternSelector(
        pattern,
        impl,
        example_inputs,
        example_kwargs=example_kwargs,
        decompose=decompose,
        name=name,
        pin_sizes=pin_sizes,
        pin_dtypes=pin_dtypes,
    )


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
            raise TypeError(
                f"selectors are tta.lower_pattern(...) results or {{module type or path: impl}} mappings, got {type(s).__name__}"
            )
        out.append(s)
    return out


def encode(selectors, target: torch.fx.Graph) -> tuple[dict | None, set[str]]:
    """The selectors document the pass takes (``src/regions/selectors.rs``) and the impl keys
    it uses."""
    items = normalize(selectors)
    if not items:
        return None, set()
    modules, patterns, keys = [], [], set()
    dtypes = target_dtypes(target) if any(isinstance(s, PatternSelector) and not s.pin_dtypes for s in items) else []
    for s in items:
        if isinstance(s, ModuleSelector):
            modules.extend(s.entries)
            keys.update(e["impl"] for e in s.entries)
        else:
            first, *others = s.forms(s.decomposed_for(target), dtypes)
            patterns.append({"name": s.name, "impl": s.impl.key, "graph": first, **({"forms": others} if others else {})})
            keys.add(s.impl.key)
    return {"modules": modules, "patterns": patterns}, keys


def warn_unmatched(selectors, regions: Iterable, unmatched: Mapping[str, str]) -> None:
    """Warn about selector keys that chose nothing (a typo in a path, a pattern in the other
    form), since an empty report is otherwise silent. ``unmatched`` maps the label of each
    pattern that occurs nowhere (its name; ``name#2`` for a name given again) to its closest
    partial match, from the pass."""
    hit_modules = {r.origin.selector for r in regions if r.origin.kind == "module"}
    for s in normalize(selectors):
        if isinstance(s, ModuleSelector):
            for key in s.labels():
                if key not in hit_modules:
                    warnings.warn(f"tta: no module in the graph matches {key!r}", stacklevel=4)
    for label, closest in unmatched.items():
        warnings.warn(f"tta: pattern {label!r} occurs nowhere in the graph; {closest}", stacklevel=4)
