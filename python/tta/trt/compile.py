"""``tta.compile``: a model with tta regions to a Torch-TensorRT module whose engines carry the
regions' kernels as ahead-of-time plugins.

Steps: ``torch.export``; Torch-TensorRT's own compile, inside which tta's post-lowering pass
outlines the regions (after Torch-TensorRT's decompositions, so the converter sees the region
metadata the pass sets) and the op listener registers each op's plugin and converter; then the
report of where every region landed. Plugins are kept in TensorRT whatever ``min_block_size``
says (``partition.py``), and kernels are compiled for the compile device's SM unless ``sm`` is
given.
"""

from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Any, Sequence

import torch
from torch.export import ExportedProgram

from ..common.cuda_driver import driver_ptx_cap
from ..errors import PluginError
from . import converter, install
from .lowering import Session, device_sm, session_scope
from .partition import keep_plugins_in_tensorrt


@dataclass
class PlacedRegion:
    """One outlined region after compilation: its op, where its plugin runs and the layer."""

    region: str
    op: str
    impl: str
    source: str | None
    segment: str  # "_run_on_acc_N" (a TensorRT engine), "_run_on_gpu_N" or "pytorch"
    layer: str | None  # the TensorRT layer name, when the converter built one

    @property
    def in_tensorrt(self) -> bool:
        return self.segment.startswith("_run_on_acc") and self.layer is not None


@dataclass
class CompileReport:
    regions: list[PlacedRegion]
    rewrite_text: str
    kernel_checks: list = field(default_factory=list)  # tta.verify.check's KernelCheck per pass run

    def __str__(self) -> str:
        lines = [f"tta.compile: {sum(r.in_tensorrt for r in self.regions)}/{len(self.regions)} region(s) in TensorRT"]
        for r in self.regions:
            where = f"{r.segment}, layer {r.layer}" if r.layer else f"{r.segment} (not converted)"
            lines.append(f"  {r.region} -> tta::{r.op} in {where} ({r.source or '?'})")
        return "\n".join(lines)


def _inputs(ep: ExportedProgram, example_inputs: Sequence[Any]):
    """One ``torch_tensorrt.Input`` per tensor input: dynamic dims span the export's range, with
    the example's size as the optimum."""
    import torch_tensorrt

    user = [s.arg.name for s in ep.graph_signature.input_specs if s.kind.name == "USER_INPUT"]
    placeholders = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    out = []
    for name, example in zip(user, example_inputs):
        val = placeholders[name].meta.get("val")
        if not isinstance(val, torch.Tensor):
            out.append(example)
            continue
        lo, opt, hi = [], [], []
        for d, e in zip(val.shape, example.shape):
            if isinstance(d, int):
                lo.append(d), opt.append(d), hi.append(d)
                continue
            vr = ep.range_constraints.get(d.node.expr)
            top = converter.finite_int(vr.upper) if vr is not None else None
            if top is None:
                raise PluginError(
                    f"tta.compile: input {name!r} dim {len(lo)} is dynamic without a maximum; TensorRT needs one "
                    "(torch.export.Dim(..., max=N))"
                )
            lo.append(converter.finite_int(vr.lower) or 0), opt.append(int(e)), hi.append(top)
        if lo == hi:
            out.append(torch_tensorrt.Input(shape=tuple(lo), dtype=val.dtype))
        else:
            out.append(torch_tensorrt.Input(min_shape=tuple(lo), opt_shape=tuple(opt), max_shape=tuple(hi), dtype=val.dtype))
    return out


def compile(  # noqa: A001 - the public name is tta.compile
    model: torch.nn.Module | ExportedProgram,
    example_inputs: Sequence[Any],
    dynamic_shapes: Any = None,
    *,
    selectors: Any = None,
    sm: int | None = None,
    max_ptx: int | None | str = "driver",
    strict: bool = False,
    check_kernels: bool = True,
    **torch_tensorrt_settings: Any,
):
    """Export ``model``, outline its regions (``lower_as`` annotations and ``selectors``) into
    TensorRT plugins and compile it with ``torch_tensorrt.compile(ir="dynamo", ...)``.

    ``sm``: compute capability the kernels are built for (default: the compile device's);
    ``max_ptx``: newest PTX ISA the target driver loads (Triton's spelling, 90 = ISA 9.0; None: no
    cap); the default ``"driver"`` is what this machine's CUDA driver accepts (``tta doctor``
    shows it; 90 where no driver is found): pass the deployment driver's when that is older.
    Other keywords go to Torch-TensorRT; without ``inputs``/``arg_inputs`` the input specs come
    from the export (dynamic dims over their declared ranges). Returns Torch-TensorRT's module
    with ``tta_report`` (a ``CompileReport``: per region, the TensorRT segment and layer).
    A region that cannot be lowered is an error. ``check_kernels`` (default on): each
    plugin's kernel is run against its region body before the engine is built
    (``tta.check_kernels``; a mismatch is a ``KernelCheckError``); the reports are
    ``tta_report.kernel_checks``.
    """
    import torch_tensorrt
    from torch_tensorrt.dynamo.utils import to_torch_tensorrt_device

    install()
    if isinstance(model, ExportedProgram):
        ep = model
    else:
        ep = torch.export.export(model, tuple(example_inputs), dynamic_shapes=dynamic_shapes, strict=strict)
    settings = dict(torch_tensorrt_settings)
    if settings.pop("ir", "dynamo") != "dynamo":
        raise PluginError("tta.compile builds through Torch-TensorRT's dynamo path; leave ir= out or pass ir='dynamo'")
    if "inputs" not in settings and "arg_inputs" not in settings:
        settings["arg_inputs"] = _inputs(ep, example_inputs)
    if max_ptx == "driver":
        max_ptx = driver_ptx_cap().option
    elif max_ptx is not None and (isinstance(max_ptx, bool) or not isinstance(max_ptx, int)):
        raise PluginError(f"tta.compile: max_ptx must be an int such as 90 (PTX ISA 9.0), None or 'driver', got {max_ptx!r}")
    if sm is None:
        sm = device_sm(types.SimpleNamespace(device=to_torch_tensorrt_device(settings.get("device"))))
    session = Session(selectors=selectors, sm=sm, max_ptx=max_ptx, check_kernels=check_kernels, program=ep)
    placements: dict[str, dict] = {}
    conversions: list[dict] = []
    with session_scope(session), keep_plugins_in_tensorrt(placements), converter.recording_conversions(conversions):
        module = torch_tensorrt.compile(ep, ir="dynamo", **settings)
    module.tta_report = _report(session, placements, conversions)
    return module


def _report(session: Session, placements: dict[str, dict], conversions: list[dict]) -> CompileReport:
    layers = {c["region"]: c["layer"] for c in conversions}
    regions, texts = [], []
    for result in session.rewrites:
        texts.append(result.report_text)
        for r in result.outlined:
            placed = placements.get(r.node, {})
            regions.append(
                PlacedRegion(
                    region=r.id,
                    op=r.op,
                    impl=r.impl,
                    source=r.source,
                    segment=placed.get("segment", "pytorch"),
                    layer=layers.get(r.id),
                )
            )
    checks = [r.kernel_check for r in session.rewrites if r.kernel_check is not None]
    return CompileReport(regions=regions, rewrite_text="\n".join(texts), kernel_checks=checks)
