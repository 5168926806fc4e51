"""STAND-IN for the plugin-facing part of TensorRT's native ``tensorrt`` module.

This is not TensorRT. TensorRT's native library (``tensorrt.so`` over libnvinfer) cannot be
installed here, so these small, explicit classes take its place under the REAL
``tensorrt.plugin`` Python package (see ``__init__.py``). Names, signatures and enum values follow
the upstream pybind11 bindings and ``NvInferPythonPlugin.h``; behaviour is only what the plugin
package and our tests need, and every object records what was done to it instead of running
anything.

Faithfulness notes (why some things look the way they do):

* Enum members are distinct per enum (``DataType.FLOAT != TensorFormat.LINEAR``) and an unknown
  member name raises ``AttributeError``, as with pybind11 enums.
* ``PluginField.data`` is a 1-D NumPy array of the field's element type, as the bindings return
  it, so the plugin package's own attribute decoding runs exactly as on real TensorRT (including
  its failure on ``int``/``float`` attributes with NumPy >= 2.4 on TensorRT 11.1).
* The plugin registry keeps the first creator registered under (name, version, namespace).
"""

from __future__ import annotations

import enum
from typing import Any, Iterable

import numpy as np

__all__ = [
    "DataType",
    "TensorFormat",
    "DimensionOperation",
    "PluginFieldType",
    "PluginArgType",
    "PluginArgDataType",
    "QuickPluginCreationRequest",
    "TensorRTPhase",
    "PluginCapabilityType",
    "float32",
    "float16",
    "bfloat16",
    "int8",
    "int32",
    "int64",
    "bool",
    "uint8",
    "fp8",
    "int4",
    "fp4",
    "e8m0",
    "nptype",
    "ILogger",
    "Logger",
    "Dims",
    "PluginField",
    "PluginFieldCollection",
    "PluginTensorDesc",
    "DynamicPluginTensorDesc",
    "ITensor",
    "IPluginV3",
    "IPluginV3QuickCore",
    "IPluginV3QuickBuild",
    "IPluginV3QuickRuntime",
    "IPluginV3QuickAOTBuild",
    "IPluginCreatorV3Quick",
    "ISymExpr",
    "ISymExprs",
    "IKernelLaunchParams",
    "IPluginRegistry",
    "get_plugin_registry",
    "init_libnvinfer_plugins",
]


class _TrtEnum(enum.Enum):
    """A pybind11-style enum: int() gives the value, members of different enums never compare
    equal."""

    def __int__(self) -> int:
        return self.value

    def __index__(self) -> int:
        return self.value

    def __repr__(self) -> str:
        return f"<{type(self).__name__}.{self.name}: {self.value}>"


class DataType(_TrtEnum):
    FLOAT = 0
    HALF = 1
    INT8 = 2
    INT32 = 3
    BOOL = 4
    UINT8 = 5
    FP8 = 6
    BF16 = 7
    INT64 = 8
    INT4 = 9
    FP4 = 10
    E8M0 = 11

    @property
    def itemsize(self) -> float:
        return {0: 4, 1: 2, 2: 1, 3: 4, 4: 1, 5: 1, 6: 1, 7: 2, 8: 8, 9: 0.5, 10: 0.5, 11: 1}[self.value]


float32 = DataType.FLOAT
float16 = DataType.HALF
bfloat16 = DataType.BF16
int8 = DataType.INT8
int32 = DataType.INT32
int64 = DataType.INT64
uint8 = DataType.UINT8
fp8 = DataType.FP8
int4 = DataType.INT4
fp4 = DataType.FP4
e8m0 = DataType.E8M0


def nptype(dtype: DataType):
    """NumPy type of a TensorRT dtype (the bindings' ``tensorrt.nptype``)."""
    table = {
        DataType.FLOAT: np.float32,
        DataType.HALF: np.float16,
        DataType.INT8: np.int8,
        DataType.INT32: np.int32,
        DataType.INT64: np.int64,
        DataType.BOOL: np.bool_,
        DataType.UINT8: np.uint8,
    }
    if dtype not in table:
        raise TypeError(f"Could not resolve TensorRT datatype to an equivalent numpy datatype. ({dtype})")
    return table[dtype]


class TensorFormat(_TrtEnum):
    LINEAR = 0
    CHW2 = 1
    HWC8 = 2
    CHW4 = 3
    CHW16 = 4
    CHW32 = 5
    DHWC8 = 6
    CDHW32 = 7
    HWC = 8
    DLA_LINEAR = 9
    DLA_HWC4 = 10
    HWC16 = 11
    DHWC = 12


class DimensionOperation(_TrtEnum):
    SUM = 0
    PROD = 1
    MAX = 2
    MIN = 3
    SUB = 4
    EQUAL = 5
    LESS = 6
    FLOOR_DIV = 7
    CEIL_DIV = 8


