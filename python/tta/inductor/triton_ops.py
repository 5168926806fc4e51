"""One ``torch.library.triton_op`` per ``tta::<op>`` whose plugin has a Triton kernel:
``tta_triton::<op>``, same signature.

Its body is the user's plain launch function, run on dense inputs and fresh outputs, with every
``kernel[grid](...)`` it makes routed through ``torch.library.wrap_triton``. Traced by
AOTAutograd (``torch.compile``, AOTInductor), that records the user's kernel itself, so Inductor
compiles and embeds it instead of calling an opaque op; called eagerly, it just launches it.
Configs are tried in order as ``tta.runtime.eager`` does: the first one whose launch code accepts
the sizes wins, and the conditions it checked become the compiled graph's shape guards.
"""

from __future__ import annotations

import inspect
import threading
from typing import Any, Sequence

import torch

from ..common.bridge import Port
from ..declare.plugin import Plugin
from ..declare.specs import KernelSpec, installed
from ..errors import PluginError
from ..runtime.eager import launch_first_fitting
from . import triton_floats

NAMESPACE = "tta_triton"
NO_TRITON = "no Triton kernel"  # how a refusal for want of a Triton kernel begins

_ops: dict[str, torch._ops.OpOverload] = {}
_lock = threading.Lock()
_routing = threading.local()


def triton_spec(plugin: Plugin) -> KernelSpec | None:
    """The plugin's first Triton kernel spec, when Triton is installed."""
    if not installed("triton"):
        return None
    return next((k for k in plugin.kernels if k.backend == "triton"), None)


def _route_through_wrap_triton(original):
    def getitem(self, grid):
        from torch._library.triton import is_wrap_triton_enabled

        # Only while a tta_triton op's body runs in this thread, and only when torch traces
        # (eager calls have wrap_triton disabled and must launch the kernel directly).
        if getattr(_routing, "depth", 0) and is_wrap_triton_enabled():
            # Run-time floats bound as fp32 constants, as on the AOT path (triton_floats.py).
            return triton_floats.launch(self, grid)
        return original(self, grid)

    return getitem


class _Routing:
    """Install the ``kernel[grid]`` hook for the duration of one body run in this thread."""

    def __enter__(self):
        from triton.runtime.jit import KernelInterface

        from ..aot.record import patched

        self._patch = patched(KernelInterface, "__getitem__", _route_through_wrap_triton, _routing)
        self._patch.__enter__()
        _routing.depth = getattr(_routing, "depth", 0) + 1

    def __exit__(self, *exc):
        _routing.depth -= 1
        return self._patch.__exit__(*exc)


def _kernels_of(launch_fn) -> list:
    """The Triton kernels the launch function names (torch keys its compile caches on them)."""
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.jit import JITFunction

    fn = inspect.unwrap(launch_fn)
    code = getattr(fn, "__code__", None)
    scope = getattr(fn, "__globals__", {})
    names = code.co_names if code is not None else ()
    return [scope[n] for n in names if isinstance(scope.get(n), (JITFunction, Autotuner))]


def op_signature(inputs: Sequence[Port], n_out: int) -> inspect.Signature:
    params = [
        inspect.Parameter(f"x{i}", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=torch.Tensor if p.is_tensor else torch.SymInt)
        for i, p in enumerate(inputs)
    ]
    ret = torch.Tensor if n_out == 1 else tuple[(torch.Tensor,) * n_out]
    return inspect.Signature(params, return_annotation=ret)


def _make_body(op: str, spec: KernelSpec, plugin: Plugin, region_body: torch.fx.GraphModule, n_out: int):
    def body(*inputs: Any):
        args = [t.contiguous() for t in inputs]
        # Output sizes: the meta_impl's, else the region body's. The body's arithmetic is only
        # traced for its shapes; nothing uses its values, so the compiler drops it.
        shaped = plugin.meta_impl(*args) if plugin.meta_impl is not None else region_body(*args)
        shaped = shaped if isinstance(shaped, (tuple, list)) else (shaped,)
        outs = [torch.empty(o.shape, dtype=o.dtype, device=args[0].device) for o in shaped]
        with _Routing():
            done = launch_first_fitting(spec, args, outs)
        if done is None:
            sizes = [tuple(t.shape) for t in args]
            raise PluginError(f"tta_triton::{op}: no config of {spec!r} accepts input sizes {sizes}")
        return done[0] if n_out == 1 else tuple(done)

    body.__signature__ = op_signature(signature_inputs(op), n_out)
    body.__name__ = op
    return body


def signature_inputs(op: str) -> Sequence[Port]:
    from ..runtime import ops

    return ops.signature_of(op)[0]


def refusal(op: str) -> str | None:
    """Why ``tta::<op>`` cannot become a triton_op (None when it can)."""
    from ..runtime import ops

    sig = ops.signature_of(op)
    if sig is None:
        return "not a tta op of this process"
    inputs, outputs, plugin = sig
    if not plugin.kernels:
        return f"{NO_TRITON} (kernels: none)"
    # Checked before the kernel's DSL: a compiled cuTile/CuTeDSL kernel (cubin_ops) has the same limits.
    if plugin.mutates or any(p.mutated for p in inputs):
        return "the plugin writes its inputs in place"
    if not all(p.is_tensor for p in inputs):
        return "an integer input (launch functions take tensors only)"
    if not outputs:
        return "no outputs"
    if triton_spec(plugin) is None:
        return f"{NO_TRITON} (kernels: {', '.join(sorted({k.backend for k in plugin.kernels}))})"
    return None


def ensure_triton_op(op: str) -> torch._ops.OpOverload:
    """``tta_triton::<op>`` for ``tta::<op>``, registered once per process."""
    existing = _ops.get(op)
    if existing is not None:
        return existing
    why = refusal(op)
    if why is not None:
        raise PluginError(f"tta::{op} cannot run as a Triton op: {why}")
    from ..runtime import ops

    with _lock:
        if op in _ops:
            return _ops[op]
        inputs, outputs, plugin = ops.signature_of(op)
        spec = triton_spec(plugin)
        name = f"{NAMESPACE}::{op}"
        body = _make_body(op, spec, plugin, ops.body_of(op), len(outputs))
        torch.library.triton_op(name, body, mutates_args=())
        import torch._library.triton as _lt

        # triton_op finds kernels by reading the body's source; ours names them in the launch
        # function, so tell it (compile caches key on the kernels' source).
        _lt.triton_ops_to_kernels[name] = _kernels_of(spec.launch_fn)
        overload = getattr(getattr(torch.ops, NAMESPACE), op).default
        _ops[op] = overload
        return overload
