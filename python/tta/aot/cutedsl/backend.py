"""CuTeDSL backend: record the ``@cute.jit`` host call a launch function makes, compile it ahead of
time for one SM, and bring the kernel's PTX to TensorRT's QDP ABI.

The launch function is ordinary CuTeDSL host code: it calls a ``@cute.jit`` host function (or
``cute.compile(host, ...)`` and then the compiled function) with ``make_ptr(dtype,
t.data_ptr(), ...)`` pointers and ints; the host function launches one ``@cute.kernel``. While
recording, fake tensors' ``data_ptr()`` returns an address that names the port, so each pointer
is traced back to an input or output.

What the host function's arguments become:

=======================================  ====================================================
argument                                 role
=======================================  ====================================================
a ``make_ptr`` of an input/output        that port's pointer
an int (``Int32`` or unannotated)        a runtime i32: an int32 extra with the shape
                                         expression (a constant if it does not depend on shapes)
any value of a ``Constexpr`` parameter   compiled in (one specialization each)
a float or bool that is not Constexpr    refused: TensorRT passes only int32 scalars
``from_dlpack(t)`` of an input/output      a ``cute.Tensor``: rebuilt from a pointer and int32
                                         extras by generated code (``cutedsl_tensors.py``)
=======================================  ====================================================

The host function may compute the kernel's arguments and grid from its arguments with integer
arithmetic (``(n + T - 1) // T``); tta reads that arithmetic back from the traced IR (the kernel
launch is hooked while ``cute.compile`` runs) and turns it into shape expressions. Kernel
parameters must be ``cute.Pointer`` or 32-bit ints; ``cute.Tensor`` parameters are refused.

Artifact: the kernel's PTX with its ``.entry`` parameters permuted into QDP order (Rust,
``tta.common.bridge.ptx_to_qdp_abi``). When the PTX ISA CuTeDSL emits is newer than ``max_ptx`` (what the
target driver JIT-compiles; docs/kernel-dsls.md lists each flavour's ISA), the permuted PTX is
assembled to a CUBIN with ptxas instead (TensorRT documents only PTX
for AOT plugins; CUBIN acceptance is unverified).
"""

from __future__ import annotations

import contextlib
import functools
import tempfile
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from ...common import bridge as core
from ...common import dtypes
from ...errors import PluginError
from .. import cuda_tools, phases, ptxabi
from ..cutile.backend import placeholder_streams  # torch.cuda.current_stream() without a GPU while recording
from ..driver import Artifact, Backend
from ..record import patched
from ..session import Session, constant_int
from . import tensors as cutedsl_tensors
from .ir import LaunchHook, dynamic_smem_from_host_ir
from .params import HostArg, is_constexpr, signature

# Recording addresses: port slot s is at _BASE + (s << 32) (aligned for any assumed_align).
_BASE = 0x7A7A << 48


@dataclass
class CuteCall:
    """One intercepted host call: ``fn`` is the undecorated ``@cute.jit`` function."""

    fn: Callable
    args: tuple
    kwargs: dict


# -- interception ----------------------------------------------------------------------------

_active = threading.local()


def _jit_func(original):
    def _func(self, funcBody, *args, **kwargs):
        from cutlass._mlir import ir

        sink = getattr(_active, "sink", None)
        if sink is None or ir.Context.current is not None:  # not recording, or a nested jit call
            return original(self, funcBody, *args, **kwargs)
        sink(CuteCall(funcBody, args, kwargs))
        return None

    return _func


class _RecordedCompile:
    """What ``cute.compile(host, *args)`` returns while recording: calling it records the host
    call, with the Constexpr values from the compile and the runtime values from the call."""

    def __init__(self, fn: Callable, args: tuple, kwargs: dict):
        while hasattr(fn, "__wrapped__"):
            fn = fn.__wrapped__
        self.fn, self.args, self.kwargs = fn, args, {k: v for k, v in kwargs.items() if k != "options"}

    def __call__(self, *args, **kwargs):
        sig = signature(self.fn)
        compiled = sig.bind_partial(*self.args, **self.kwargs).arguments
        dynamic = [n for n, p in sig.parameters.items() if not is_constexpr(p.annotation)]
        merged = dict(compiled)
        merged.update(zip(dynamic, args))
        merged.update(kwargs)
        _active.sink(CuteCall(self.fn, (), merged))


