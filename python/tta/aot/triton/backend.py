"""Triton backend: record a launch function's ``kernel[grid](...)``, compile it ahead of time for
one SM with ``triton.compile``, and bring the PTX to the TensorRT QDP ABI.

What each kernel argument becomes (``plan_launch``):

=========================================  =================================================
argument                                   role
=========================================  =================================================
an input / output tensor (or a view of it  pointer param; its position in the QDP ABI is the
starting at the same address)              port's position
an int computed from shapes (SymInt)       runtime ``i32`` param, an int32 *extra* with the
                                           shape expression
an int/bool/None that does not depend on   compiled in as a constexpr (one specialization
shapes, or any value of a ``tl.constexpr``  each), never a runtime argument
a float to a runtime param (``eps``)        bound to that value as an fp32 constant: the
                                           kernel is specialised for it (``triton_specialize``)
a float computed from shapes (SymFloat)    refused: TensorRT passes only int32 scalars
=========================================  =================================================

``@triton.autotune`` configs and ``@triton.heuristics`` values: see ``triton_tuning.py``.

Triton's JIT would also specialize on values (an int equal to 1 becomes a constant and leaves
the PTX; ints divisible by 16 and 16-byte aligned pointers get ``tt.divisibility``). AOT must not:
the kernel has to accept every size TensorRT hands it, and TensorRT documents no alignment. So
the signature and ``attrs`` are written out here, with no hints; ``pointer_divisibility`` is an
explicit opt-in for callers that know better (benchmarks compare both).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from ...common import dtypes, filelock
from ...common.cache import digest
from ...declare import autotune as triton_tuning
from ...errors import PluginError
from .. import phases, ptxabi
from ..driver import Artifact, Backend
from ..record import patched
from ..session import Session, constant_int
from .specialize import bind_floats


@dataclass
class TritonLaunch:
    """One intercepted ``kernel[grid](*args, **kwargs)``."""

    kernel: Any  # triton.runtime.jit.JITFunction
    args: tuple
    kwargs: dict
    grid: Any


# -- interception ----------------------------------------------------------------------------

_active = threading.local()


def _jit_run(original):
    def run(self, *args, grid, warmup, **kwargs):
        sink = getattr(_active, "sink", None)
        if sink is None:  # another thread, not recording: behave as Triton does
            return original(self, *args, grid=grid, warmup=warmup, **kwargs)
        sink(TritonLaunch(self, args, dict(kwargs), grid))
        return None

    return run


def _autotuned_run(original):
    def run(self, *args, **kwargs):
        if getattr(_active, "sink", None) is None:
            return original(self, *args, **kwargs)
        return triton_tuning.run_autotuned(self, args, kwargs, getattr(_active, "where", "tta.triton"))

    return run


def _refuse(why: str):
    def factory(original):
        def run(self, *args, **kwargs):
            if getattr(_active, "sink", None) is None:
                return original(self, *args, **kwargs)
            name = getattr(getattr(self, "fn", None), "__name__", None) or getattr(self, "__name__", "?")
            raise PluginError(why.format(name=name))

        return run

    return factory


@contextlib.contextmanager
def intercept(sink: Callable[[TritonLaunch], None], where: str = "tta.triton"):
    """While active (in this thread), Triton launches go to ``sink`` instead of the GPU; an
    ``@triton.autotune`` kernel launches with the tactic's config (``triton_tuning.py``)."""
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.jit import JITFunction

    prev = getattr(_active, "sink", None), getattr(_active, "where", None)
    _active.sink, _active.where = sink, where
    try:
        with contextlib.ExitStack() as stack:
            stack.enter_context(patched(JITFunction, "run", _jit_run, _active))
            stack.enter_context(patched(Autotuner, "run", _autotuned_run, _active))
            try:
                from triton.runtime.interpreter import InterpretedFunction
            except ImportError:  # pragma: no cover - older Triton
                InterpretedFunction = None
            if InterpretedFunction is not None:
                stack.enter_context(
                    patched(
                        InterpretedFunction,
                        "run",
                        _refuse(
                            "kernel {name} was defined with TRITON_INTERPRET=1 set; ahead-of-time compilation "
                            "needs the real Triton compiler: unset TRITON_INTERPRET before importing the kernel"
                        ),
                        _active,
                    )
                )
            yield
    finally:
        _active.sink, _active.where = prev


# -- analysis --------------------------------------------------------------------------------


