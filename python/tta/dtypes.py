"""The one dtype table: each dtype tta kernels take, by the name manifests and the graph format
use, with its torch dtype and its spelling in each kernel DSL."""

from __future__ import annotations

from typing import NamedTuple

import torch

from .errors import PluginError


class DType(NamedTuple):
    torch: torch.dtype
    triton: str  # Triton pointer element type
    cutlass: str  # attribute of the ``cutlass`` module


TABLE: dict[str, DType] = {
    "float32": DType(torch.float32, "fp32", "Float32"),
    "float16": DType(torch.float16, "fp16", "Float16"),
    "bfloat16": DType(torch.bfloat16, "bf16", "BFloat16"),
    "float64": DType(torch.float64, "fp64", "Float64"),
    "int8": DType(torch.int8, "i8", "Int8"),
    "uint8": DType(torch.uint8, "u8", "Uint8"),
    "int16": DType(torch.int16, "i16", "Int16"),
    "int32": DType(torch.int32, "i32", "Int32"),
    "int64": DType(torch.int64, "i64", "Int64"),
    "bool": DType(torch.bool, "i1", "Boolean"),
    "float8_e4m3fn": DType(torch.float8_e4m3fn, "fp8e4nv", "Float8E4M3FN"),
    "float8_e5m2": DType(torch.float8_e5m2, "fp8e5", "Float8E5M2"),
}


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