def _compile(original):
    def _compile(self, func, *args, **kwargs):
        if getattr(_active, "sink", None) is None:
            return original(self, func, *args, **kwargs)
        return _RecordedCompile(func, args, kwargs)

    return _compile


def _data_ptr(original):
    def data_ptr(self):
        session = getattr(_active, "session", None)
        if getattr(_active, "sink", None) is None or session is None:
            return original(self)
        role = session.tensor_role(self)
        if role is None:
            raise PluginError(
                f"{getattr(_active, 'where', 'tta.cutedsl')}: data_ptr() of a tensor that is neither an input nor an "
                "output of the plugin (allocated in the launch function?); TensorRT AOT plugins get no scratch memory"
            )
        kind, k = role
        return _BASE + ((2 * k + (kind == "output")) << 32)

    return data_ptr


@contextlib.contextmanager
def intercept(sink: Callable[[CuteCall], None], session: Session | None = None, where: str = "tta.cutedsl"):
    """While active (in this thread), top-level ``@cute.jit`` calls and ``cute.compile`` go to
    ``sink``, and fake tensors' ``data_ptr()`` names their port."""
    from cutlass.base_dsl.compiler import CompileCallable
    from cutlass.base_dsl.dsl import BaseDSL
    from torch._subclasses.fake_tensor import FakeTensor

    prev = (getattr(_active, "sink", None), getattr(_active, "session", None), getattr(_active, "where", None))
    _active.sink, _active.session, _active.where = sink, session, where
    try:
        with contextlib.ExitStack() as stack:
            stack.enter_context(patched(BaseDSL, "_func", _jit_func, _active))
            stack.enter_context(patched(CompileCallable, "_compile", _compile, _active))
            stack.enter_context(patched(FakeTensor, "data_ptr", _data_ptr, _active))
            stack.enter_context(placeholder_streams())
            stack.enter_context(cutedsl_tensors.recording())
            yield
    finally:
        _active.sink, _active.session, _active.where = prev


# -- analysis --------------------------------------------------------------------------------


@dataclass
class CutePlan:
    fn: Callable
    host: list[HostArg]
    input_dtypes: tuple[str, ...]
    output_dtypes: tuple[str, ...]
    output_shapes: tuple[tuple[str, ...], ...]
    guards: list[str] = field(default_factory=list)
    tensors: Any = None  # cutedsl_tensors.TensorPlan when the host takes from_dlpack tensors


def _port_of(ptr, session: Session, name: str, here: str) -> tuple[str, int]:
    addr = int(ptr._pointer)
    slot, low = divmod(addr - _BASE, 1 << 32)
    ports = 2 * max(len(session.inputs), len(session.outputs))
    if addr < _BASE or low or slot >= ports:
        raise PluginError(
            f"{here}: parameter {name!r} gets a pointer that is not the start of an input or output "
            "(make_ptr(dtype, t.data_ptr(), ...) of a plugin tensor, without offsets)"
        )
    kind, k = ("output" if slot % 2 else "input"), slot // 2
    port = (session.inputs if kind == "input" else session.outputs)[k]
    want = _cutlass_dtype(port.dtype)
    if ptr._dtype is not want:
        raise PluginError(f"{here}: parameter {name!r} points at {kind} {k} ({port.dtype}) as {ptr._dtype.__name__}; use {want.__name__}")
    return kind, k


def _cutlass_dtype(dtype: torch.dtype):
    import cutlass

    return getattr(cutlass, dtypes.entry(dtype).cutlass)


