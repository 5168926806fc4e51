"""cuTile backend: record a launch function's ``ct.launch(...)``, compile the kernel ahead of time
for one SM, in TensorRT's QDP ABI, to a CUBIN.

Users write ordinary cuTile kernels: each array parameter is, in cuTile's native ABI,
``pointer, shape..., strides...`` (int32). TensorRT calls ``kernel(input pointers..., int32
extras..., output pointers...)``. A CUBIN's parameters cannot be reordered (the SASS addresses
them by offset), and reassembling cuTile's PTX loses what tileiras adds beside it (an embedded
host-side ELF, ``.nv.host``, that the driver's tile-kernel launch uses). So instead of rewriting
the output, tta compiles a generated *entry kernel* whose parameters are already in QDP order:
one 0-d array (a bare pointer) per input and output, then the int32 extras, and whose body
rebuilds the user's arrays with ``ct.Array.from_foreign(pointer, shape, strides)`` and calls the
user's kernel function, which cuTile inlines. The CUBIN is tileiras' own, unmodified.

What each kernel argument becomes:

===========================================  ================================================
argument                                     role
===========================================  ================================================
an input/output tensor (or a view of it      an array rebuilt from that port's pointer; each
starting at the same address)                shape/stride that depends on input dims is an
                                             int32 extra, constant ones are compiled in
an int computed from shapes (SymInt)         an int32 extra with the shape expression
an int/float/bool that does not depend on    a compile-time constant (one specialization
shapes, or any ``ct.Constant`` parameter     each), never a runtime argument
===========================================  ================================================

Launch: grid = the recorded tile grid, block = (1, 1, 1) (cuTile's launch convention for tile
kernels; ``.reqntid`` is kept in ``meta``), dynamic shared memory 0.

The entry kernel, the compile and the CUBIN checks are in ``cutile_build.py``.

Not verified here: TensorRT documents only PTX for AOT plugins (``aot_impl`` "Presently, only
PTX is supported"); whether it accepts this CUBIN is unverified. cuTile's PTX (a tile kernel
at a newer ISA than today's drivers JIT, see docs/kernel-dsls.md) is rejected by the driver, so
CUBIN is the only artifact that can run there.
"""

from __future__ import annotations

import contextlib
import inspect
import threading
import typing
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from ...errors import PluginError
from ..driver import Backend
from ..record import patched
from ..session import Session, constant_int
from .build import build, kernel_name, toolchain


@dataclass
class CutileLaunch:
    """One intercepted ``ct.launch(stream, grid, kernel, args)``."""

    kernel: Any  # cuda.tile.kernel
    args: tuple
    grid: Any


# -- interception ----------------------------------------------------------------------------

_active = threading.local()


class _RecordingStream:
    """What ``torch.cuda.current_stream()`` returns while recording (no GPU is needed)."""

    cuda_stream = 0

    def __repr__(self) -> str:
        return "<tta recording stream>"


def _launch(original):
    def launch(stream, grid, kernel, kernel_args, /, **kwargs):
        sink = getattr(_active, "sink", None)
        if sink is None:
            return original(stream, grid, kernel, kernel_args, **kwargs)
        if kwargs.get("programmatic_dependent_launch"):
            raise PluginError("ct.launch(programmatic_dependent_launch=True): the TensorRT AOT plugin launch has no PDL")
        sink(CutileLaunch(kernel, tuple(kernel_args), grid))
        return None

    return launch


def _refuse_extended(original):
    def launch_extended(*args, **kwargs):
        if getattr(_active, "sink", None) is None:
            return original(*args, **kwargs)
        raise PluginError("ct.launch_extended (explicit thread counts, clusters) is not supported; use ct.launch")

    return launch_extended


_streams = threading.local()  # one for every backend: they patch the same torch functions


def _stream(original):
    def current_stream(*args, **kwargs):
        if not getattr(_streams, "sink", None):
            return original(*args, **kwargs)
        return _RecordingStream()

    return current_stream


@contextlib.contextmanager
def placeholder_streams():
    """While active (in this thread), ``torch.cuda.current_stream()``/``default_stream()`` return
    a placeholder, so launch code that asks for the stream runs without a GPU."""
    prev, _streams.sink = getattr(_streams, "sink", None), True
    try:
        with contextlib.ExitStack() as stack:
            for name in ("current_stream", "default_stream"):
                stack.enter_context(patched(torch.cuda, name, _stream, _streams))
            yield
    finally:
        _streams.sink = prev


@contextlib.contextmanager
def intercept(sink: Callable[[CutileLaunch], None]):
    """While active (in this thread), ``ct.launch`` goes to ``sink`` instead of the GPU, and
    ``torch.cuda.current_stream()`` returns a placeholder."""
    import cuda.tile as ct

    prev = getattr(_active, "sink", None)
    _active.sink = sink
    try:
        with contextlib.ExitStack() as stack:
            stack.enter_context(patched(ct, "launch", _launch, _active))
            if hasattr(ct, "launch_extended"):  # experimental, not exported by every version
                stack.enter_context(patched(ct, "launch_extended", _refuse_extended, _active))
            stack.enter_context(placeholder_streams())
            yield
    finally:
        _active.sink = prev


# -- analysis --------------------------------------------------------------------------------


