"""One ``torch.library`` op per plugin: ``tta::<op>``.

The schema comes from the region signature the Rust pass computed. The fake impl is the
plugin's ``meta_impl`` or the region body run under fake tensors; the eager impl is the
plugin's kernel when it can run on the inputs, else the region body. Registration is
idempotent and thread-safe: the same op name always means the same signature and body.
"""

from __future__ import annotations

import threading
from typing import Callable, Sequence

import torch
import torch.fx

from ..common.bridge import Port
from ..declare.plugin import Plugin
from . import eager_stats, first_use

# ``launch(plugin, inputs, body)``: run the plugin's own kernel on real inputs: ``(outputs, None)``,
# or ``(None, why)`` when it cannot run there (the caller then runs the region body).
EagerLauncher = Callable[[Plugin, tuple, torch.fx.GraphModule], "tuple[tuple | None, str | None]"]

NAMESPACE = "tta"

_lib = torch.library.Library(NAMESPACE, "FRAGMENT")  # kept alive for the whole process
_ops: dict[str, torch._ops.OpOverload] = {}
_bodies: dict[str, torch.fx.GraphModule] = {}
_signatures: dict[str, tuple[Sequence[Port], Sequence[Port], Plugin]] = {}
_lock = threading.Lock()
# Called as fn(op_name, overload) once per op, right after it is registered; lowering
# backends (tta.trt) subscribe to register their converter and plugin for every tta op.
_listeners: list[Callable[[str, torch._ops.OpOverload], None]] = []


def schema(inputs: Sequence[Port], outputs: Sequence[Port]) -> str:
    """``(Tensor x0, SymInt x1) -> (Tensor, Tensor)`` from the region's inputs."""
    params = []
    for i, p in enumerate(inputs):
        if p.is_tensor:
            params.append(f"Tensor{'(a' + str(i) + '!)' if p.mutated else ''} x{i}")
        else:
            params.append(f"SymInt x{i}")
    rets = ["Tensor"] * len(outputs)
    ret = rets[0] if len(rets) == 1 else f"({', '.join(rets)})"
    return f"({', '.join(params)}) -> {ret}"


def extract_body(
    gm: torch.fx.GraphModule,
    members: list[torch.fx.Node],
    inputs: list[torch.fx.Node],
    outputs: list[torch.fx.Node],
    derived: Sequence[tuple[torch.fx.Node, int, int]] = (),
) -> torch.fx.GraphModule:
    """The region as a standalone GraphModule: inputs -> outputs. ``derived`` lists the sizes
    the region reads from outside that are dims of its inputs, as (node, input number, dim):
    the body reads them from that input's shape."""
    g = torch.fx.Graph()
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    for i, n in enumerate(inputs):
        p = g.placeholder(f"x{i}")
        p.meta = dict(n.meta)
        env[n] = p
    for n, i, dim in derived:
        env[n] = g.call_function(torch.ops.aten.sym_size.int, (env[inputs[i]], dim))
        env[n].meta = dict(n.meta)
    for n in members:
        env[n] = g.node_copy(n, lambda x: env[x])
    result = [env[o] for o in outputs]
    g.output(result[0] if len(result) == 1 else tuple(result))
    return torch.fx.GraphModule(gm, g, class_name="RegionBody")


def _own_dense(inputs, outputs):
    """The region body's outputs as the kernel's would be: buffers of their own (custom ops may
    not return views of their inputs) and contiguous (the op's fake impl says so)."""
    ptrs = {t.untyped_storage().data_ptr() for t in inputs if isinstance(t, torch.Tensor) and t.device.type != "meta"}
    return tuple(
        o.clone(memory_format=torch.contiguous_format) if o.untyped_storage().data_ptr() in ptrs else o.contiguous() for o in outputs
    )


def _make_eager(op: str, plugin: Plugin, body: torch.fx.GraphModule, ports: tuple, launch: EagerLauncher | None) -> Callable:
    n_out = len(ports[1])

    def eager(*inputs):
        # The first call with a new signature is checked against the region body (first_use.py):
        # copies of the inputs first, since the kernel may write them.
        sig = first_use.wanted(op, inputs)
        before = first_use.copies(inputs) if sig is not None else None
        outs, why = launch(plugin, inputs, body) if launch is not None else (None, "no kernel launcher was given")
        on_cuda = any(isinstance(t, torch.Tensor) and t.device.type == "cuda" for t in inputs)
        eager_stats.record(op, why, on_cuda)
        ran = outs is not None
        if outs is None:
            outs = body(*inputs)
            outs = _own_dense(inputs, outs if n_out > 1 else (outs,))
        elif n_out == 1 and isinstance(outs, torch.Tensor):
            outs = (outs,)
        if sig is not None:
            first_use.check(op, sig, ports, plugin, body, before, inputs, tuple(outs), ran)
        return tuple(outs) if n_out > 1 else outs[0]

    return eager


def make_fake(plugin: Plugin, body: torch.fx.GraphModule, n_out: int) -> Callable:
    """The op's fake impl: the meta_impl's (else the region body's) output shapes and dtypes, as
    fresh contiguous tensors, which is what the kernel writes. A meta_impl may return an input
    (``return x``) or a view of one, and the region body any strides (SDPA's output is a
    transposed buffer): neither is what the op gives."""

    def fake(*inputs):
        if plugin.meta_impl is not None:
            outs = plugin.meta_impl(*inputs)
        else:
            outs = body(*inputs)
        outs = outs if isinstance(outs, (tuple, list)) else (outs,)
        fresh = tuple(o.new_empty(o.shape) for o in outs)
        return fresh[0] if n_out == 1 else fresh

    return fake


def ensure_op(
    op: str,
    inputs: Sequence[Port],
    outputs: Sequence[Port],
    plugin: Plugin,
    body: Callable[[], torch.fx.GraphModule],
    launch: EagerLauncher | None = None,
) -> torch._ops.OpOverload:
    """Register ``tta::<op>`` once; ``body`` builds the region body only when needed. The eager
    impl runs ``launch`` (the plugin's own kernel) where it can, else the region body."""
    existing = _ops.get(op)
    if existing is not None:
        return existing
    with _lock:
        existing = _ops.get(op)
        if existing is not None:
            return existing
        gm = body()
        n_out = len(outputs)
        _lib.define(op + schema(inputs, outputs))
        _lib.impl(op, _make_eager(op, plugin, gm, (inputs, outputs), launch), "CompositeExplicitAutograd")
        torch.library.register_fake(f"{NAMESPACE}::{op}", make_fake(plugin, gm, n_out), lib=_lib)
        overload = getattr(getattr(torch.ops, NAMESPACE), op).default
        _bodies[op] = gm
        _signatures[op] = (inputs, outputs, plugin)
        _ops[op] = overload
        listeners = list(_listeners)
    for fn in listeners:
        fn(op, overload)
    return overload


def on_op_created(fn: Callable[[str, torch._ops.OpOverload], None]) -> None:
    """Call ``fn(op_name, overload)`` for every ``tta::*`` op: now for those already
    registered, then for each new one as it is registered."""
    with _lock:
        _listeners.append(fn)
        existing = [(op, _ops[op]) for op in list(_ops)]
    for op, overload in existing:
        fn(op, overload)


def body_of(op: str) -> torch.fx.GraphModule | None:
    """The region body an op was registered with (its fallback implementation)."""
    return _bodies.get(op)


def signature_of(op: str) -> tuple[Sequence[Port], Sequence[Port], Plugin] | None:
    """(input ports, output ports, plugin) an op was registered with: the region signature
    the Rust pass computed."""
    return _signatures.get(op)
