"""tta's Torch-TensorRT post-lowering pass: outline the regions of the graph Torch-TensorRT is
about to partition, so each becomes one ``tta::<op>`` node that the converter turns into a
TensorRT plugin layer.

It runs first among the post-lowering passes, after Torch-TensorRT's decompositions and before
its constant folding, so a region is outlined as exported and its kernels are what
``tta.rewrite(ep).compile_kernels(...)`` gives. Regions come from ``lower_as`` annotations and
from the selectors given to ``tta.compile`` or, for plain ``torch_tensorrt.compile``, registered
with ``use_selectors``. A region tta cannot lower is an error, never a silent fallback.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from dataclasses import dataclass, field
from typing import Any

import torch

from ..common.cuda_driver import driver_ptx_cap
from ..declare.markers import TAG_PREFIX
from ..errors import PluginError
from ..runtime.ops import NAMESPACE

_selectors: list = []
_selectors_lock = threading.Lock()


def use_selectors(*selectors: Any) -> None:
    """Selectors (``{ModuleType: impl}``, ``tta.lower_pattern(...)``) the pass applies in every
    ``torch_tensorrt.compile`` of this process, next to ``lower_as`` annotations."""
    with _selectors_lock:
        _selectors.extend(selectors)


def clear_selectors() -> None:
    with _selectors_lock:
        _selectors.clear()


@dataclass
class Session:
    """What one ``tta.compile`` call tells the pass and collects from it."""

    selectors: list | None
    sm: int
    max_ptx: int | None
    rewrites: list = field(default_factory=list)  # RewriteResult per pass run
    check_kernels: bool = False  # run tta.check_kernels on each rewrite (tta.compile's default)
    program: Any = None  # the exported program: the ranges of its dynamic dims


_session: contextvars.ContextVar[Session | None] = contextvars.ContextVar("tta_trt_session", default=None)


def current_session() -> Session | None:
    return _session.get()


@contextlib.contextmanager
def session_scope(session: Session):
    """Inside the block ``session`` is the current one, which the pass and the converter read."""
    token = _session.set(session)
    try:
        yield session
    finally:
        _session.reset(token)


def has_regions(gm: torch.fx.GraphModule) -> bool:
    from ..declare.markers import REGION

    for n in gm.graph.nodes:
        if n.target is REGION:  # a lower_as entry, even one that traced nothing
            return True
        custom = n.meta.get("custom")
        if custom and any(k.startswith(TAG_PREFIX) for k in custom):
            return True
    return False


def tta_nodes(gm: torch.fx.GraphModule) -> list[torch.fx.Node]:
    return [n for n in gm.graph.nodes if n.op == "call_function" and is_tta_target(n.target)]


def is_tta_target(target: Any) -> bool:
    return isinstance(target, torch._ops.OpOverload) and target.namespace == NAMESPACE


def device_sm(settings: Any) -> int:
    """Compute capability of the compile device, as an int (9.0 -> 90)."""
    gpu_id = getattr(getattr(settings, "device", None), "gpu_id", 0) or 0
    major, minor = torch.cuda.get_device_capability(gpu_id)
    return 10 * major + minor


def outline_regions(gm: torch.fx.GraphModule, settings: Any) -> torch.fx.GraphModule:
    """The pass: ``tta.rewrite`` on the whole graph, in place."""
    from ..fx.pipeline import rewrite
    from . import qdp

    session = current_session()
    with _selectors_lock:
        selectors = session.selectors if session is not None else (list(_selectors) or None)
    if selectors or has_regions(gm):
        result = rewrite(gm, selectors=selectors, on_refused="keep")  # refused: the error below
        if result.refused:
            lines = "\n".join(f"  region {r.id} at {r.source or '?'}: {r.reason}" for r in result.refused)
            raise PluginError(f"tta: {len(result.refused)} region(s) cannot be lowered to TensorRT plugins:\n{lines}")
        gm = result.program  # the same module, now holding the rewritten graph
        by_name = {n.name: n for n in gm.graph.nodes}
        for r in result.outlined:
            node = by_name.get(r.node)
            if node is not None and "tta" in node.meta:
                node.meta["tta"]["source"] = r.source
        if session is not None:
            if session.check_kernels:
                # Before Torch-TensorRT builds an engine around kernels that compute something else.
                result.kernel_check = result.check_kernels(program=session.program, max_ptx=session.max_ptx)
            session.rewrites.append(result)
    # Every plugin of the graph is (re)targeted at this compile's device.
    sm = session.sm if session is not None else device_sm(settings)
    # Plain torch_tensorrt.compile: kernels for the PTX ISA this machine's driver accepts.
    max_ptx = session.max_ptx if session is not None else driver_ptx_cap().option
    ops = {n.target._schema.name.split("::", 1)[1] for n in tta_nodes(gm)}
    for op in ops:
        qdp.register(op, sm=sm, max_ptx=max_ptx)
    qdp.prefetch(ops)  # every plugin's kernels in one pool, before the engine build asks for them
    return gm