def plan_launch(call: CuteCall, session: Session, where: str) -> CutePlan:
    import cutlass
    from cuda.bindings.driver import CUstream
    from cutlass.cute.runtime import _Pointer

    fname = getattr(call.fn, "__qualname__", repr(call.fn))
    here = f"{where}: host function {fname}"
    sig = signature(call.fn)
    try:
        bound = sig.bind(*call.args, **call.kwargs)
    except TypeError as e:
        raise PluginError(f"{here}: the call does not match the host function's parameters: {e}") from None
    bound.apply_defaults()
    host = []
    tensors = cutedsl_tensors.TensorPlan()
    for name, v in bound.arguments.items():
        fake = cutedsl_tensors.fake_of(v)
        if fake is not None:
            kind, k = session.role_of(fake, name, here)
            shape, stride = cutedsl_tensors.layout_of(fake, session, tensors.extras)
            align = v._assumed_align or fake.element_size()
            tensors.tensors[name] = cutedsl_tensors.TensorLayout((kind, k), _cutlass_dtype(fake.dtype), shape, stride, align)
            host.append(HostArg(name, "tensor", None, port=(kind, k)))
            continue
        if is_constexpr(sig.parameters[name].annotation):
            host.append(HostArg(name, "constexpr", session.constant(v, name, here, "Constexpr")))
        elif isinstance(v, _Pointer):
            host.append(HostArg(name, "pointer", v, port=_port_of(v, session, name, here)))
        elif isinstance(v, torch.Tensor):
            raise PluginError(
                f"{here}: parameter {name!r} gets a tensor, which CuTeDSL passes as a cute.Tensor (a by-value struct "
                "of pointer, shape and strides) that a TensorRT AOT kernel cannot take; pass make_ptr(dtype, "
                "t.data_ptr(), ...) and the sizes as Int32, and build the tensor in the kernel"
            )
        elif isinstance(v, (bool, float, torch.SymFloat, torch.SymBool, cutlass.Float32, cutlass.Boolean)):
            raise PluginError(
                f"{here}: parameter {name!r} gets {v!r} at run time, but TensorRT AOT kernels take only int32 scalars "
                f"at run time; declare it `{name}: cutlass.Constexpr` so the value is compiled in"
            )
        elif isinstance(v, (int, torch.SymInt)):
            expr = session.expr(v)
            host.append(HostArg(name, "int", cutlass.Int32(constant_int(v) or 0), expr=expr))
        elif isinstance(v, CUstream):  # a host argument only: TensorRT launches on its own stream
            host.append(HostArg(name, "stream", v))
        elif v is None:
            host.append(HostArg(name, "constexpr", v))
        else:
            raise PluginError(f"{here}: parameter {name!r} gets a {type(v).__name__}, which tta cannot pass to a TensorRT AOT kernel")
    return CutePlan(
        fn=call.fn,
        host=host,
        tensors=tensors if tensors.tensors else None,
        **session.port_types(),
    )


# -- compilation -----------------------------------------------------------------------------


def _isa_option(max_ptx: int | str | None) -> int | None:
    """Triton's spelling of a PTX ISA (90 = 9.0); "9.0" is accepted too."""
    if max_ptx is None or isinstance(max_ptx, int):
        return max_ptx
    return ptxabi.isa_option(str(max_ptx))


def toolchain() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    # "target": how the PTX target is chosen (part of the cache key, so changing it recompiles).
    info = {"target": "plain unless the kernel needs sm_XXa"}
    for pkg in ("nvidia-cutlass-dsl", "nvidia-cutlass-dsl-libs-cu12", "nvidia-cutlass-dsl-libs-cu13"):
        try:
            info[pkg] = version(pkg)
        except PackageNotFoundError:
            pass
    return info


def build(plan: CutePlan, sm: int, max_ptx: int | str | None, config: tuple, where: str) -> Artifact:
    """``cute.compile`` for ``sm`` (no GPU needed) with the kernel launch hooked, then the QDP ABI
    rewrite of the kernel's PTX (or a CUBIN when the PTX is newer than ``max_ptx``)."""
    import cutlass.cute as cute

    fname = getattr(plan.fn, "__qualname__", repr(plan.fn))
    here = f"{where}: host function {fname}"
    arch = f"sm_{sm}a" if sm >= 90 else f"sm_{sm}"
    fn, host_args = plan.fn, plan.host
    if plan.tensors is not None:
        # cute.Tensor arguments: compile a generated pointer-ABI host and entry kernel around
        # the user's code (cutedsl_tensors.py).
        fn, host_args = cutedsl_tensors.host_wrapper(plan.fn, plan.host, plan.tensors)
        host_args = [_with_pointer(h, plan) for h in host_args]
    hook = LaunchHook(host_args, here, plan.tensors)
    with tempfile.TemporaryDirectory(prefix="tta-cute-") as dump, hook.active():
        try:
            with phases.phase(phases.DSL):
                compiled = cute.compile(fn, *[h.value for h in host_args], options=f"--gpu-arch {arch} --keep-ptx --dump-dir {dump}")
        except PluginError:
            raise
        except Exception as e:
            raise PluginError(f"{here}: CuTeDSL could not compile for {arch} (config {dict(config)}): {e}") from e
        ptx = compiled.__ptx__
    launch = hook.result()
    if not isinstance(ptx, str) or ".entry" not in ptx:
        raise PluginError(f"{here}: CuTeDSL produced no PTX")
    shared_mem = launch.smem if launch.smem is not None else dynamic_smem_from_host_ir(compiled.ir_module, here)
    return _to_qdp(plan, launch, ptx, shared_mem, sm, _isa_option(max_ptx), config, here)