class PluginFieldType(_TrtEnum):
    FLOAT16 = 0
    FLOAT32 = 1
    FLOAT64 = 2
    INT8 = 3
    INT16 = 4
    INT32 = 5
    CHAR = 6
    DIMS = 7
    UNKNOWN = 8
    BF16 = 9
    INT64 = 10
    FP8 = 11
    INT4 = 12
    FP4 = 13


# Element type of ``PluginField.data`` per field type (UNKNOWN: raw bytes).
_FIELD_NP = {
    PluginFieldType.FLOAT16: np.float16,
    PluginFieldType.FLOAT32: np.float32,
    PluginFieldType.FLOAT64: np.float64,
    PluginFieldType.INT8: np.int8,
    PluginFieldType.INT16: np.int16,
    PluginFieldType.INT32: np.int32,
    PluginFieldType.INT64: np.int64,
    PluginFieldType.CHAR: np.int8,
    PluginFieldType.UNKNOWN: np.uint8,
}


class PluginArgType(_TrtEnum):
    INT = 0


class PluginArgDataType(_TrtEnum):
    INT8 = 0
    INT16 = 1
    INT32 = 2


class QuickPluginCreationRequest(_TrtEnum):
    UNKNOWN = 0
    PREFER_JIT = 1
    PREFER_AOT = 2
    STRICT_JIT = 3
    STRICT_AOT = 4


class TensorRTPhase(_TrtEnum):
    BUILD = 0
    RUNTIME = 1


class PluginCapabilityType(_TrtEnum):
    CORE = 0
    BUILD = 1
    RUNTIME = 2


class ILogger:
    class Severity(_TrtEnum):
        INTERNAL_ERROR = 0
        ERROR = 1
        WARNING = 2
        INFO = 3
        VERBOSE = 4

    INTERNAL_ERROR = Severity.INTERNAL_ERROR
    ERROR = Severity.ERROR
    WARNING = Severity.WARNING
    INFO = Severity.INFO
    VERBOSE = Severity.VERBOSE

    def __init__(self) -> None:
        pass

    def log(self, severity, msg: str) -> None:
        raise NotImplementedError


class Logger(ILogger):
    """Keeps every message (``messages``) instead of printing."""

    def __init__(self, min_severity=ILogger.Severity.WARNING) -> None:
        super().__init__()
        self.min_severity = min_severity
        self.messages: list[tuple[Any, str]] = []

    def log(self, severity, msg: str) -> None:
        self.messages.append((severity, msg))


class Dims:
    """``tensorrt.Dims``: a short list of ints (-1 for a dynamic dimension)."""

    MAX_DIMS = 8

    def __init__(self, shape: Iterable[int] | int = ()) -> None:
        values = [0] * shape if isinstance(shape, int) else [int(d) for d in shape]
        if len(values) > Dims.MAX_DIMS:
            raise ValueError(f"Dims supports at most {Dims.MAX_DIMS} dimensions, got {len(values)}")
        self._values = values

    def __len__(self) -> int:
        return len(self._values)

    def __getitem__(self, i):
        return self._values[i]

    def __setitem__(self, i: int, v: int) -> None:
        self._values[i] = int(v)

    def __iter__(self):
        return iter(self._values)

    def __eq__(self, other) -> bool:
        try:
            return list(self) == list(other)
        except TypeError:
            return NotImplemented

    def __repr__(self) -> str:
        return f"({', '.join(map(str, self._values))})"


class PluginField:
    """``tensorrt.PluginField(name, data, type)``. ``data`` reads back as a 1-D NumPy array of
    the field type's element type (raw bytes for UNKNOWN), like the bindings'."""

    def __init__(self, name: str = "", data: Any = None, type: PluginFieldType = PluginFieldType.UNKNOWN) -> None:  # noqa: A002
        self.name = name
        self.type = type
        if data is None:
            raw = b""
        elif isinstance(data, (bytes, bytearray)):
            raw = bytes(data)
        else:
            raw = np.ascontiguousarray(data).tobytes()
        self._raw = raw
        itemsize = np.dtype(_FIELD_NP.get(type, np.uint8)).itemsize
        self.length = len(raw) // itemsize

    @property
    def data(self) -> np.ndarray:
        return np.frombuffer(self._raw, dtype=_FIELD_NP.get(self.type, np.uint8)).copy()

    def __repr__(self) -> str:
        return f"PluginField({self.name!r}, {self.type.name}, length={self.length})"


class PluginFieldCollection(list):
    """``tensorrt.PluginFieldCollection(fields)``: the fields, in order."""

    def __init__(self, fields: Iterable[PluginField] = ()) -> None:
        fields = list(fields)
        for f in fields:
            if not isinstance(f, PluginField):
                raise TypeError(f"PluginFieldCollection takes PluginFields, got {type(f).__name__}")
        super().__init__(fields)


