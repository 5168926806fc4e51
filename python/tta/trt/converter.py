"""The Torch-TensorRT converter of every ``tta::<op>``: one TensorRT plugin layer per outlined
region, built from the op's ahead-of-time QDP plugin (``add_plugin(..., aot=True)``), so the
engine carries the compiled kernels and needs no Python when it runs.

The layer is named after the region and its metadata (which TensorRT's engine inspector shows)
says which op, region and line of user code it came from. Before the layer is added, the
plugin's tactics are narrowed to the configs whose guards hold over the whole optimization
profile, read from the node's symbolic shapes: a layer whose ranges rule out some tactics gets a
plugin offering only the others (``profile_tactics.restricted``), so call sites do not share one restriction.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
from typing import Any, Sequence

import torch
from torch_tensorrt.dynamo.conversion import ConversionContext
from torch_tensorrt.dynamo.conversion._ConverterRegistry import ConverterPriority, dynamo_tensorrt_converter
from torch_tensorrt.dynamo.conversion.converter_utils import get_trt_tensor

from ..common import known_bugs
from ..common.cuda_driver import driver_ptx_cap
from ..errors import PluginError
from ..runtime.ops import NAMESPACE
from . import profile_tactics, qdp

_registered: set[str] = set()
_lock = threading.Lock()

# TensorRT keeps at most this many bytes of layer metadata.
_METADATA_LIMIT = 4096
# The upper end assumed for a dim the export left unbounded, when checking kernel guards.
_UNBOUNDED = 2**31 - 1


def register(op: str, overload: torch._ops.OpOverload) -> None:
    """Register the converter of ``tta::<op>`` once (idempotent, thread-safe). Its priority puts
    it before any generic converter of the op, and it converts dynamic shapes."""
    if op in _registered:
        return
    with _lock:
        if op in _registered:
            return
        dynamo_tensorrt_converter(overload, supports_dynamic_shapes=True, priority=ConverterPriority.HIGH)(convert_tta_op)
        _registered.add(op)


def convert_tta_op(ctx: ConversionContext, target: Any, args: tuple, kwargs: dict, name: str):
    import tensorrt as trt

    node = ctx.current_node
    op = target._schema.name.split("::", 1)[1]
    info = region_info(node, op)
    values = _bind(target._schema, args, kwargs, op)
    fx_values = _bind(target._schema, node.args, node.kwargs, op) if node is not None else [None] * len(values)
    itensors, ranges = [], []
    for arg, value, fx_value in zip(target._schema.arguments, values, fx_values):
        if isinstance(value, trt.ITensor):
            itensors.append(value)
            ranges.append(_ranges_of(fx_value, value))
        elif isinstance(value, torch.Tensor):
            # A weight or constant the region reads (get_attr): a constant layer feeds the plugin.
            itensors.append(get_trt_tensor(ctx, value, f"{info['layer']}/{arg.name}"))
            ranges.append([(int(d), int(d)) for d in value.shape])
        else:
            raise PluginError(
                f"tta::{op} (region {info['region']}, {info['source']}): input {arg.name} is {value!r}, not a tensor; "
                "a TensorRT plugin of a region takes tensors only (integers a region reads must be baked into "
                "the kernel or passed as a tensor)"
            )
    return add_plugin_layer(ctx, op, itensors, ranges, info)


def add_plugin_layer(ctx: ConversionContext, plugin: str, itensors: list, ranges: list, info: dict, values: dict | None = None):
    """The plugin layer of ``tta::<plugin>`` on ``itensors``, its tactics narrowed to those
    valid over ``ranges`` (a plugin of its own when that leaves out some: other call sites may
    have other ranges), with the attribute ``values`` (for plugins that have attributes). On
    TensorRT versions with a known AOT-plugin bug, the first layer of each engine warns."""
    import tensorrt as trt
    import tensorrt.plugin as trtp

    plugin = profile_tactics.restricted(plugin, profile_tactics.restrict_tactics(plugin, ranges, values))
    kwargs = qdp.attribute_kwargs(plugin, values) if values is not None else {}
    create = getattr(getattr(trtp.op, NAMESPACE), plugin)(*itensors, **kwargs)
    layer = ctx.net.add_plugin(create, aot=True)
    layer.name = info["layer"]
    # One conversion context per engine Torch-TensorRT builds: warn once per engine.
    known_bugs.warn_once_per_engine(ctx, trt.__version__, layer.name)
    layer.metadata = layer_metadata(info)
    record_conversion(info)
    outputs = [layer.get_output(i) for i in range(layer.num_outputs)]
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


def register_custom_op(op: Any, capability_validator: Any, priority: Any, supports_dynamic_shapes: bool) -> None:
    """The converter of a ``tta.custom_op`` op, with Torch-TensorRT's own meaning of the
    validator (``(node, settings) -> bool``), priority and dynamic-shape support."""

    def convert(ctx: ConversionContext, target: Any, args: tuple, kwargs: dict, name: str):
        return convert_custom_op(op, ctx, target, args, kwargs, name)

    dynamo_tensorrt_converter(
        op.signature.overload,
        capability_validator=capability_validator,
        priority=ConverterPriority.STANDARD if priority is None else priority,
        supports_dynamic_shapes=supports_dynamic_shapes,
    )(convert)


def convert_custom_op(op: Any, ctx: ConversionContext, target: Any, args: tuple, kwargs: dict, name: str):
    """One call site of a ``tta.custom_op`` op: its plugin variant (input types, which optional
    tensors are there) and its attribute values (``custom_op.py``)."""
    import tensorrt as trt

    from . import custom_op_sites

    node = ctx.current_node
    sig = op.signature
    where = f"{sig.op_name} ({node.name if node is not None else name}, {region_info(node, name)['source']})"
    values = _bind(target._schema, args, kwargs, sig.op_name)
    fx_values = _bind(target._schema, node.args, node.kwargs, sig.op_name) if node is not None else [None] * len(values)
    itensors, ranges, fakes, present, attrs = [], [], [], [], {}
    for arg, value, fx_value in zip(sig.args, values, fx_values):
        if arg.kind == "attribute":
            if isinstance(value, (trt.ITensor, torch.fx.Node, torch.SymInt, torch.SymFloat, torch.Tensor)):
                raise PluginError(
                    f"{where}: argument {arg.name} is computed from the model's tensors or shapes here; a TensorRT "
                    "plugin attribute is fixed when the engine is built, so pass a constant"
                )
            attrs[arg.name] = custom_op_sites.coerce(arg, value)
            continue
        if value is None:
            present.append(False)
            continue
        present.append(True)
        if isinstance(value, torch.Tensor):
            itensors.append(get_trt_tensor(ctx, value, f"{name}/{arg.name}"))
            fakes.append(value)
            ranges.append([(int(d), int(d)) for d in value.shape])
            continue
        if not isinstance(value, trt.ITensor):
            raise PluginError(f"{where}: argument {arg.name} is {value!r}, not a tensor")
        fake = fx_value.meta.get("val") if isinstance(fx_value, torch.fx.Node) else None
        if not isinstance(fake, torch.Tensor):
            raise PluginError(f"{where}: argument {arg.name} has no fake value in the graph (meta['val']) to type the plugin by")
        itensors.append(value)
        fakes.append(fake)
        ranges.append(_ranges_of(fx_value, value))
    from .lowering import current_session, device_sm

    session = current_session()
    sm = session.sm if session is not None else device_sm(ctx.compilation_settings)
    max_ptx = session.max_ptx if session is not None else driver_ptx_cap().option
    try:
        plugin = op.plugin_name(present, custom_op_sites.input_metas(fakes), sm=sm, max_ptx=max_ptx)
    except PluginError as e:
        raise PluginError(f"{where}: {e}") from None
    info = {
        "op": sig.op_name,
        "region": node.name if node is not None else name,
        "impl": plugin,
        "source": region_info(node, name)["source"],
        "layer": f"{sig.op_name}/{node.name if node is not None else name}",
    }
    try:
        return add_plugin_layer(ctx, plugin, itensors, ranges, info, attrs)
    except PluginError as e:
        raise PluginError(f"{where}: {e}") from None


def _bind(schema, args: Sequence[Any], kwargs: dict, op: str) -> list:
    """The node's values in schema order: positional args, then keyword ones (torch.export keeps
    keyword-only arguments in kwargs)."""
    values = list(args)
    for a in schema.arguments[len(values) :]:
        if a.name in kwargs:
            values.append(kwargs[a.name])
        elif a.has_default_value():
            values.append(a.default_value)
        else:
            raise PluginError(f"tta::{op}: the node has no value for argument {a.name}")
    return values


_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def _source_from_stack(stack_trace: str | None) -> str | None:
    """The innermost frame of the user's code in a node's stack trace."""
    if not stack_trace:
        return None
    frames = _FRAME.findall(stack_trace)
    return f"{frames[-1][0]}:{frames[-1][1]}" if frames else None


def region_info(node: torch.fx.Node | None, op: str) -> dict:
    """What the converter knows about the region a node replaced: set by tta's lowering pass
    (``node.meta["tta"]``); for programs rewritten before export's retracing, only the op."""
    meta = dict(node.meta.get("tta") or {}) if node is not None else {}
    region = meta.get("region")
    source = meta.get("source") or _source_from_stack(node.meta.get("stack_trace") if node is not None else None)
    node_name = node.name if node is not None else op
    return {
        "op": f"{NAMESPACE}::{op}",
        "region": region or node_name,
        "impl": meta.get("impl"),
        "source": source or "<unknown source>",
        "layer": f"tta:{region}" if region else f"tta:{op}/{node_name}",
    }