def _with_pointer(h: HostArg, plan: CutePlan) -> HostArg:
    """A generated host's pointer argument, at the recording address naming its port."""
    if h.kind != "pointer" or h.value is not None:
        return h
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_ptr

    t = plan.tensors.tensors[h.name]
    kind, k = t.port
    addr = _BASE + ((2 * k + (kind == "output")) << 32)
    return HostArg(h.name, "pointer", make_ptr(t.dtype, addr, cute.AddressSpace.gmem, assumed_align=t.align), port=t.port)


def _to_qdp(plan: CutePlan, launch, ptx: str, shared_mem: int, sm: int, max_ptx: int | None, config: tuple, here: str) -> Artifact:
    module = core.ptx_parse(ptx)
    entries = [e for e in module.entries if e.visible]
    if len(entries) != 1:
        raise PluginError(f"{here}: expected one kernel in the PTX, found {[e.name for e in entries]}")
    entry = entries[0]
    params = launch.params  # the kernel's runtime params in declaration order: (role, index)
    ptxabi.check_each_port_once(params, len(plan.input_dtypes), len(plan.output_dtypes), here)
    slots = ptxabi.slots_of(params)
    reqntid = entry.reqntid
    if reqntid and tuple(reqntid) + (1,) * (3 - len(reqntid)) != tuple(launch.block):
        raise PluginError(f"{here}: the launch's block {launch.block} differs from the kernel's .reqntid {reqntid}")
    version = module.version
    fits = max_ptx is None or ptxabi.isa_option(version) <= max_ptx
    # The kernel's declared parameters are checked against the traced ones (count and kinds) here.
    qdp, _ = ptxabi.to_qdp_abi(ptx, entry=entry.name, roles=params, max_ptx=max_ptx if fits else None, where=here)
    arch_specific = None
    if fits:
        qdp, arch_specific = ptxabi.plain_target(qdp, sm, cuda_tools.find_ptxas(version), here)
        code, code_format = qdp.encode(), "ptx"
    else:
        code, code_format = cuda_tools.assemble(qdp, sm), "cubin"
        ptxabi.check_cubin_layout(code, entry.name, slots, f"{here} (assembled)")
    notes = [] if fits else [f"PTX ISA {version} is newer than max_ptx={max_ptx}: shipped as a CUBIN (TensorRT acceptance unverified)"]
    if shared_mem > 48 * 1024:
        notes.append(
            f"{shared_mem} bytes of dynamic shared memory need cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES) before "
            "the launch; whether TensorRT sets it is unverified"
        )
    return Artifact(
        entry=entry.name,
        code=code,
        code_format=code_format,
        grid=launch.grid,
        block=tuple(launch.block),
        shared_mem=int(shared_mem),
        extras=tuple(launch.extras),
        ptx_version=version,
        meta={
            "kernel": launch.kernel_name,
            "host": [{"name": h.name, "kind": h.kind, "port": h.port, "expr": h.expr} for h in plan.host],
            "kernel_params": [list(p) for p in params],
            "reqntid": None if reqntid is None else list(reqntid),
            "arch_specific": arch_specific,
            "note": "; ".join(notes) or None,
        },
    )


BACKEND = Backend(
    name="cutedsl",
    title="CuTeDSL",
    intercept=lambda session, where: functools.partial(intercept, session=session, where=where),
    plan=plan_launch,
    build=build,
    toolchain=toolchain,
)
