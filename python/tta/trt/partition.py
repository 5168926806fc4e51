"""Where tta's plugin nodes land when Torch-TensorRT partitions a graph, and keeping them in
TensorRT.

Torch-TensorRT leaves a block of fewer than ``min_block_size`` (default 5) convertible nodes to
PyTorch, so a lone plugin node would run its eager implementation instead of being built into
the engine. Its partitioners can exempt ops from that rule (``allowed_single_node_partition_ops``
of ``TRTPartitioner``), but no compilation setting reaches it. So:

Plugin nodes are those of tta's ops: outlined regions (``tta::*``) and the ops made plugins by
``tta.custom_op``.

* ``tta.compile`` runs inside ``keep_plugins_in_tensorrt()``, which for its duration (a lock
  serializes such compiles) passes the plugin ops as that exemption to both partitioners and
  counts a graph holding a plugin as large enough for the whole-graph check. Blocks without a
  plugin partition exactly as before; a small block with a plugin stays in TensorRT with the
  nodes it holds.
* plain ``torch_tensorrt.compile`` is left alone: ``warn_dropped_plugins``, a post-lowering pass
  run last, partitions a copy of the graph the way Torch-TensorRT is about to and warns about
  every plugin that would run in PyTorch, naming the remedy.
"""

from __future__ import annotations

import contextlib
import threading
import warnings
from typing import Any, Iterator

import torch

from . import custom_op
from .lowering import current_session, is_tta_target

_PREFIX = "torch.ops.tta."
_lock = threading.RLock()


def is_plugin_target(target: Any) -> bool:
    """Whether ``target`` becomes a tta plugin: a region op or a ``tta.custom_op`` op."""
    return is_tta_target(target) or (isinstance(target, torch._ops.OpOverload) and custom_op.lookup(target) is not None)


def plugin_nodes(gm: torch.fx.GraphModule) -> list[torch.fx.Node]:
    return [n for n in gm.graph.nodes if n.op == "call_function" and is_plugin_target(n.target)]


def _qualified(target: Any) -> str:
    from torch_tensorrt.dynamo.conversion._ConverterRegistry import ConverterRegistry

    return ConverterRegistry.qualified_name_or_str(target)


class _PluginOps:
    """``allowed_single_node_partition_ops`` holding every plugin op (qualified names, as the
    partitioners spell a node's target)."""

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        return name.startswith(_PREFIX) or any(name in op.qualified_names() for op in custom_op.all_defined())

    def __iter__(self):
        return iter(())


def segments(partitioned: torch.fx.GraphModule) -> dict[str, str]:
    """Node name -> the segment a plugin node is in: ``_run_on_acc_N`` (a TensorRT engine),
    ``_run_on_gpu_N`` or ``"pytorch"`` (the global partitioner leaves PyTorch nodes in place)."""
    out = {}
    for name, child in partitioned.named_children():
        if isinstance(child, torch.fx.GraphModule):
            for n in plugin_nodes(child):
                out[n.name] = name
    for n in plugin_nodes(partitioned):
        out[n.name] = "pytorch"
    return out


