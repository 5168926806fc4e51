"""The rewritten program for PyTorch's own compilers: each ``tta::<op>`` node becomes either a
call of its ``tta_triton::<op>`` (the user's Triton kernel, visible to Inductor) or, when the
plugin has no kernel Inductor can embed, the region body inlined back, and a report says which.

A cuTile or CuTeDSL kernel has a third way under ``torch.compile``: ``tta_cubin::<op>``
(``cubin_ops.py``), a custom op launching its compiled artifact (given, or compiled here when
the DSL is installed) through the CUDA driver; Inductor calls it as an extern kernel. Where that
cannot run (no CUDA device or cuda-python, CPU inputs, nothing compiled) and always in an
AOTInductor package (which loads without tta), the region body runs; the report says why.
"""

from __future__ import annotations

import contextlib
import copy
import operator
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx
from torch.export import ExportedProgram

from ..fx.pipeline import RewriteResult, with_new_graph
from . import cubin_ops, triton_ops

USER_KERNEL = "user kernel"  # tta_triton::<op>: the user's Triton kernel inside Inductor's code
COMPILED_KERNEL = "compiled kernel"  # tta_cubin::<op>: the user's cuTile/CuTeDSL kernel, compiled ahead of time
REGION_BODY = "region body"


@dataclass
class LoweredRegion:
    """One outlined region after lowering: what runs it in the compiled program."""

    region: str
    op: str
    impl: str
    source: str | None
    runs: str  # USER_KERNEL (tta_triton::<op>), COMPILED_KERNEL (tta_cubin::<op>) or REGION_BODY
    reason: str | None = None  # why the region body runs
    backend: str | None = None  # the kernel's DSL, when the user's kernel runs

    @property
    def user_kernel(self) -> bool:
        """The user's kernel runs (Triton inside Inductor's code, or a compiled artifact)."""
        return self.runs in (USER_KERNEL, COMPILED_KERNEL)


@dataclass
class BackendReport:
    backend: str  # "inductor" | "aot_inductor"
    regions: list[LoweredRegion]
    rewrite_text: str
    kernel_check: Any = None  # tta.verify.check's KernelCheck, when the kernels were checked

    def __str__(self) -> str:
        n = sum(r.user_kernel for r in self.regions)
        lines = [f"tta ({self.backend}): {n}/{len(self.regions)} region(s) run the user's kernel"]
        for r in self.regions:
            if r.runs == USER_KERNEL:
                where = f"tta_triton::{r.op} (user's Triton kernel, compiled by Inductor)"
            elif r.runs == COMPILED_KERNEL:
                where = f"tta_cubin::{r.op} (user's {r.backend} kernel, compiled ahead of time, launched with cuLaunchKernel)"
            else:
                where = f"region body ({r.reason})"
            lines.append(f"  {r.region} -> {where} ({r.source or '?'})")
        return "\n".join(lines)


def _tta_op(node: torch.fx.Node) -> str | None:
    t = node.target
    if node.op == "call_function" and isinstance(t, torch._ops.OpOverload) and t.namespace == "tta":
        return t._schema.name.split("::", 1)[1]
    return None


def _inline(g: torch.fx.Graph, node: torch.fx.Node, body: torch.fx.GraphModule) -> None:
    """Replace ``node`` by a copy of ``body``'s nodes on its arguments."""
    env = {ph: arg for ph, arg in zip([n for n in body.graph.nodes if n.op == "placeholder"], node.args)}
    before = set(g.nodes)
    with g.inserting_before(node):
        result = g.graph_copy(body.graph, env)
    _refresh_vals([n for n in g.nodes if n not in before], g)
    if isinstance(result, (tuple, list)):
        for user in list(node.users):
            if user.op == "call_function" and user.target is operator.getitem:
                user.replace_all_uses_with(result[user.args[1]])
                g.erase_node(user)
    else:
        node.replace_all_uses_with(result)
    if node.users:
        raise RuntimeError(f"tta: {node.name} has users other than getitem after inlining its region body")
    g.erase_node(node)


def _refresh_vals(nodes: list[torch.fx.Node], g: torch.fx.Graph) -> None:
    """The body was registered from the first program with this region; its nodes' fake values
    belong to that program's fake mode. Recompute them in this program's."""
    from torch._guards import detect_fake_mode

    mode = detect_fake_mode([n.meta.get("val") for n in g.nodes if n.op == "placeholder"])
    for n in nodes:
        if n.op != "call_function":
            continue
        args, kwargs = torch.fx.node.map_arg((n.args, n.kwargs), lambda a: a.meta.get("val"))
        with mode if mode is not None else contextlib.nullcontext():
            n.meta["val"] = n.target(*args, **kwargs)


