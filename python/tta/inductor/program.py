"""The rewritten program for PyTorch's own compilers: each ``tta::<op>`` node becomes either a
call of its ``tta_triton::<op>`` (the user's Triton kernel, visible to Inductor) or, when the
plugin has no kernel Inductor can embed, the region body inlined back, and a report says which.

cuTile and CuTeDSL kernels take the second way: their compiled artifacts are launched from
Python, which neither Inductor's generated code nor an AOTInductor package (run without tta)
can call, so Inductor compiles the region body instead; the report names the reason.
"""

from __future__ import annotations

import contextlib
import copy
import operator
from dataclasses import dataclass

import torch
import torch.fx
from torch.export import ExportedProgram

from ..rewrite import RewriteResult, with_new_graph
from . import triton_ops

USER_KERNEL = "user kernel"
REGION_BODY = "region body"


@dataclass
class LoweredRegion:
    """One outlined region after lowering: what runs it in the compiled program."""

    region: str
    op: str
    impl: str
    source: str | None
    runs: str  # USER_KERNEL (tta_triton::<op>) or REGION_BODY
    reason: str | None = None  # why the region body runs

    @property
    def user_kernel(self) -> bool:
        return self.runs == USER_KERNEL


@dataclass
class BackendReport:
    backend: str  # "inductor" | "aot_inductor"
    regions: list[LoweredRegion]
    rewrite_text: str

    def __str__(self) -> str:
        n = sum(r.user_kernel for r in self.regions)
        lines = [f"tta ({self.backend}): {n}/{len(self.regions)} region(s) run the user's kernel"]
        for r in self.regions:
            where = f"tta_triton::{r.op} (user's Triton kernel, compiled by Inductor)" if r.user_kernel else f"region body ({r.reason})"
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


def lower(result: RewriteResult, backend: str) -> tuple[ExportedProgram, BackendReport]:
    """A copy of ``result.program`` with every plugin op lowered for Inductor."""
    from .. import ops

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
        if why is None:
            node.target = triton_ops.ensure_triton_op(op)
        else:
            _inline(g, node, ops.body_of(op))
        lowered.append(
            LoweredRegion(
                region=info.get("region", region.id if region else node.name),
                op=op,
                impl=info.get("impl", region.impl if region else "?"),
                source=region.source if region else None,
                runs=USER_KERNEL if why is None else REGION_BODY,
                reason=why,
            )
        )
    g.lint()
    return with_new_graph(program, g), BackendReport(backend=backend, regions=lowered, rewrite_text=result.report_text)
