"""PyTorch's own compilers as tta backends: ``tta.compile(..., backend="inductor")`` and
``tta.aot_compile`` (an AOTInductor ``.pt2`` package).

Steps: ``torch.export`` (no decompositions, so Inductor still sees fused ops such as
scaled_dot_product_attention outside the regions), ``tta.rewrite``, ``program.lower`` (each plugin
op to its Triton op or its region body), then ``torch.compile`` of the program's module or
``aoti_compile_and_package`` of the program. Torch-TensorRT is never imported here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Sequence

import torch
from torch.export import ExportedProgram

from ..errors import PluginError
from ..rewrite import rewrite
from .program import BackendReport, lower


def _export(model, example_inputs: Sequence[Any], dynamic_shapes: Any, strict: bool) -> ExportedProgram:
    if isinstance(model, ExportedProgram):
        return model
    return torch.export.export(model, tuple(example_inputs), dynamic_shapes=dynamic_shapes, strict=strict)


def _lowered(model, example_inputs, dynamic_shapes, selectors, strict: bool, backend: str) -> tuple[ExportedProgram, BackendReport]:
    result = rewrite(_export(model, example_inputs, dynamic_shapes, strict), selectors=selectors, on_refused="keep")  # refused: the error below
    if result.refused:
        # A region the user marked and tta cannot lower is an error, never a quiet fallback.
        raise PluginError(f"tta.compile(backend={backend!r}): {len(result.refused)} region(s) refused\n{result.report_text}")
    return lower(result, backend)


def _without_export_hooks(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """The exported module without its forward hooks. ``ExportedProgram.module()`` checks its
    inputs in a forward pre-hook, and ``torch.compile`` runs module hooks outside the compiled
    frame: that check would run in Python on every call (tens of microseconds, more than a small
    model's GPU time). The graph's own guard call (``_guards_fn``, where export made one) stays
    in ``forward``, where Dynamo compiles it into its guards; Dynamo guards the sizes anyway."""
    return torch.fx.GraphModule(gm, gm.graph, class_name=type(gm).__name__)


def compile_inductor(
    model: torch.nn.Module | ExportedProgram,
    example_inputs: Sequence[Any],
    dynamic_shapes: Any = None,
    *,
    selectors: Any = None,
    strict: bool = False,
    **torch_compile_options: Any,
):
    """``torch.compile`` of the rewritten program; the user's Triton kernels are in Inductor's
    code. For inference (the module's parameters are frozen: plugin ops have no backward).
    Returns the compiled module with ``tta_report`` (a ``BackendReport``: per region,
    whether the user's kernel or the region body runs, and why). ``torch_compile_options`` go
    to ``torch.compile`` (``mode``, ``dynamic``, ``options``, ``fullgraph``...)."""
    program, report = _lowered(model, example_inputs, dynamic_shapes, selectors, strict, "inductor")
    options = dict(torch_compile_options)
    options.setdefault("backend", "inductor")
    if dynamic_shapes is not None:
        options.setdefault("dynamic", True)
    gm = _without_export_hooks(program.module())
    for p in gm.parameters():
        p.requires_grad_(False)  # inference: plugin ops have no backward
    module = torch.compile(gm, **options)
    module.tta_report = report
    module.tta_program = program
    return module


@dataclass
class AOTPackage:
    """What ``tta.aot_compile`` returns: the package path and the per-region report."""

    path: str
    tta_report: BackendReport
    program: ExportedProgram

    def load(self, **kwargs: Any):
        """``torch._inductor.aoti_load_package`` of the package (any process can do this
        without tta)."""
        return torch._inductor.aoti_load_package(self.path, **kwargs)

    def __str__(self) -> str:
        return f"{self.path}\n{self.tta_report}"


def aot_compile(
    model: torch.nn.Module | ExportedProgram,
    example_inputs: Sequence[Any],
    path: str | os.PathLike,
    dynamic_shapes: Any = None,
    *,
    selectors: Any = None,
    strict: bool = False,
    inductor_configs: dict | None = None,
) -> AOTPackage:
    """An AOTInductor package of the rewritten program at ``path`` (a ``.pt2``). It holds the
    user's Triton kernels compiled by Inductor and loads with
    ``torch._inductor.aoti_load_package`` in a process that never imports tta."""
    path = os.fspath(path)
    if not path.endswith(".pt2"):
        raise PluginError(f"tta.aot_compile: the package path must end in .pt2, got {path!r}")
    program, report = _lowered(model, example_inputs, dynamic_shapes, selectors, strict, "aot_inductor")
    out = torch._inductor.aoti_compile_and_package(program, package_path=path, inductor_configs=inductor_configs)
    return AOTPackage(path=out, tta_report=report, program=program)
