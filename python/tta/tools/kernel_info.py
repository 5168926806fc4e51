"""The kernels a report shows per impl: DSL, launch function, configs and TensorRT tactic ids,
as graph files store them (``"kernels"``) and as ``tta explain`` and ``tta report`` read them."""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence


@dataclass(frozen=True)
class KernelInfo:
    """One kernel spec of a plugin, as the report shows it: its DSL, launch function and
    configs, and the TensorRT tactic id of each config."""

    backend: str
    identity: str
    configs: tuple[dict, ...]
    tactics: tuple[int, ...] | None = None

    def to_json(self) -> dict:
        return {"backend": self.backend, "identity": self.identity, "configs": [dict(c) for c in self.configs]}


def _tactics_module():
    """``tta/trt/tactics.py`` without importing the ``tta.trt`` package (which imports torch
    and registers ops): its tactic ids need only the standard library. None if it is absent."""
    loaded = sys.modules.get("tta.trt.tactics")
    if loaded is not None:
        return loaded
    path = Path(__file__).parents[1] / "trt" / "tactics.py"
    spec = importlib.util.spec_from_file_location("tta._explain_tactics", path)
    if spec is None or spec.loader is None or not path.exists():
        return None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ImportError:
        return None
    return module if hasattr(module, "tactic_ids") else None


def with_tactics(kernels: Sequence[KernelInfo]) -> list[KernelInfo]:
    """``kernels`` with the tactic ids TensorRT gets for them (the list the plugin registers:
    every config of every kernel, in order)."""
    tactics = _tactics_module()
    if tactics is None or not kernels:
        return list(kernels)
    ids = iter(tactics.tactic_ids([(k.backend, k.identity, dict(c)) for k in kernels for c in k.configs]))
    return [KernelInfo(k.backend, k.identity, k.configs, tuple(next(ids) for _ in k.configs)) for k in kernels]


def decode_kernels(doc: Mapping[str, Any]) -> dict[str, list[KernelInfo]]:
    """The ``"kernels"`` entry of a graph file (impl key -> kernel specs) with tactic ids."""
    return {
        key: with_tactics([KernelInfo(k["backend"], k["identity"], tuple(dict(c) for c in k.get("configs", []))) for k in specs])
        for key, specs in doc.items()
    }


def kernels_document(keys) -> dict[str, list[dict]]:
    """The ``"kernels"`` entry ``tta.save_graph`` writes: impl key -> its kernel specs."""
    from ..declare.plugin import lookup

    return {
        k: [KernelInfo(s.backend, s.identity, tuple(s.config_dicts())).to_json() for s in p.kernels]
        for k in sorted(keys)
        if (p := lookup(k)) is not None
    }