@contextlib.contextmanager
def keep_plugins_in_tensorrt(placements: dict[str, dict]) -> Iterator[None]:
    """While active, plugin nodes are never left to PyTorch for being in a small block, and
    ``placements`` receives node name -> {"segment", "region", "op"} from each partitioning."""
    from torch_tensorrt.dynamo import partitioning
    from torch_tensorrt.dynamo.conversion._ConverterRegistry import DYNAMO_CONVERTERS
    from torch_tensorrt.dynamo.partitioning import _adjacency_partitioner, _global_partitioner

    def exempting(init):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            if kwargs.get("allowed_single_node_partition_ops") is None:
                kwargs["allowed_single_node_partition_ops"] = _PluginOps()
            init(self, *args, **kwargs)

        return __init__

    def counting(support):
        def get_graph_converter_support(gm, torch_executed_ops=None):
            supported, total = support(gm, torch_executed_ops)
            blocked = {str(t) for t in (torch_executed_ops or ())}
            plugins = [n for n in plugin_nodes(gm) if str(n.target) not in blocked and _qualified(n.target) not in blocked]
            # Only a plugin its converter accepts (a custom op's validator may decline it) counts.
            if any(n in DYNAMO_CONVERTERS for n in plugins):
                supported = max(supported, DYNAMO_CONVERTERS.compilation_settings.min_block_size)
            return supported, total

        return get_graph_converter_support

    def recording(partition):
        def partition_and_record(gm, *args: Any, **kwargs: Any):
            result = partition(gm, *args, **kwargs)
            partitioned = result[0] if isinstance(result, tuple) else result
            by_name = {n.name: n for n in gm.graph.nodes}
            for node_name, segment in segments(partitioned).items():
                meta = by_name[node_name].meta.get("tta", {}) if node_name in by_name else {}
                placements[node_name] = {"segment": segment, "region": meta.get("region"), "op": meta.get("op")}
            return result

        return partition_and_record

    patches = [
        (_adjacency_partitioner.TRTPartitioner, "__init__", exempting),
        (_global_partitioner.TRTPartitioner, "__init__", exempting),
        (partitioning, "get_graph_converter_support", counting),
        (partitioning, "fast_partition", recording),
        (partitioning, "global_partition", recording),
    ]
    with _lock:
        saved = [(obj, attr, obj.__dict__[attr]) for obj, attr, _ in patches]
        try:
            for obj, attr, wrap in patches:
                setattr(obj, attr, wrap(getattr(obj, attr)))
            yield
        finally:
            for obj, attr, original in saved:
                setattr(obj, attr, original)


def warn_dropped_plugins(gm: torch.fx.GraphModule, settings: Any) -> torch.fx.GraphModule:
    """Post-lowering pass (last): warn about each plugin node Torch-TensorRT is about to leave
    to PyTorch because of ``min_block_size``. Does not change the graph."""
    if current_session() is not None or settings.min_block_size <= 1 or settings.require_full_compilation:
        return gm
    from torch_tensorrt.dynamo import partitioning
    from torch_tensorrt.dynamo.conversion._ConverterRegistry import DYNAMO_CONVERTERS

    DYNAMO_CONVERTERS.set_compilation_settings(settings)
    blocked = {str(t) for t in (settings.torch_executed_ops or ())}
    # A plugin its converter declines (a custom op's validator) or the user sends to PyTorch is
    # not dropped by min_block_size.
    plugins = [
        n for n in plugin_nodes(gm) if n in DYNAMO_CONVERTERS and str(n.target) not in blocked and _qualified(n.target) not in blocked
    ]
    if not plugins:
        return gm
    supported, total = partitioning.get_graph_converter_support(gm, settings.torch_executed_ops)
    if supported < settings.min_block_size:
        dropped = plugins
    else:
        graph = torch.fx.Graph()
        out = graph.graph_copy(gm.graph, {})
        graph.output(out)
        common = {
            "min_block_size": settings.min_block_size,
            "torch_executed_ops": settings.torch_executed_ops,
            "require_full_compilation": settings.require_full_compilation,
        }
        copy = torch.fx.GraphModule(gm, graph)
        if settings.use_fast_partitioner:
            trial, _ = partitioning.fast_partition(copy, skip_fusion=(supported == total), **common)
        else:
            trial, _ = partitioning.global_partition(copy, **common)
        where = segments(trial)
        dropped = [n for n in plugins if not where.get(n.name, "").startswith("_run_on_acc")]
    for n in dropped:
        meta = n.meta.get("tta", {})
        what = f"region {meta.get('region', n.name)}" if is_tta_target(n.target) else f"call {n.name}"
        warnings.warn(
            f"tta: the plugin of {what} ({n.target}) will run in PyTorch, not in the "
            f"TensorRT engine: its TensorRT block has fewer than min_block_size={settings.min_block_size} operators. "
            "Compile with tta.compile(...), which keeps plugins in TensorRT, or pass min_block_size=1.",
            stacklevel=2,
        )
    return gm


__all__ = ["is_plugin_target", "keep_plugins_in_tensorrt", "plugin_nodes", "segments", "warn_dropped_plugins"]
