"""Passing kernel checks remembered in tta's on-disk cache (``cache.py``), keyed on everything
that decides the answer: the op's signature and region body, the kernel specs (their sources
and the code they reach, ``KernelSpec.cache_key``), the sizes, tolerances, seed and versions.
A failing check is never stored: it runs, and raises, every time."""

from __future__ import annotations

import dataclasses

import torch

from . import inputs as ci
from .report import PASS, SKIPPED, ConfigCheck, RegionCheck, SizeCheck

_VERSION = 1  # of what a cached pass means


def passed(rc: RegionCheck) -> bool:
    runs = [s for c in rc.configs for s in c.sizes]
    return bool(runs) and all(s.status in (PASS, SKIPPED) for s in runs) and any(s.status == PASS for s in runs)


def store(cache):
    if cache is False:
        return None
    from ..common.cache import Cache

    return Cache() if cache is None or cache is True else cache


def key(op, r, plugin, body, envs, device, gpu, tolerances, seed, all_sizes) -> str:
    from ..common.cache import digest
    from ..common.identity import source_digest

    return digest(
        {
            "what": "tta kernel check",
            "version": _VERSION,
            "op": op,
            "how": "gpu" if gpu else "interpreter",
            "sm": torch.cuda.get_device_capability() if gpu else None,
            "device": device,
            "inputs": [p.signature() for p in r.inputs],
            "outputs": [p.signature() for p in r.outputs],
            "body": body.code,
            "meta": source_digest(plugin.meta_impl) if plugin.meta_impl else None,
            "specs": [s.cache_key for s in plugin.kernels],
            "configs": [s.config_dicts() for s in plugin.kernels],
            "sizes": envs,
            "all_sizes": all_sizes,
            "seed": seed,
            "tolerances": sorted((tolerances or {}).items()),
            "defaults": sorted(ci.TOLERANCES.items()),
            "torch": torch.__version__,
            "triton": _triton_version(),
        }
    )


def _triton_version() -> str | None:
    try:
        import triton

        return triton.__version__
    except ImportError:
        return None


def to_json(rc: RegionCheck) -> list:
    return [dataclasses.asdict(c) for c in rc.configs]


def from_json(rows: list) -> list[ConfigCheck]:
    out = []
    for row in rows:
        sizes = [SizeCheck(**s) for s in row.pop("sizes")]
        out.append(ConfigCheck(**row, sizes=sizes))
    return out
