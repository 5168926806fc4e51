"""The kernels of a rewritten program: every plugin op's kernels compiled ahead of time for
the signature its region has in the graph."""

from __future__ import annotations

from typing import Any, Sequence

from ..aot.base import CompiledKernel
from ..aot.compile import Request, compile_requests, plugin_request, region_input_types, split_run_options
from ..declare.plugin import lookup
from ..errors import PluginError
from ..runtime import ops


def compile_kernels(
    regions: Sequence[Any], sm: int = 90, max_ptx: int | None = 90, ranges: dict | None = None, **options: Any
) -> dict[str, list[CompiledKernel]]:
    """The kernels of every plugin op among outlined ``regions`` (``RegionReport``s), compiled
    ahead of time for the region's signature: one ``CompiledKernel`` per (kernel spec, config);
    dims that are symbolic in the graph stay dynamic, dims export unified share one symbol, and
    ``ranges`` (``export_ranges``: the sizes export proved per symbol) bound them. Every plugin's
    misses compile in one pool. ``options``: compile options and ``RUN_OPTIONS`` (``cache``,
    ``pool``, ...). Returns op name -> kernels (ops whose plugin has no kernels are left out)."""
    run, options = split_run_options(options)
    requests: dict[str, Request] = {}
    for r in regions:
        plugin = lookup(r.impl)
        if r.op is None or r.op in requests or plugin is None or not plugin.kernels:
            continue
        if not all(p.is_tensor for p in r.inputs):
            raise PluginError(f"{r.op}: a kernel plugin takes tensors only; region {r.id} also reads integers")
        metas = region_input_types(r.inputs, ranges)
        outputs = plugin.meta_impl or ops.body_of(r.op)
        requests[r.op] = plugin_request(plugin, metas, outputs, sm=sm, max_ptx=max_ptx, **options)
    return dict(zip(requests, compile_requests(list(requests.values()), **run)))
