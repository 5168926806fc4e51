"""The one dtype table: each dtype tta kernels take, by the name manifests and the graph format
use, with its torch dtype, its spelling in each kernel DSL and its TensorRT ``DataType``."""

from __future__ import annotations

from typing import NamedTuple

import torch

from ..errors import PluginError


class DType(NamedTuple):
    torch: torch.dtype
    triton: str  # Triton pointer element type
    cutlass: str  # attribute of the ``cutlass`` module
    cutile: str  # attribute of the ``cuda.tile`` module
    tensorrt: str | None  # member of TensorRT's ``DataType``; None: no TensorRT plugin takes it


TABLE: dict[str, DType] = {
    "float32": DType(torch.float32, "fp32", "Float32", "float32", "FLOAT"),
    "float16": DType(torch.float16, "fp16", "Float16", "float16", "HALF"),
    "bfloat16": DType(torch.bfloat16, "bf16", "BFloat16", "bfloat16", "BF16"),
    "float64": DType(torch.float64, "fp64", "Float64", "float64", None),
    "int8": DType(torch.int8, "i8", "Int8", "int8", "INT8"),
    "uint8": DType(torch.uint8, "u8", "Uint8", "uint8", "UINT8"),
    "int16": DType(torch.int16, "i16", "Int16", "int16", None),
    "int32": DType(torch.int32, "i32", "Int32", "int32", "INT32"),
    "int64": DType(torch.int64, "i64", "Int64", "int64", "INT64"),
    "bool": DType(torch.bool, "i1", "Boolean", "bool_", "BOOL"),
    "float8_e4m3fn": DType(torch.float8_e4m3fn, "fp8e4nv", "Float8E4M3FN", "float8_e4m3fn", "FP8"),
    "float8_e5m2": DType(torch.float8_e5m2, "fp8e5", "Float8E5M2", "float8_e5m2", None),
}

# tta dtype names -> TensorRT DataType member names (autotune strings and descriptor dtypes).
TENSORRT: dict[str, str] = {name: d.tensorrt for name, d in TABLE.items() if d.tensorrt is not None}


def dtype_name(dtype: torch.dtype | str) -> str:
    """``torch.float16`` -> ``"float16"``; a name is checked against the table."""
    if isinstance(dtype, str):
        name = dtype.removeprefix("torch.")
        if name not in TABLE:
            raise PluginError(f"unsupported dtype {dtype!r}; tta kernels take {sorted(TABLE)}")
        return name
    return str(dtype).removeprefix("torch.")


def torch_dtype(dtype: torch.dtype | str) -> torch.dtype:
    return TABLE[dtype_name(dtype)].torch if isinstance(dtype, str) else dtype


def entry(dtype: torch.dtype | str) -> DType:
    name = dtype_name(dtype)
    if name not in TABLE:
        raise PluginError(f"unsupported dtype {name!r}; tta kernels take {sorted(TABLE)}")
    return TABLE[name]