@dataclass
class Param:
    name: str
    role: str  # "input" | "output" | "extra" | "constexpr"
    index: int | None = None  # port index for input/output, extra index for extra
    value: Any = None  # constexpr value, or extra expression


@dataclass
class TritonPlan:
    """What to compile and how TensorRT launches it; everything symbolic is an expression."""

    kernel: Any
    params: list[Param]
    signature: dict[str, str]
    constexprs: dict[str, Any]
    extras: list[str]
    grid: tuple[str, str, str]
    options: dict[str, Any]
    input_dtypes: tuple[str, ...]
    output_dtypes: tuple[str, ...]
    output_shapes: tuple[tuple[str, ...], ...]
    guards: list[str] = field(default_factory=list)
    baked: dict[str, Any] = field(default_factory=dict)  # runtime params given constants
    floats: dict[str, float] = field(default_factory=dict)  # runtime float params bound to values

    def runtime_params(self) -> list[Param]:
        return [p for p in self.params if p.role != "constexpr"]

    def runtime_roles(self) -> list[tuple[str, int]]:
        return [(p.role, p.index) for p in self.runtime_params()]


def _option_names() -> set[str]:
    from triton.backends.nvidia.compiler import CUDAOptions

    return {f.name for f in dataclasses.fields(CUDAOptions)}


def _kernel_name(kernel) -> str:
    fn = getattr(kernel, "fn", kernel)
    return getattr(fn, "__qualname__", getattr(fn, "__name__", repr(kernel)))


def plan_launch(launch: TritonLaunch, session: Session, where: str) -> TritonPlan:
    """Roles of every argument, the extras, the grid and the compile options of one launch."""
    kernel = launch.kernel
    kname = _kernel_name(kernel)
    here = f"{where}: kernel {kname}"
    option_names = _option_names()
    options = {k: v for k, v in launch.kwargs.items() if k in option_names}
    kwargs = {k: v for k, v in launch.kwargs.items() if k not in option_names}
    sig = inspect.signature(kernel.fn)
    try:
        bound = sig.bind(*launch.args, **kwargs)
    except TypeError as e:
        raise PluginError(f"{here}: the launch does not match the kernel's parameters: {e}") from None
    bound.apply_defaults()
    values = dict(bound.arguments)

    params: list[Param] = []
    signature: dict[str, str] = {}
    constexprs: dict[str, Any] = {}
    extras: list[str] = []
    baked: dict[str, Any] = {}
    floats: dict[str, float] = {}
    for kp in kernel.params:
        name = kp.name
        v = values[name]
        if kp.is_constexpr:
            c = session.constant(v, name, here, "constexpr")
            constexprs[name] = c
            signature[name] = "constexpr"
            params.append(Param(name, "constexpr", value=c))
            continue
        if isinstance(v, torch.Tensor):
            role = session.role_of(v, name, here)
            signature[name] = "*" + dtypes.entry(v.dtype).triton
            params.append(Param(name, role[0], role[1]))
            continue
        if isinstance(v, float):
            # Fixed for the plugin: bound as a constant fp32 scalar (the type Triton gives a float
            # argument), since TensorRT passes only int32 scalars at run time.
            floats[name] = v
            baked[name] = v
            params.append(Param(name, "constexpr", value=v))
            continue
        if v is None or isinstance(v, bool) or constant_int(v) is not None:
            # Does not depend on shapes: compile it in. Triton accepts a constexpr for a param that
            # is not annotated as one (its JIT does the same for ints equal to 1).
            c = v if v is None or isinstance(v, bool) else constant_int(v)
            constexprs[name] = c
            signature[name] = "constexpr"
            baked[name] = c
            params.append(Param(name, "constexpr", value=c))
            continue
        if isinstance(v, torch.SymInt):
            expr = session.expr(v)
            params.append(Param(name, "extra", len(extras), expr))
            extras.append(expr)
            signature[name] = "i32"
            continue
        if isinstance(v, torch.SymFloat):
            raise PluginError(
                f"{here}: parameter {name!r} gets a float computed from shapes; TensorRT passes only int32 scalars "
                "at run time: pass the integers and compute the float in the kernel"
            )
        raise PluginError(f"{here}: parameter {name!r} gets a {type(v).__name__}, which a TensorRT AOT kernel cannot take")

    ptxabi.check_each_port_once(
        [(p.role, p.index) for p in params if p.role != "constexpr"], len(session.inputs), len(session.outputs), here
    )

    grid_exprs = session.grid(launch.grid(dict(values)) if callable(launch.grid) else launch.grid, here)

    return TritonPlan(
        kernel=kernel,
        params=params,
        signature=signature,
        constexprs=constexprs,
        extras=extras,
        grid=grid_exprs,
        options=options,
        **session.port_types(),
        baked=baked,
        floats=floats,
    )