def _devices(node: torch.fx.Node) -> set[str]:
    return {a.meta["val"].device.type for a in node.all_input_nodes if isinstance(a.meta.get("val"), torch.Tensor)}


CPU_TRITON = "Inductor compiles Triton kernels for GPUs only"  # why a CPU program runs the region body


def _compiled_kernels(
    op: str, node: torch.fx.Node, region, backend: str, kernels: dict, max_ptx: int | None, ranges: dict | None = None
) -> tuple[list | None, str | None]:
    """The compiled kernels ``tta_cubin::<op>`` would launch, or why the region body runs."""
    from ..declare.specs import installed
    from ..runtime import ops

    plugin = ops.signature_of(op)[2]
    kinds = ", ".join(sorted({k.backend for k in plugin.kernels}))
    if backend == "aot_inductor":
        return (
            None,
            f"no Triton kernel (kernels: {kinds}); an AOTInductor package loads without tta, so it cannot launch their compiled artifact",
        )
    why = cubin_ops.unavailable()
    devices = _devices(node)
    if why is None and devices != {"cuda"}:
        why = f"the inputs are on {', '.join(sorted(devices)) or 'no device'}"
    if why is None:
        given = kernels.get(plugin.name)
        if given:
            return list(given), None
        if region is not None and all(installed(k.backend) for k in plugin.kernels):
            from ..fx.kernels import compile_kernels

            major, minor = torch.cuda.get_device_capability()
            return compile_kernels([region], sm=major * 10 + minor, max_ptx=max_ptx, ranges=ranges)[op], None
        why = f"no compiled kernels given for plugin {plugin.name!r} (kernels=) and {kinds} is not installed to compile them"
    return None, f"no Triton kernel (kernels: {kinds}); its compiled kernel cannot run here: {why}"


def lower(
    result: RewriteResult, backend: str, kernels: dict | None = None, max_ptx: int | None = 90, triton_on_cpu: bool = False
) -> tuple[ExportedProgram, BackendReport]:
    """A copy of ``result.program`` with every plugin op lowered for Inductor. ``kernels``:
    compiled kernels per plugin name for plugins without a Triton kernel (``kernel_bundle``).

    A Triton op whose inputs are not on CUDA runs its region body: Inductor has no CPU backend
    for Triton kernels (it would fail compiling, or with ``TRITON_INTERPRET=1`` when tracing).
    ``triton_on_cpu``: lower it to its ``tta_triton`` op all the same (the graph a GPU would
    get, to look at without one; eagerly it runs under ``TRITON_INTERPRET=1``)."""
    from ..aot.compile import export_ranges
    from ..runtime import ops

    program = result.program
    g = copy.deepcopy(program.graph)
    by_node = {r.node: r for r in result.outlined}
    lowered: list[LoweredRegion] = []
    for node in list(g.nodes):
        op = _tta_op(node)
        if op is None:
            continue
        info = node.meta.get("tta", {})
        region = by_node.get(node.name)
        why = triton_ops.refusal(op)
        if why is None and not triton_on_cpu and _devices(node) != {"cuda"}:
            why = f"the inputs are on {', '.join(sorted(_devices(node))) or 'no device'}: {CPU_TRITON}"
        runs, kernel_backend = USER_KERNEL, "triton"
        if why is None:
            node.target = triton_ops.ensure_triton_op(op)
        else:
            compiled = None
            plugin = ops.signature_of(op)[2] if ops.signature_of(op) else None
            if why.startswith(triton_ops.NO_TRITON) and plugin is not None and plugin.kernels:
                compiled, why = _compiled_kernels(op, node, region, backend, kernels or {}, max_ptx, export_ranges(program))
            if compiled is not None:
                node.target = cubin_ops.ensure_cubin_op(op, compiled)
                runs, kernel_backend = COMPILED_KERNEL, compiled[0].backend
            else:
                _inline(g, node, ops.body_of(op))
                runs, kernel_backend = REGION_BODY, None
        lowered.append(
            LoweredRegion(
                region=info.get("region", region.id if region else node.name),
                op=op,
                impl=info.get("impl", region.impl if region else "?"),
                source=region.source if region else None,
                runs=runs,
                reason=why,
                backend=kernel_backend,
            )
        )
    g.lint()
    return with_new_graph(program, g), BackendReport(backend=backend, regions=lowered, rewrite_text=result.report_text)
