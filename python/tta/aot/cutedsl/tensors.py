"""CuTeDSL kernels that take ``cute.Tensor`` parameters, launched with ``from_dlpack(...)`` (the form
CUTLASS's examples use), brought to TensorRT's pointer ABI.

A ``cute.Tensor`` kernel parameter is a by-value struct (pointer, dynamic shape and stride
values) that TensorRT cannot pass. As for cuTile, tta generates the entry instead:

- recording: ``from_dlpack(t)`` of a plugin tensor (a fake tensor with symbolic dims) gives a
  placeholder that remembers the tensor; ``mark_layout_dynamic``/``mark_compact_shape_dynamic``
  are accepted (which dims are dynamic is decided by the plugin's signature: a dim that is
  symbolic in the graph is dynamic, a static one is compiled in).
- compiling: a generated ``@cute.jit`` host takes one pointer per tensor and an ``Int32`` per
  symbolic shape/stride value (an int32 extra with its shape expression), rebuilds each tensor
  with ``cute.make_tensor(ptr, cute.make_layout(shape, stride=stride))`` and calls the user's
  host function. When that launches the user's kernel with one of these tensors, a generated
  ``@cute.kernel`` with pointer and ``Int32`` parameters is launched instead; it rebuilds the
  tensors the same way and calls the user's kernel body (inlined). The user's code is unchanged.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import torch

from ...errors import PluginError
from .. import codegen
from ..record import patched

_active = threading.local()


# -- recording -------------------------------------------------------------------------------


def _init(original):
    def __init__(self, tensor, *args, **kwargs):
        from torch._subclasses.fake_tensor import FakeTensor

        if getattr(_active, "recording", False) and isinstance(tensor, FakeTensor):
            self._tta_fake = tensor
            self._assumed_align = kwargs.get("assumed_align", args[0] if args else None)
            return
        original(self, tensor, *args, **kwargs)

    return __init__


def _marker(original):
    def mark(self, *args, **kwargs):
        if hasattr(self, "_tta_fake"):
            return self  # the plugin's signature decides which dims are dynamic
        return original(self, *args, **kwargs)

    return mark


class recording:
    """While active (this thread), ``from_dlpack`` of a fake tensor gives a placeholder."""

    def __enter__(self):
        import contextlib

        from cutlass.cute.runtime import _Tensor

        self.prev = getattr(_active, "recording", False)
        _active.recording = True
        self.stack = contextlib.ExitStack()
        self.stack.enter_context(patched(_Tensor, "__init__", _init, _active))
        for name in ("mark_layout_dynamic", "mark_compact_shape_dynamic"):
            self.stack.enter_context(patched(_Tensor, name, _marker, _active))
        return self

    def __exit__(self, *exc):
        self.stack.close()
        _active.recording = self.prev


def fake_of(v: Any) -> torch.Tensor | None:
    """The plugin tensor behind a recorded ``from_dlpack``, else None."""
    return getattr(v, "_tta_fake", None)


# -- the rebuilt tensors ---------------------------------------------------------------------


@dataclass
class TensorLayout:
    """A host tensor argument as the generated code rebuilds it: each shape/stride value is an
    int (compiled in) or the index of an int32 extra."""

    port: tuple[str, int]
    dtype: Any  # cutlass element type
    shape: list  # int | ("extra", i)
    stride: list
    align: int


@dataclass
class TensorPlan:
    tensors: dict[str, TensorLayout] = field(default_factory=dict)  # host param name -> layout
    extras: list[str] = field(default_factory=list)  # shape expressions, deduplicated


def layout_of(fake: torch.Tensor, session, extras: list[str]) -> tuple[list, list]:
    def leaf(v):
        from ..session import constant_int

        c = constant_int(v)
        if c is not None:
            return c
        expr = session.expr(v)
        if expr not in extras:
            extras.append(expr)
        return ("extra", extras.index(expr))

    return [leaf(d) for d in fake.shape], [leaf(s) for s in fake.stride()]


def _src_leaves(values: list, names: list[str]) -> str:
    parts = [str(v) if isinstance(v, int) else names[v[1]] for v in values]
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def host_wrapper(user_host, host_args: list, plan: TensorPlan):
    """A ``@cute.jit`` host function in pointer ABI that rebuilds the tensors and calls the
    user's host function; returns (function, its HostArg list)."""
    import cutlass
    import cutlass.cute as cute

    from .params import HostArg

    extra_names = [f"_e{i}" for i in range(len(plan.extras))]
    params, call, new_args, body = [], [], [], []
    for h in host_args:
        if h.name in plan.tensors:
            t = plan.tensors[h.name]
            params.append(f"{h.name}: cute.Pointer")
            new_args.append(HostArg(h.name, "pointer", None, port=t.port))
            body.append(
                f"    {h.name}_t = cute.make_tensor({h.name}, cute.make_layout({_src_leaves(t.shape, extra_names)}, "
                f"stride={_src_leaves(t.stride, extra_names)}))"
            )
            body.append(f"    _tta_tensors[id({h.name}_t)] = {h.name!r}")
            body.append(f"    _tta_values[{h.name!r}] = {h.name}")
            call.append(f"{h.name}_t")
        elif h.kind == "constexpr":
            params.append(f"{h.name}: cutlass.Constexpr")
            new_args.append(h)
            call.append(h.name)
        else:
            params.append(f"{h.name}: cutlass.Int32" if h.kind == "int" else h.name)
            new_args.append(h)
            call.append(h.name)
    for i, expr in enumerate(plan.extras):
        params.append(f"{extra_names[i]}: cutlass.Int32")
        new_args.append(HostArg(extra_names[i], "int", cutlass.Int32(0), expr=expr))
    for i in range(len(plan.extras)):
        body.append(f"    _tta_values[{extra_names[i]!r}] = {extra_names[i]}")
    name = f"{getattr(user_host, '__name__', 'host')}_tta_pointer_abi"
    src = f"def {name}({', '.join(params)}):\n" + "\n".join(body) + f"\n    _tta_user({', '.join(call)})\n"
    _active.tensors, _active.values = {}, {}
    scope = {
        "cute": cute,
        "cutlass": cutlass,
        "_tta_user": cute.jit(user_host),
        "_tta_tensors": _active.tensors,
        "_tta_values": _active.values,
    }
    fn = codegen.define(src, name, scope, f"generated {name}")
    return cute.jit(fn), new_args