# -- compilation -----------------------------------------------------------------------------


def _default_ptx_version(sm: int) -> int | None:
    """The PTX ISA Triton would emit for ``sm`` with its bundled ptxas (e.g. 94 for 9.4)."""
    try:
        from types import SimpleNamespace

        from triton.backends.nvidia import compiler as nv

        return int(nv.get_ptx_version_from_options(SimpleNamespace(ptx_version=None), sm))
    except Exception:  # pragma: no cover - Triton internals moved
        return None


def ptx_version_option(sm: int, max_ptx: int | None) -> int | None:
    """``options["ptx_version"]``: Triton's default, capped to what the target driver JITs.
    Passing a cap above the bundled ptxas' own ISA would fail in ptxas, so only lower it."""
    if max_ptx is None:
        return None
    default = _default_ptx_version(sm)
    if default is None:
        # Unknown default: leave Triton's choice; the PTX check after compiling refuses a
        # too-new ISA with a clear message instead of ptxas failing on an ISA it lacks.
        return None
    return max_ptx if default > max_ptx else None


def _ptxas_path(sm: int) -> str | None:
    """The ptxas Triton compiles with (it reads the PTX ISA Triton emits)."""
    try:
        from triton.backends.nvidia.compiler import get_ptxas

        try:
            tool = get_ptxas(sm)
        except TypeError:  # Triton versions whose get_ptxas takes no arch
            tool = get_ptxas()
        return str(tool.path if hasattr(tool, "path") else tool[0])
    except Exception:  # pragma: no cover - toolchain layout moved
        return None


def toolchain() -> dict[str, str]:
    import triton

    # "target": how the PTX target is chosen (part of the cache key, so changing it recompiles).
    info = {"triton": triton.__version__, "target": "plain unless the kernel needs sm_XXa"}
    try:
        from triton.backends.nvidia.compiler import get_ptxas

        try:
            tool = get_ptxas(90)
        except TypeError:  # Triton versions whose get_ptxas takes no arch
            tool = get_ptxas()
        info["ptxas"] = str(tool.version if hasattr(tool, "version") else tool[1])
    except Exception:  # pragma: no cover - toolchain layout moved; the triton version still keys
        pass
    return info


