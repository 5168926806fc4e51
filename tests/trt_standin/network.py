"""STAND-IN for the network-building half of TensorRT's native ``tensorrt`` module: builder,
network, builder config, optimization profiles, tensors, layers and the engine. Not TensorRT.

Torch-TensorRT's real interpreter drives these objects as it drives TensorRT's, and every call
is recorded (``INetworkDefinition.calls``, ``BUILDS``) so tests can assert on the network that
would have been built. ``add_plugin(func, aot=True)`` does what TensorRT's binding does: it calls
``func(QuickPluginCreationRequest.STRICT_AOT)``, which runs the real ``tensorrt.plugin`` creator,
and asks the plugin for its output types and shapes; ``build_engine_with_config`` then takes
every plugin layer, per optimization profile, through TensorRT's build-time calls (format
combinations, configure, each tactic's ``get_launch_params`` -> the plugin's ``aot_impl``,
``get_kernel``) and keeps what they returned (both steps are ``plugin_build.py``). No kernel
runs and nothing is timed.

Only the plugin, input, output, constant and cast layers exist; any other ``add_*`` raises with
the remedy (keep those ops out of TensorRT with ``torch_executed_ops``).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Iterable, Sequence

from .core import DataType, Dims, ITensor, _TrtEnum
from .exprs import InputDimExpr, OperationExpr, evaluate
from .plugin_build import add_plugin_aot, build_plugin

# -- enums Torch-TensorRT reads at import and while building (member values as in the bindings) --


def _enum(name: str, members: str, start: int = 0) -> type:
    """An enum whose members are numbered from ``start`` in the order given ("-": a retired value)."""
    return _TrtEnum(name, [(m, start + i) for i, m in enumerate(members.split()) if m != "-"])


NetworkDefinitionCreationFlag = _enum(
    "NetworkDefinitionCreationFlag",
    "STRONGLY_TYPED PREFER_JIT_PYTHON_PLUGINS PREFER_AOT_PYTHON_PLUGINS",
    start=1,
)
LayerType = _TrtEnum("LayerType", [("CONSTANT", 11), ("IDENTITY", 15), ("PLUGIN_V3", 45), ("CAST", 46)])
DeviceType = _enum("DeviceType", "GPU DLA")
EngineCapability = _enum("EngineCapability", "STANDARD SAFETY DLA_STANDALONE")
ProfilingVerbosity = _enum("ProfilingVerbosity", "LAYER_NAMES_ONLY NONE DETAILED")
TilingOptimizationLevel = _enum("TilingOptimizationLevel", "NONE FAST MODERATE FULL")
BuilderFlag = _enum(
    "BuilderFlag",
    "FP16 INT8 DEBUG GPU_FALLBACK - REFIT DISABLE_TIMING_CACHE TF32 SPARSE_WEIGHTS SAFETY_SCOPE OBEY_PRECISION_CONSTRAINTS "
    "PREFER_PRECISION_CONSTRAINTS DIRECT_IO REJECT_EMPTY_ALGORITHMS VERSION_COMPATIBLE EXCLUDE_LEAN_RUNTIME FP8 "
    "ERROR_ON_TIMING_CACHE_MISS BF16 DISABLE_COMPILATION_CACHE STRIP_PLAN REFIT_IDENTICAL WEIGHT_STREAMING INT4 "
    "REFIT_INDIVIDUAL STRICT_NANS MONITOR_MEMORY FP4 EDITABLE_TIMING_CACHE STRICT_TYPES",
)
MemoryPoolType = _enum(
    "MemoryPoolType",
    "WORKSPACE DLA_MANAGED_SRAM DLA_LOCAL_DRAM DLA_GLOBAL_DRAM TACTIC_DRAM TACTIC_SHARED_MEMORY",
)
HardwareCompatibilityLevel = _enum("HardwareCompatibilityLevel", "NONE AMPERE_PLUS SAME_COMPUTE_CAPABILITY")
RuntimePlatform = _enum("RuntimePlatform", "SAME_AS_BUILD WINDOWS_AMD64")
SerializationFlag = _enum("SerializationFlag", "EXCLUDE_WEIGHTS EXCLUDE_LEAN_RUNTIME INCLUDE_REFIT")
ActivationType = _enum(
    "ActivationType",
    "RELU SIGMOID TANH LEAKY_RELU ELU SELU SOFTSIGN SOFTPLUS CLIP HARD_SIGMOID SCALED_TANH THRESHOLDED_RELU GELU_ERF GELU_TANH",
)
ElementWiseOperation = _enum(
    "ElementWiseOperation",
    "SUM PROD MAX MIN SUB DIV POW FLOOR_DIV AND OR XOR EQUAL GREATER LESS",
)
UnaryOperation = _enum(
    "UnaryOperation",
    "EXP LOG SQRT RECIP ABS NEG SIN COS TAN SINH COSH ASIN ACOS ATAN ASINH ACOSH ATANH CEIL FLOOR ERF NOT SIGN ROUND ISINF ISNAN",
)
MatrixOperation = _enum("MatrixOperation", "NONE TRANSPOSE VECTOR")
InterpolationMode = _enum("InterpolationMode", "NEAREST LINEAR CUBIC")
SampleMode = _enum("SampleMode", "STRICT_BOUNDS WRAP CLAMP FILL REFLECT")
TopKOperation = _enum("TopKOperation", "MAX MIN")


# -- interfaces Torch-TensorRT subclasses or names in annotations --


class IProgressMonitor:
    def __init__(self) -> None:
        pass


class IOutputAllocator:
    def __init__(self) -> None:
        pass


class IAttention:  # named in a type annotation only
    pass


class Weights:
    """``tensorrt.Weights(type, ptr, count)``: a typed view of host memory (kept as given)."""

    def __init__(self, type: DataType = DataType.FLOAT, ptr: int = 0, count: int = 0) -> None:  # noqa: A002
        self.dtype, self.ptr, self.count = type, ptr, count

    @property
    def size(self) -> int:
        return self.count


# -- tensors and layers --


class _TensorIO:
    """``num_inputs``/``get_input``, ``num_outputs``/``get_output``: layers and networks alike."""

    inputs: list
    outputs: list

    @property
    def num_inputs(self) -> int:
        return len(self.inputs)

    @property
    def num_outputs(self) -> int:
        return len(self.outputs)

    def get_input(self, i: int) -> ITensor:
        return self.inputs[i]

    def get_output(self, i: int) -> ITensor:
        if not 0 <= i < len(self.outputs):
            raise IndexError(f"{self.name!r} has {len(self.outputs)} output(s), asked for {i}")
        return self.outputs[i]


class ILayer(_TensorIO):
    """A layer: ``name``, ``metadata`` (TensorRT shows it in the engine inspector), its tensors."""

    def __init__(self, network: "INetworkDefinition", type: LayerType, inputs: Sequence[ITensor], n_outputs: int) -> None:  # noqa: A002
        self.network = network
        self.type = type
        self.name = f"({type.name}) [{len(network.layers)}]"
        self.metadata = ""
        self.inputs = list(inputs)
        self.outputs = [_tensor(f"{self.name}_output_{i}", (), DataType.FLOAT, self) for i in range(n_outputs)]


class IPluginV3Layer(ILayer):
    """What ``add_plugin`` adds. ``added`` is what the plugin said when added (plugin object,
    output types, output shapes as expression trees over its inputs); ``kernels`` is filled by
    the build, per optimization profile."""

    def __init__(self, network, added) -> None:
        self.added = added
        self.plugin = added.plugin
        self.kernels: list = []  # list (per profile) of plugin_build.AOTKernel lists
        super().__init__(network, LayerType.PLUGIN_V3, added.inputs, len(added.output_types))

    def get_plugin(self):
        return self.plugin


def _tensor(name: str, shape: Iterable[int], dtype: DataType, producer: ILayer | None) -> ITensor:
    t = ITensor(name, shape, dtype)
    t.producer = producer
    t.is_network_input = False
    t.is_network_output = False
    return t


def _depends_on_dynamic(expr, shapes: Sequence[Sequence[int]]) -> bool:
    if isinstance(expr, InputDimExpr):
        return shapes[expr.input][expr.dim] < 0
    if isinstance(expr, OperationExpr):
        return _depends_on_dynamic(expr.first, shapes) or _depends_on_dynamic(expr.second, shapes)
    return False


class INetworkDefinition(_TensorIO):
    """A network under construction. ``calls`` lists every mutating call in order as
    ``(method, details)``; tests read it."""

    def __init__(self, flags: int = 0) -> None:
        self.flags = flags
        self.name = "network"
        self.layers: list[ILayer] = []
        self.inputs: list[ITensor] = []
        self.outputs: list[ITensor] = []
        self.calls: list[tuple[str, dict]] = []

    # queries Torch-TensorRT and the engine inspector use
    @property
    def num_layers(self) -> int:
        return len(self.layers)

    def get_layer(self, i: int) -> ILayer:
        return self.layers[i]

    def get_flag(self, flag: NetworkDefinitionCreationFlag) -> bool:
        return bool(self.flags & (1 << int(flag)))

    @property
    def plugin_layers(self) -> list[IPluginV3Layer]:
        return [l for l in self.layers if isinstance(l, IPluginV3Layer)]

    # building
    def add_input(self, name: str, dtype: DataType, shape) -> ITensor:
        if not isinstance(dtype, DataType):
            raise TypeError(f"add_input({name!r}): dtype must be a tensorrt.DataType, got {dtype!r}")
        t = _tensor(name, tuple(shape), dtype, None)
        t.is_network_input = True
        self.inputs.append(t)
        self.calls.append(("add_input", {"name": name, "dtype": dtype, "shape": tuple(shape)}))
        return t

    def mark_output(self, tensor: ITensor) -> None:
        self._check_own(tensor, "mark_output")
        tensor.is_network_output = True
        self.outputs.append(tensor)
        self.calls.append(("mark_output", {"name": tensor.name, "dtype": tensor.dtype, "shape": tuple(tensor.shape)}))

    def add_cast(self, input: ITensor, to_type: DataType) -> ILayer:  # noqa: A002
        self._check_own(input, "add_cast")
        layer = self._add(ILayer(self, LayerType.CAST, [input], 1))
        layer.outputs[0].shape, layer.outputs[0].dtype = Dims(tuple(input.shape)), to_type
        self.calls.append(("add_cast", {"input": input.name, "to": to_type}))
        return layer

    def add_identity(self, input: ITensor) -> ILayer:  # noqa: A002
        self._check_own(input, "add_identity")
        layer = self._add(ILayer(self, LayerType.IDENTITY, [input], 1))
        layer.outputs[0].shape, layer.outputs[0].dtype = Dims(tuple(input.shape)), input.dtype
        self.calls.append(("add_identity", {"input": input.name}))
        return layer

    def add_constant(self, shape, weights: Weights) -> ILayer:
        layer = self._add(ILayer(self, LayerType.CONSTANT, [], 1))
        layer.outputs[0].shape = Dims(tuple(shape))
        layer.outputs[0].dtype = weights.dtype if isinstance(weights, Weights) else DataType.FLOAT
        self.calls.append(("add_constant", {"shape": tuple(shape), "dtype": layer.outputs[0].dtype}))
        return layer

    def add_plugin(self, func, aot: bool | None = None) -> IPluginV3Layer:
        """``add_plugin(trtp.op.ns.name(...), aot=True)``: TensorRT's binding calls ``func`` with
        ``QuickPluginCreationRequest.STRICT_AOT``, then asks the plugin for its output types and
        shapes (``plugin_build.add_plugin_aot``). The stand-in records AOT plugins only."""
        if aot is not True:
            raise NotImplementedError(f"add_plugin(aot={aot!r}): the TensorRT stand-in builds ahead-of-time plugins only (aot=True)")
        added = add_plugin_aot(func)
        for t in added.inputs:
            self._check_own(t, "add_plugin")
        layer = IPluginV3Layer(self, added)
        in_shapes = [tuple(t.shape) for t in added.inputs]
        for out, dtype, dims in zip(layer.outputs, added.output_types, added.output_shapes):
            out.dtype = dtype
            out.shape = Dims([-1 if _depends_on_dynamic(e, in_shapes) else evaluate(e, in_shapes) for e in dims])
        self._add(layer)
        self.calls.append(
            (
                "add_plugin",
                {
                    "plugin": _plugin_id(added.plugin),
                    "aot": aot,
                    "inputs": [t.name for t in added.inputs],
                    "attrs": dict(getattr(added.plugin, "attrs", {}) or {}),
                    "layer": layer,
                },
            )
        )
        return layer

    def __getattr__(self, name: str):
        if name.startswith("add_"):
            raise NotImplementedError(
                f"the TensorRT stand-in has no {name}: only plugin, input, constant, cast and identity layers are "
                "recorded; keep other ops in PyTorch (torch_executed_ops) in stand-in tests"
            )
        raise AttributeError(name)

    def _add(self, layer: ILayer) -> ILayer:
        self.layers.append(layer)
        return layer

    def _check_own(self, t: ITensor, what: str) -> None:
        if not isinstance(t, ITensor):
            raise TypeError(f"{what}: expected a tensorrt.ITensor, got {type(t).__name__}")
        producer = getattr(t, "producer", None)
        if producer is None and t not in self.inputs:
            raise ValueError(f"{what}: tensor {t.name!r} does not belong to this network")
        if producer is not None and producer.network is not self:
            raise ValueError(f"{what}: tensor {t.name!r} belongs to another network")


def _plugin_id(plugin) -> str:
    return f"{getattr(plugin, 'plugin_namespace', '')}::{getattr(plugin, 'plugin_name', type(plugin).__name__)}"


# -- builder config, profiles, timing cache --


class IOptimizationProfile:
    def __init__(self) -> None:
        self.shapes: dict[str, tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]] = {}

    def set_shape(self, input: str, min, opt, max) -> None:  # noqa: A002
        lo, mid, hi = tuple(min), tuple(opt), tuple(max)
        if not (len(lo) == len(mid) == len(hi)) or any(not a <= b <= c for a, b, c in zip(lo, mid, hi)):
            raise ValueError(f"optimization profile for {input!r}: need min <= opt <= max, got {lo} {mid} {hi}")
        self.shapes[input] = (lo, mid, hi)

    def get_shape(self, input: str):  # noqa: A002
        return self.shapes.get(input, ((), (), ()))


class ITimingCache:
    def __init__(self, data: bytes = b"") -> None:
        self.data = bytes(data)

    def serialize(self) -> bytes:
        return self.data


class IBuilderConfig:
    """Plain settable attributes (Torch-TensorRT sets many) plus the methods it calls."""

    def __init__(self) -> None:
        self.profiles: list[IOptimizationProfile] = []
        self.flags: set = set()
        self.memory_pool_limits: dict = {}
        self.preview_features: dict = {}
        self.timing_cache: ITimingCache | None = None
        self.profiling_verbosity = ProfilingVerbosity.LAYER_NAMES_ONLY
        self.engine_capability = EngineCapability.STANDARD
        self.avg_timing_iterations = 1
        self.builder_optimization_level = 3
        self.tiling_optimization_level = TilingOptimizationLevel.NONE
        self.progress_monitor = None

    def add_optimization_profile(self, profile: IOptimizationProfile) -> int:
        self.profiles.append(profile)
        return len(self.profiles) - 1

    @property
    def num_optimization_profiles(self) -> int:
        return len(self.profiles)

    def set_flag(self, flag: BuilderFlag) -> None:
        self.flags.add(flag)

    def clear_flag(self, flag: BuilderFlag) -> None:
        self.flags.discard(flag)

    def get_flag(self, flag: BuilderFlag) -> bool:
        return flag in self.flags

    def set_memory_pool_limit(self, pool: MemoryPoolType, size: int) -> None:
        self.memory_pool_limits[pool] = size

    def set_preview_feature(self, feature, enable: bool) -> None:
        self.preview_features[feature] = enable

    def set_tactic_sources(self, tactic_sources: int) -> bool:
        return True

    def create_timing_cache(self, serialized: bytes) -> ITimingCache:
        return ITimingCache(serialized)

    def set_timing_cache(self, cache: ITimingCache, ignore_mismatch: bool) -> bool:
        self.timing_cache = cache
        return True

    def get_timing_cache(self) -> ITimingCache:
        return self.timing_cache or ITimingCache()


# -- building --


def _io_range(t: ITensor, ranges: dict[int, tuple]) -> tuple:
    """(min, opt, max) shape of a network tensor under the current profile."""
    r = ranges.get(id(t))
    if r is not None:
        return r
    static = tuple(t.shape)
    if any(d < 0 for d in static):
        raise RuntimeError(f"tensor {t.name!r} has dynamic dims {static} but no optimization-profile range")
    return (static, static, static)


def _build_layers(network: INetworkDefinition, profile: IOptimizationProfile) -> None:
    """Propagate the profile's ranges through the network and build every plugin layer for it
    (``plugin_build.build_plugin``: formats, configure, tactics, launch params, kernel)."""
    ranges: dict[int, tuple] = {}
    for t in network.inputs:
        if t.name in profile.shapes:
            ranges[id(t)] = profile.shapes[t.name]
        elif any(d < 0 for d in t.shape):
            raise RuntimeError(f"network input {t.name!r} has dynamic dims {tuple(t.shape)} and no profile shape")
    for layer in network.layers:
        if isinstance(layer, IPluginV3Layer):
            in_ranges = [_io_range(t, ranges) for t in layer.inputs]
            kernels = build_plugin(layer.added, in_ranges)
            if not kernels:
                raise RuntimeError(f"plugin layer {layer.name!r}: no kernel for input types {layer.added.input_types}")
            layer.kernels.append(kernels)
            for t, dims in zip(layer.outputs, layer.added.output_shapes):
                ranges[id(t)] = tuple(tuple(evaluate(e, [r[k] for r in in_ranges]) for e in dims) for k in range(3))
        elif layer.inputs:
            ranges[id(layer.outputs[0])] = _io_range(layer.inputs[0], ranges)


class ICudaEngine:
    """The stand-in's engine: what was built, and a JSON "plan" as its serialization (which no
    TensorRT runtime can load)."""

    def __init__(self, network: INetworkDefinition, config: IBuilderConfig) -> None:
        self.network, self.config = network, config
        self.num_optimization_profiles = max(1, len(config.profiles))

    def serialize(self) -> bytes:
        doc = {
            "stand-in": "tensorrt stand-in plan, not a TensorRT engine",
            "inputs": [[t.name, t.dtype.name, list(t.shape)] for t in self.network.inputs],
            "outputs": [[t.name, t.dtype.name, list(t.shape)] for t in self.network.outputs],
            "layers": [[l.type.name, l.name, l.metadata] for l in self.network.layers],
            "kernels": [
                [l.name, p, k.tactic, _text(k.kernel_name), _digest(k.code)]
                for l in self.network.plugin_layers
                for p, ks in enumerate(l.kernels)
                for k in ks
            ],
        }
        return json.dumps(doc, sort_keys=True).encode()

    def create_serialization_config(self):
        return _SerializationConfig()

    def serialize_with_config(self, config) -> bytes:
        return self.serialize()

    def get_aliased_input_tensor(self, name: str):
        return None

    @property
    def num_io_tensors(self) -> int:
        return len(self.network.inputs) + len(self.network.outputs)

    def get_tensor_name(self, i: int) -> str:
        return [*self.network.inputs, *self.network.outputs][i].name


class _SerializationConfig:
    def __init__(self) -> None:
        self.flags = 0

    def set_flag(self, flag) -> bool:
        self.flags |= 1 << int(flag)
        return True


def _text(s) -> str:
    return s.decode() if isinstance(s, bytes) else s


def _digest(code: bytes) -> str:
    import hashlib

    return hashlib.sha256(code if isinstance(code, bytes) else code.encode()).hexdigest()[:16]


@dataclass
class Build:
    network: INetworkDefinition
    config: IBuilderConfig
    engine: ICudaEngine


BUILDS: list[Build] = []  # every engine built in this process, oldest first
_builds_lock = threading.Lock()


class Builder:
    def __init__(self, logger) -> None:
        self.logger = logger
        self.platform_has_fast_fp16 = True
        self.platform_has_tf32 = True

    def create_network(self, flags: int = 0) -> INetworkDefinition:
        return INetworkDefinition(flags)

    def create_builder_config(self) -> IBuilderConfig:
        return IBuilderConfig()

    def create_optimization_profile(self) -> IOptimizationProfile:
        return IOptimizationProfile()

    def build_engine_with_config(self, network: INetworkDefinition, config: IBuilderConfig) -> ICudaEngine:
        if not network.outputs:
            raise RuntimeError("build_engine_with_config: the network has no outputs")
        for profile in config.profiles or [IOptimizationProfile()]:
            _build_layers(network, profile)
        engine = ICudaEngine(network, config)
        with _builds_lock:
            BUILDS.append(Build(network, config, engine))
        return engine

    def build_serialized_network(self, network: INetworkDefinition, config: IBuilderConfig) -> bytes:
        return self.build_engine_with_config(network, config).serialize()


class Runtime:
    """Deserializing needs TensorRT's runtime, which the stand-in does not have."""

    def __init__(self, logger) -> None:
        self.logger = logger

    def deserialize_cuda_engine(self, plan: bytes):
        raise RuntimeError("the TensorRT stand-in cannot deserialize engines (no TensorRT runtime here)")


__all__ = [
    "ActivationType",
    "BUILDS",
    "Build",
    "Builder",
    "BuilderFlag",
    "DeviceType",
    "ElementWiseOperation",
    "EngineCapability",
    "HardwareCompatibilityLevel",
    "IAttention",
    "IBuilderConfig",
    "ICudaEngine",
    "ILayer",
    "INetworkDefinition",
    "IOptimizationProfile",
    "IOutputAllocator",
    "IPluginV3Layer",
    "IProgressMonitor",
    "ITimingCache",
    "InterpolationMode",
    "LayerType",
    "MatrixOperation",
    "MemoryPoolType",
    "NetworkDefinitionCreationFlag",
    "ProfilingVerbosity",
    "Runtime",
    "RuntimePlatform",
    "SampleMode",
    "SerializationFlag",
    "TilingOptimizationLevel",
    "TopKOperation",
    "UnaryOperation",
    "Weights",
]