@dataclass
class Arg:
    """One argument of the user's kernel, as the generated entry builds it."""

    name: str
    kind: str  # "array" | "extra" | "constant"
    port: tuple[str, int] | None = None  # arrays: ("input"|"output", k)
    shape: tuple[str, ...] = ()  # arrays: per dim, an int literal or an extra's parameter name
    strides: tuple[str, ...] = ()
    value: Any = None  # constants: the value; extras: the parameter name


@dataclass
class CutilePlan:
    kernel: Any
    args: list[Arg]
    extras: list[str]  # expression of extra i (parameter ``e{i}``)
    grid: tuple[str, str, str]
    input_dtypes: tuple[str, ...]
    output_dtypes: tuple[str, ...]
    output_shapes: tuple[tuple[str, ...], ...]
    guards: list[str] = field(default_factory=list)


def _annotation_kinds(pyfunc) -> dict[str, set[str]]:
    """``{param: {"constant", "array", "scalar", "list"}}`` from cuTile annotations."""
    out = {}
    try:
        params = inspect.signature(pyfunc, eval_str=True).parameters.values()
    except Exception:  # unresolvable annotations: cuTile will say what it thinks of them
        params = inspect.signature(pyfunc).parameters.values()
    for p in params:
        kinds = set()
        if typing.get_origin(p.annotation) is typing.Annotated:
            for m in typing.get_args(p.annotation)[1:]:
                kinds.add(type(m).__name__.removesuffix("Annotation").lower())
        out[p.name] = kinds
    return out


class _Extras:
    """Int32 extras, one per distinct shape expression."""

    def __init__(self):
        self.exprs: list[str] = []

    def ref(self, value: Any, session: Session) -> str:
        c = constant_int(value)
        if c is not None:
            return str(c)
        e = session.expr(value)
        if e not in self.exprs:
            self.exprs.append(e)
        return f"e{self.exprs.index(e)}"


def plan_launch(launch: CutileLaunch, session: Session, where: str) -> CutilePlan:
    import cuda.tile as ct

    kernel = launch.kernel
    if not isinstance(kernel, ct.kernel):
        raise PluginError(f"{where}: ct.launch got {kernel!r}, not a @ct.kernel function")
    kname = kernel_name(kernel)
    here = f"{where}: kernel {kname}"
    pyfunc = kernel._pyfunc
    try:
        bound = inspect.signature(pyfunc).bind(*launch.args)
    except TypeError as e:
        raise PluginError(f"{here}: the launch arguments do not match the kernel's parameters: {e}") from None
    bound.apply_defaults()
    kinds = _annotation_kinds(pyfunc)
    extras = _Extras()
    args: list[Arg] = []
    for name, v in bound.arguments.items():
        if "constant" in kinds[name]:
            args.append(Arg(name, "constant", value=session.constant(v, name, here, "ct.Constant")))
        elif isinstance(v, torch.Tensor):
            args.append(_array(v, name, here, session, extras, kinds[name]))
        elif isinstance(v, (torch.SymFloat, torch.SymBool)):
            raise PluginError(
                f"{here}: parameter {name!r} gets a value computed from shapes that is not an int; TensorRT passes "
                "only int32 scalars at run time: pass the ints and compute the rest in the kernel"
            )
        elif isinstance(v, torch.SymInt) and constant_int(v) is None:
            if kinds[name] & {"scalar"}:
                raise PluginError(f"{here}: parameter {name!r} is annotated as a 64-bit scalar; TensorRT passes int32 extras")
            args.append(Arg(name, "extra", value=extras.ref(v, session)))
        elif isinstance(v, (bool, int, float, torch.SymInt)) or v is None:
            # Does not depend on shapes: compile it in (a float could not be a runtime extra anyway).
            args.append(Arg(name, "constant", value=session.constant(v, name, here, "ct.Constant")))
        elif isinstance(v, (list, tuple)):
            raise PluginError(f"{here}: parameter {name!r} gets a {type(v).__name__}; tta passes arrays and scalars only")
        else:
            raise PluginError(f"{here}: parameter {name!r} gets a {type(v).__name__}, which a TensorRT AOT kernel cannot take")

    grid_exprs = session.grid(launch.grid, here)
    return CutilePlan(
        kernel=kernel,
        args=args,
        extras=extras.exprs,
        grid=grid_exprs,
        **session.port_types(),
    )


def _array(t: torch.Tensor, name: str, here: str, session: Session, extras: _Extras, kinds: set[str]) -> Arg:
    role = session.role_of(t, name, here)
    port = (session.inputs if role[0] == "input" else session.outputs)[role[1]]
    if t.dtype != port.dtype:
        raise PluginError(f"{here}: parameter {name!r} views {role[0]} {role[1]} ({port.dtype}) as {t.dtype}; pass it unchanged")
    if "array" in kinds:
        raise PluginError(
            f"{here}: parameter {name!r} is annotated with a cuTile array annotation (e.g. IndexedWithInt64); "
            "TensorRT passes shapes and strides as int32 extras: drop the annotation"
        )
    dims = tuple(extras.ref(d, session) for d in t.shape)
    strides = tuple(extras.ref(s, session) for s in t.stride())
    return Arg(name, "array", port=role, shape=dims, strides=strides)


BACKEND = Backend(
    name="cutile",
    title="cuTile",
    intercept=lambda session, where: intercept,
    plan=plan_launch,
    build=build,
    toolchain=toolchain,
    options=frozenset({"pointer_divisibility"}),
)