def build(
    plan: TritonPlan,
    sm: int,
    max_ptx: int | None,
    config: tuple,
    where: str,
    pointer_divisibility: int | None = None,
) -> Artifact:
    """``triton.compile`` for ``sm`` (no GPU needed), then the QDP ABI rewrite of the PTX."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    kname = _kernel_name(plan.kernel)
    attrs = {}
    if pointer_divisibility:
        # Opt-in only: TensorRT documents no alignment for plugin buffers.
        for i, p in enumerate(plan.params):
            if p.role in ("input", "output"):
                attrs[(i,)] = [["tt.divisibility", int(pointer_divisibility)]]
    fn, signature, constexprs = plan.kernel, dict(plan.signature), dict(plan.constexprs)
    if plan.floats:
        fn = bind_floats(plan.kernel, plan.floats, set(constexprs))
        for name in plan.floats:
            signature.pop(name, None), constexprs.pop(name, None)
        # attrs are keyed by parameter position in the kernel compiled.
        attrs = {(list(signature).index(plan.params[i[0]].name),): a for i, a in attrs.items()}
    src = ASTSource(fn=fn, signature=signature, constexprs=constexprs, attrs=attrs)
    options = dict(plan.options)
    # Explicit, so the result does not depend on Triton's changing default (nor warn about it).
    options.setdefault("enable_fp_fusion", True)
    cap = ptx_version_option(sm, max_ptx)
    if cap is not None and "ptx_version" not in options:
        options["ptx_version"] = cap
    try:
        with phases.phase(phases.DSL), _one_compile_of(src, options, sm):
            compiled = triton.compile(src, target=GPUTarget("cuda", sm, 32), options=options)
    except Exception as e:
        raise PluginError(f"{where}: Triton could not compile kernel {kname} for sm_{sm} (config {dict(config)}): {e}") from e
    md = compiled.metadata
    _check_launchable(md, f"{where}: kernel {kname}")
    ptx = compiled.asm["ptx"]
    roles = plan.runtime_roles()
    abi_ptx, version = ptxabi.to_qdp_abi(
        ptx,
        entry=md.name,
        roles=roles,
        scratch_sizes=(getattr(md, "global_scratch_size", 0) or 0, getattr(md, "profile_scratch_size", 0) or 0),
        max_ptx=max_ptx,
        where=f"{where}: kernel {kname}",
    )
    abi_ptx, arch_specific = ptxabi.plain_target(abi_ptx, sm, _ptxas_path(sm), f"{where}: kernel {kname}")
    return Artifact(
        entry=md.name,
        code=abi_ptx.encode(),
        code_format="ptx",
        grid=plan.grid,
        block=(md.num_warps * 32, 1, 1),
        shared_mem=int(md.shared),
        extras=tuple(plan.extras),
        ptx_version=version,
        meta={
            "kernel": kname,
            "num_warps": md.num_warps,
            "num_stages": md.num_stages,
            "constexprs": {k: _jsonable(v) for k, v in plan.constexprs.items()},
            "baked": {k: _jsonable(v) for k, v in plan.baked.items()},
            "params": [dataclasses.asdict(p) | {"value": _jsonable(p.value)} for p in plan.params],
            "pointer_divisibility": pointer_divisibility,
            "arch_specific": arch_specific,
            "note": specialization_note(plan),
        },
    )


def _one_compile_of(src, options: dict, sm: int):
    """A lock on what Triton would compile alike. Tactics whose configs differ only in what the
    launch function uses (a grid: ``ROWS`` in the rmsnorm example) compile to one kernel; in a
    pool their workers would compile it side by side, so the second waits for the first and hits
    Triton's cache. Keyed like Triton's own hash (source, signature, constants, attrs), the
    options and the target. The lock files (empty) stay in Triton's cache folder."""
    import triton.knobs

    key = digest({"source": src.hash(), "options": options, "sm": sm})
    try:
        folder = triton.knobs.cache.dir
    except Exception:
        folder = None
    if not folder:
        return contextlib.nullcontext(False)
    return filelock.held(f"{folder}/tta-locks/{key[:32]}.lock")


def specialization_note(plan: TritonPlan) -> str | None:
    """What tta fixed in the kernel that the kernel takes at run time, in words."""
    parts = []
    if plan.floats:
        parts.append("floats bound as fp32 constants: " + ", ".join(f"{k}={v!r}" for k, v in plan.floats.items()))
    ints = {k: v for k, v in plan.baked.items() if k not in plan.floats}
    if ints:
        parts.append("constants compiled in: " + ", ".join(f"{k}={v!r}" for k, v in ints.items()))
    extras = [f"{p.name}={p.value}" for p in plan.params if p.role == "extra"]
    if extras:
        parts.append("int32 extras from shapes: " + ", ".join(extras))
    if not plan.baked:
        return None
    return "specialised on run-time arguments fixed for this plugin (" + "; ".join(parts) + ")"


def _jsonable(v: Any) -> Any:
    return v if isinstance(v, (int, float, str, bool)) or v is None else repr(v)


def _check_launchable(md, here: str) -> None:
    """Refuse what the QDP launch cannot do: it has grid, block and dynamic smem only."""
    problems = []
    if getattr(md, "num_ctas", 1) != 1:
        problems.append(f"num_ctas={md.num_ctas} (clusters)")
    if getattr(md, "launch_cooperative_grid", False):
        problems.append("a cooperative launch")
    if getattr(md, "launch_pdl", False):
        problems.append("programmatic dependent launch")
    if getattr(md, "tmem_size", 0):
        problems.append("tensor memory")
    if getattr(md, "tensordesc_meta", None):
        problems.append("host-side tensor descriptors")
    for what in ("global_scratch_size", "profile_scratch_size"):
        if getattr(md, what, 0):
            problems.append(f"{what}={getattr(md, what)} (e.g. device-side TMA descriptors need scratch memory)")
    if problems:
        raise PluginError(f"{here} needs {', '.join(problems)}, which the TensorRT AOT plugin launch cannot provide")


BACKEND = Backend(
    name="triton",
    title="Triton",
    intercept=lambda session, where: functools.partial(intercept, where=where),
    plan=plan_launch,
    build=build,
    toolchain=toolchain,
    options=frozenset({"pointer_divisibility"}),
    tactic=lambda spec, config: triton_tuning.tactic(config if spec.autotuned else triton_tuning.USER),
)