class PluginTensorDesc:
    def __init__(self) -> None:
        self.dims = Dims()
        self.type = DataType.FLOAT
        self.format = TensorFormat.LINEAR
        self.scale = 1.0


class DynamicPluginTensorDesc:
    """A tensor's description plus its optimization-profile range (``desc.dims`` has -1 for the
    dynamic dimensions)."""

    def __init__(self) -> None:
        self.desc = PluginTensorDesc()
        self.min = Dims()
        self.opt = Dims()
        self.max = Dims()


class ITensor:
    """A network tensor. The network side of the stand-in (``network.py``) creates and extends
    them; the plugin package only checks ``isinstance(x, trt.ITensor)``."""

    def __init__(self, name: str = "", shape: Iterable[int] = (), dtype: DataType = DataType.FLOAT) -> None:
        self.name = name
        self.shape = Dims(shape)
        self.dtype = dtype


# -- plugin interfaces: subclassed by the plugin package, whose __init__ calls ours explicitly --


class IPluginV3:
    def __init__(self) -> None:
        pass


class IPluginV3QuickCore:
    def __init__(self) -> None:
        pass


class IPluginV3QuickBuild:
    def __init__(self) -> None:
        pass


class IPluginV3QuickRuntime:
    def __init__(self) -> None:
        pass


class IPluginV3QuickAOTBuild:
    def __init__(self) -> None:
        pass


class IPluginCreatorV3Quick:
    def __init__(self) -> None:
        pass


class ISymExpr:
    """One scalar kernel argument or launch value: ``type``, ``dtype`` and ``expr`` (an
    ``IDimensionExpr``), set by the plugin package's subclass."""

    def __init__(self) -> None:
        self.type = None
        self.dtype = None
        self.expr = None


class ISymExprs:
    """Where ``get_launch_params`` puts the extra kernel arguments: set ``nbSymExprs``, then each
    element. A null expression is refused (real TensorRT would fail the build)."""

    def __init__(self) -> None:
        self._items: list[ISymExpr | None] = []

    @property
    def nbSymExprs(self) -> int:
        return len(self._items)

    @nbSymExprs.setter
    def nbSymExprs(self, n: int) -> None:
        self._items = [None] * int(n)

    def __setitem__(self, i: int, value: ISymExpr) -> None:
        _check_sym_expr(value, f"extra argument {i}")
        self._items[i] = value

    def __getitem__(self, i: int) -> ISymExpr | None:
        return self._items[i]

    def __len__(self) -> int:
        return len(self._items)


class IKernelLaunchParams:
    """Where ``get_launch_params`` puts grid, block and dynamic shared memory (each an
    ``ISymExpr``); no other field exists."""

    FIELDS = ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "shared_mem")

    def __init__(self) -> None:
        object.__setattr__(self, "_values", {})

    def __setattr__(self, name: str, value: ISymExpr) -> None:
        if name not in IKernelLaunchParams.FIELDS:
            raise AttributeError(f"IKernelLaunchParams has no attribute {name!r}")
        _check_sym_expr(value, name)
        self._values[name] = value

    def __getattr__(self, name: str) -> ISymExpr:
        values = object.__getattribute__(self, "_values")
        if name in IKernelLaunchParams.FIELDS:
            return values.get(name)
        raise AttributeError(name)


def _check_sym_expr(value: Any, what: str) -> None:
    from .exprs import IDimensionExpr

    if not isinstance(value, ISymExpr):
        raise TypeError(f"{what}: expected a tensorrt.ISymExpr, got {type(value).__name__}")
    if not isinstance(value.expr, IDimensionExpr):
        raise TypeError(
            f"{what}: null expression ({value.expr!r}); the value was built from something that is not a Python "
            "int or an expression (a NumPy scalar, a float) or outside a shape/launch context"
        )


class IPluginRegistry:
    """Creators by (name, version, namespace); the first one registered under a key stays."""

    def __init__(self) -> None:
        self._creators: dict[tuple[str, str, str], Any] = {}

    def register_creator(self, creator: Any, plugin_namespace: str = "") -> bool:
        key = (creator.name, str(creator.plugin_version), plugin_namespace)
        if key in self._creators:
            return False
        self._creators[key] = creator
        return True

    def get_creator(self, name: str, version: str, plugin_namespace: str = "") -> Any:
        return self._creators.get((name, str(version), plugin_namespace))

    @property
    def all_creators(self) -> list:
        return list(self._creators.values())


_REGISTRY = IPluginRegistry()


def get_plugin_registry() -> IPluginRegistry:
    return _REGISTRY


def init_libnvinfer_plugins(logger: Any, namespace: str) -> bool:
    return True


# The bindings export ``tensorrt.bool``; bound last so this module keeps the builtin above.
globals()["bool"] = DataType.BOOL
