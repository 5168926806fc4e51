"""Which of a plugin's tactics may run over one layer's optimization profile, and the plugin
that offers just those (described with ``qdp``'s interface, over whose plugins they work).

TensorRT asks a plugin for its tactics (``autotune``) only when it builds the engine, after every
layer is added, so a restriction cannot be set on a plugin per layer: a layer whose profile rules
out some tactics gets a plugin of its own, the same kernels and compile cache offering fewer.
"""

from __future__ import annotations

import hashlib
from typing import Sequence

from ..errors import PluginError
from . import qdp, tactics


def restrict_tactics(op_name: str, dim_ranges: Sequence[Sequence[tuple[int, int]]], values: dict | None = None) -> list[int]:
    """See ``qdp``'s module docstring."""
    entry = qdp.registered(op_name)
    where = entry.plugin_id
    if len(dim_ranges) != len(entry.input_metas):
        raise PluginError(f"{where}: ranges given for {len(dim_ranges)} inputs, the plugin has {len(entry.input_metas)}")
    ranges: dict[str, tuple[int, int]] = {}
    for k, (meta, dims) in enumerate(zip(entry.input_metas, dim_ranges)):
        if len(dims) != len(meta.shape):
            raise PluginError(f"{where}: input {k} has rank {len(meta.shape)}, the profile gives {len(dims)} dims")
        for j, (lo, hi) in enumerate(dims):
            lo, hi = int(lo), int(hi)
            if lo > hi or lo < 0:
                raise PluginError(f"{where}: input {k} dim {j}: bad profile range [{lo}, {hi}]")
            static = meta.shape[j]
            if isinstance(static, int) and not lo == hi == static:
                raise PluginError(f"{where}: input {k} dim {j} was {static} when the kernels were compiled; the profile gives [{lo}, {hi}]")
            ranges[f"i{k}_{j}"] = (lo, hi)
    kept: list[int] = []
    refusals: dict[int, str] = {}
    for ins, _ in entry.signature(values)[0]:
        for tid, k in entry.kernels(ins, values).items():
            entry.refuse_cubin(tid, k)
            failed = None
            for g in k.meta.get("guards", []):
                ok, witness = tactics.guard_over(g, ranges)
                if not ok:
                    failed = (g, witness)
                    break
            if failed is None:
                if tid not in kept:
                    kept.append(tid)
            else:
                g, witness = failed
                why = f"fails at {witness}" if witness else "cannot be proven over the range"
                refusals.setdefault(tid, f"tactic {tid} ({entry.tactic_labels[tid]}) needs {g}, which {why}")
    kept = [t for t in entry.tactic_ids if t in kept]
    if not kept:
        raise PluginError(
            f"{where}: no kernel config can run every shape of the optimization profile "
            f"({tactics.describe_ranges(ranges)}): " + "; ".join(refusals.values())
        )
    return kept


def restricted(op_name: str, tactics: Sequence[int]) -> str:
    """See ``qdp``'s module docstring."""
    base = qdp.registered(op_name)
    kept = [t for t in base.tactic_ids if t in set(tactics)]
    if set(tactics) - set(kept):
        raise PluginError(f"{base.plugin_id}: tactics {sorted(set(tactics) - set(kept))} are not among its own {base.tactic_ids}")
    if kept == base.tactic_ids:
        return op_name
    name = f"{op_name}__t{hashlib.sha256(repr(kept).encode()).hexdigest()[:8]}"
    qdp.define_variant(name, base, kept)
    return name
