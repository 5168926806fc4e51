"""The program both Inductor paths compile: the model exported (unless it is already an
ExportedProgram) and rewritten, with every refused region an error."""

from __future__ import annotations

from typing import Any, Sequence

import torch
from torch.export import ExportedProgram

from ..errors import PluginError
from ..fx.pipeline import rewrite


def _export(model, example_inputs: Sequence[Any], dynamic_shapes: Any, strict: bool) -> ExportedProgram:
    if isinstance(model, ExportedProgram):
        return model
    return torch.export.export(model, tuple(example_inputs), dynamic_shapes=dynamic_shapes, strict=strict)


def rewritten(
    model, example_inputs, dynamic_shapes, selectors, strict: bool, backend: str, check_kernels: bool = False, max_ptx: int | None = 90
):
    """The rewrite of the exported model; with ``check_kernels``, every plugin's kernel checked
    against its region first (``tta.verify.check``; the report in ``result.kernel_check``)."""
    program = _export(model, example_inputs, dynamic_shapes, strict)
    result = rewrite(program, selectors=selectors, on_refused="keep")  # refused: the error below
    if result.refused:
        # A region the user marked and tta cannot lower is an error, never a quiet fallback.
        raise PluginError(f"tta.compile(backend={backend!r}): {len(result.refused)} region(s) refused\n{result.report_text}")
    result.kernel_check = result.check_kernels(program=program, max_ptx=max_ptx) if check_kernels else None
    return result