def layer_metadata(info: dict) -> str:
    text = json.dumps({"op": info["op"], "region": info["region"], "source": info["source"]}, separators=(",", ":"))
    if len(text.encode()) > _METADATA_LIMIT:
        text = json.dumps({"op": info["op"], "region": info["region"]}, separators=(",", ":"))
    return text


def _ranges_of(fx_value: Any, itensor: Any) -> list[tuple[int, int]]:
    """Each dim's (min, max) as the node's ShapeEnv knows them (the export's dynamic-shape
    ranges, which Torch-TensorRT's profiles span; a static dim is (n, n)). Without a fake value,
    the ITensor's dims."""
    val = fx_value.meta.get("val") if isinstance(fx_value, torch.fx.Node) else None
    if isinstance(val, torch.Tensor):
        return [_range(d) for d in val.shape]
    return [(int(d), int(d)) if int(d) >= 0 else (0, _UNBOUNDED) for d in itensor.shape]


def _range(d) -> tuple[int, int]:
    if isinstance(d, int):
        return (d, d)
    node = d.node
    if node.expr.is_number:
        return (int(node.expr), int(node.expr))
    vr = node.shape_env.bound_sympy(node.expr)
    lo, hi = finite_int(vr.lower), finite_int(vr.upper)
    return (0 if lo is None else lo, _UNBOUNDED if hi is None else hi)


def finite_int(v) -> int | None:
    """A ShapeEnv bound as an int, None when infinite (torch's ``int_oo`` says it is finite)."""
    from torch.utils._sympy.numbers import IntInfinity, NegativeIntInfinity

    if isinstance(v, (IntInfinity, NegativeIntInfinity)) or not v.is_finite:
        return None
    return int(v)


# Conversions seen while tta.compile runs (it reads them for its report); None otherwise.
_conversions: list[dict] | None = None


@contextlib.contextmanager
def recording_conversions(into: list[dict]):
    """Inside the block every conversion is appended to ``into`` (``tta.compile``'s report)."""
    global _conversions
    _conversions = into
    try:
        yield into
    finally:
        _conversions = None


def record_conversion(info: dict) -> None:
    if _conversions is not None:
        _conversions.append(dict(info))