def host_values() -> dict:
    """The generated host's pointer and Int32 values while it is traced, by name."""
    return getattr(_active, "values", {})


def rebuilt(value: Any) -> str | None:
    """The host parameter name of a tensor the generated host rebuilt, else None."""
    return getattr(_active, "tensors", {}).get(id(value))


def entry_kernel(user_kernel, kernel_params: list[tuple[str, Any]], plan: TensorPlan):
    """A ``@cute.kernel`` in pointer ABI standing in for ``user_kernel`` (undecorated): one
    pointer plus an Int32 per extra of each rebuilt tensor, other params passed through. Returns
    (kernel, how to build its arguments from the user's: a list of (kind, name))."""
    import cutlass
    import cutlass.cute as cute

    params, call, body, args = [], [], [], []
    for pname, v, constexpr in kernel_params:
        host = rebuilt(v) if isinstance(v, cute.Tensor) else None
        if host is not None:
            t = plan.tensors[host]
            params.append(f"{pname}: cute.Pointer")
            args.append(("pointer", host))
            used = sorted({leaf[1] for leaf in t.shape + t.stride if not isinstance(leaf, int)})
            names = {i: f"{pname}_e{i}" for i in used}
            for i in used:
                params.append(f"{names[i]}: cutlass.Int32")
                args.append(("extra", i))
            lookup = [names.get(i, "0") for i in range(len(plan.extras))]
            body.append(
                f"    {pname}_t = cute.make_tensor({pname}, cute.make_layout({_src_leaves(t.shape, lookup)}, "
                f"stride={_src_leaves(t.stride, lookup)}))"
            )
            call.append(f"{pname}_t")
        elif isinstance(v, cute.Tensor):
            raise PluginError(
                f"kernel parameter {pname!r} gets a cute.Tensor that is not one of the host function's tensor arguments "
                "(a view or tile of one); TensorRT passes plain buffers: pass the tensor and tile it in the kernel"
            )
        else:
            params.append(f"{pname}: cutlass.Constexpr" if constexpr else pname)
            args.append(("value", pname))
            call.append(pname)
    name = f"{user_kernel.__name__}"
    src = f"def {name}({', '.join(params)}):\n" + "\n".join(body) + f"\n    _tta_user({', '.join(call)})\n"
    scope = {"cute": cute, "cutlass": cutlass, "_tta_user": cute.jit(user_kernel)}
    fn = codegen.define(src, name, scope, f"generated {name}")
    return cute.kernel(fn), args
