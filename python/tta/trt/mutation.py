"""Refusing kernels that write their inputs.

A TensorRT AOT plugin's kernel may write only its outputs: TensorRT reuses input buffers as it
likes, and a plugin whose kernel writes one would corrupt a tensor the rest of the engine (or the
caller) still reads. Ops that declare mutation (``Tensor(a!)``) are refused when registered
(``custom_op_schema.py``); this catches the ones that do it without saying so, from the compiled
PTX: a store whose address can come from an input pointer (``tta.common.bridge.ptx_stored_params``, a
data-flow over the kernel's registers). The PTX is in TensorRT's parameter order, so parameter
``k < n_inputs`` is input ``k``.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from ..aot.base import CompiledKernel
from ..common import bridge as core
from ..errors import PluginError


def written_inputs(k: CompiledKernel, n_inputs: int) -> list[int]:
    """The inputs kernel ``k`` may store to (empty for a CUBIN, whose code cannot be read)."""
    if k.code_format != "ptx":
        return []
    code = k.code.decode() if isinstance(k.code, bytes) else k.code
    return [p for p in core.ptx_stored_params(code, k.entry) if p < n_inputs]


def refuse_written_inputs(where: str, kernels: Mapping[int, CompiledKernel], input_names: Sequence[str], labels: Mapping[int, str]) -> None:
    """Raise naming the first input a kernel of ``kernels`` (tactic id -> kernel) stores to."""
    for tid, k in kernels.items():
        for p in written_inputs(k, len(input_names)):
            raise PluginError(
                f"{where}: argument {input_names[p]!r} is written by the kernel {k.entry} (tactic {tid}, "
                f"{labels.get(tid, k.backend)}), but the op does not declare it mutated; a TensorRT plugin's kernel "
                "may write only its outputs: write the result to an output tensor instead"
            )
