"""What every AOT backend produces, and the conventions they share.

Shapes are symbolic: dimension ``j`` of input ``k`` is the symbol ``i{k}_{j}`` (output ``k``:
``o{k}_{j}``), one distinct symbol per dimension, never a shared hint. Grid, shared memory and
the int32 extras are expression strings over these symbols (the grammar of
``src/lowering/expr.rs``), so the same compiled kernel serves every size; ``tta.common.bridge.eval_expr``
evaluates them for concrete shapes and ``tta.common.bridge.trtp_expr`` renders them for TensorRT.
"""

from __future__ import annotations

import base64
import json
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence


def input_symbol(k: int, j: int) -> str:
    return f"i{k}_{j}"


def output_symbol(k: int, j: int) -> str:
    return f"o{k}_{j}"


@dataclass(frozen=True)
class CompiledKernel:
    """One kernel, compiled ahead of time for one (config, dtypes, target SM).

    The kernel's parameters are in the TensorRT QDP AOT order: input pointers, then the int32
    ``extras`` (in order), then output pointers.
    """

    backend: str  # "triton" | "cutile" | "cutedsl"
    entry: str  # kernel symbol in ``code``
    code: bytes  # PTX text (utf-8) or a CUBIN
    code_format: str  # "ptx" | "cubin"
    grid: tuple[str, str, str]
    block: tuple[int, int, int]
    shared_mem: int
    extras: tuple[str, ...]
    input_dtypes: tuple[str, ...]
    output_dtypes: tuple[str, ...]
    # Output shapes as expressions over input symbols (how the caller sizes output buffers).
    output_shapes: tuple[tuple[str, ...], ...]
    config: tuple[tuple[str, Any], ...]
    sm: int
    ptx_version: str | None = None  # ".version" of the PTX, when there is PTX
    meta: dict = field(default_factory=dict, hash=False, compare=False)  # backend notes

    def to_json(self) -> dict:
        d = asdict(self)
        d["code"] = base64.b64encode(self.code).decode()
        return d

    @staticmethod
    def from_json(d: dict) -> "CompiledKernel":
        d = dict(d)
        d["code"] = base64.b64decode(d["code"])
        for k in ("grid", "block", "extras", "input_dtypes", "output_dtypes"):
            d[k] = tuple(d[k])
        d["output_shapes"] = tuple(tuple(s) for s in d["output_shapes"])
        d["config"] = tuple(tuple(c) for c in d["config"])
        return CompiledKernel(**d)


def write_manifest(path: str, kernels: Sequence[CompiledKernel], **info: Any) -> None:
    """A manifest: compiled kernels plus free-form info (made on the CPU machine)."""
    with open(path, "w") as f:
        json.dump({"format": "tta-kernels", "version": 1, "info": info, "kernels": [k.to_json() for k in kernels]}, f)


def read_manifest(path: str) -> tuple[list[CompiledKernel], dict]:
    with open(path) as f:
        doc = json.load(f)
    if doc.get("format") != "tta-kernels":
        raise ValueError(f"{path} is not a tta kernel manifest")
    return [CompiledKernel.from_json(k) for k in doc["kernels"]], doc.get("info", {})


def symbol_values(input_shapes: Sequence[Sequence[int]]) -> dict[str, int]:
    """The value of every input symbol for concrete input shapes: ``{"i0_1": 4096, ...}``."""
    return {input_symbol(k, j): int(d) for k, shape in enumerate(input_shapes) for j, d in enumerate(shape)}


def guards_hold(guards: Sequence[str], env: dict[str, int]) -> bool:
    """Whether the conditions a kernel was compiled under (``meta["guards"]``, e.g.
    ``"i0_1 <= 1024"``, as sympy prints them) hold for these symbol values (``guards.py``:
    bitwise functions and ``next_power_of_2`` chains included)."""
    from .guards import parse

    return all(parse(g).holds(env) for g in guards)
