"""The compile driver every kernel DSL shares. A backend (``triton.py``, ``cutile.py``,
``cutedsl.py``) supplies hooks; the driver owns the rest:

1. a ``Session`` of fake inputs with one symbol per dim, and fake outputs (from output types,
   a ``meta_impl`` or a region body);
2. record: run the user's launch function with the backend's ``intercept`` active, exactly one
   launch, which the backend's ``plan`` turns into roles of arguments, extras and grid;
3. compile and read back: the backend's ``build`` compiles the plan for one SM and reads the
   artifact back into the QDP ABI (``ptxabi.py``);
4. the ``CompiledKernel``, with the port types, guards and toolchain every backend records.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from ..common.identity import qualified_name
from ..declare.specs import KERNEL_DSLS
from ..errors import PluginError
from . import phases
from .base import CompiledKernel
from .record import Interceptor, one_launch, run_launch
from .session import Session, TensorType


@dataclass(frozen=True)
class Artifact:
    """What a backend's ``build`` hook hands back: the kernel in the QDP ABI and its launch."""

    entry: str
    code: bytes
    code_format: str  # "ptx" | "cubin"
    grid: tuple[str, str, str]
    block: tuple[int, int, int]
    shared_mem: int
    extras: tuple[str, ...]
    ptx_version: str | None
    meta: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Backend:
    """One kernel DSL's hooks."""

    name: str  # "triton" | "cutile" | "cutedsl"
    title: str  # how people spell it: "Triton", "cuTile", "CuTeDSL"
    # (session, where) -> interceptor that hands each launch to a sink instead of the GPU.
    intercept: Callable[[Session, str], Interceptor]
    # (launch, session, where) -> plan: what every argument is, the extras, the grid.
    plan: Callable[[Any, Session, str], Any]
    # (plan, sm, max_ptx, config, where, **options) -> Artifact.
    build: Callable[..., Artifact]
    # Versions that change the compiled bytes; part of the cache key.
    toolchain: Callable[[], dict]
    options: frozenset = frozenset()
    # (spec, config) -> context the launch function runs in: applies a config the backend takes
    # from the kernel itself (Triton's @triton.autotune configs) rather than from its keywords.
    tactic: Callable[[Any, dict], Any] | None = None


@functools.cache
def backend(name: str) -> Backend:
    """The hooks of backend ``name`` (its module ``tta.aot.<name>`` sets ``BACKEND``)."""
    if name not in KERNEL_DSLS:
        raise PluginError(f"unknown kernel backend {name!r} (expected one of {tuple(KERNEL_DSLS)})")
    try:
        return importlib.import_module(f"tta.aot.{name}.backend").BACKEND
    except ImportError as e:
        raise PluginError(f"the {name} AOT backend is not available: {e}") from e


def record(spec: Any, config: dict, session: Session) -> Any:
    """Run ``spec``'s launch function on the session's fakes and plan its one launch."""
    b = backend(spec.backend)
    where = f"tta.{b.name}({qualified_name(spec.launch_fn)})"
    with b.tactic(spec, config) if b.tactic else contextlib.nullcontext():
        captured = run_launch(spec.launch_fn, spec.launch_kwargs(config), session, b.intercept(session, where), where)
    return b.plan(one_launch(captured, where, config), session, where)


def session_for(input_types: Sequence[TensorType], output_types: Any, where: str) -> Session:
    """The fake inputs, and the outputs from their types or from a function of the inputs, that a
    launch is recorded against."""
    session = Session(input_types)
    if callable(output_types):
        session.outputs_from_fn(output_types, where)
    else:
        session.outputs_from_metas(output_types)
    return session


def compile_spec(
    spec: Any, config: dict, input_types: Sequence[TensorType], output_types: Any, sm: int, max_ptx: int | None, **options: Any
) -> CompiledKernel:
    """One (spec, config) compiled for ``sm`` in the QDP ABI. ``output_types``: the outputs'
    ``TensorType``s (dims are ints or expressions over input symbols), or a function of the
    fake inputs (a ``meta_impl`` or a region body). ``max_ptx``: newest PTX ISA the target
    driver JIT-compiles (Triton's spelling, 90 = 9.0), None for no cap."""
    b = backend(spec.backend)
    where = f"tta.{b.name}({qualified_name(spec.launch_fn)})"
    unknown = set(options) - b.options
    if unknown:
        raise PluginError(f"{where}: unknown {b.title} compile options {sorted(unknown)}")
    with phases.phase("session"):
        session = session_for(input_types, output_types, where)
    with phases.phase("record"):
        plan = record(spec, dict(config), session)
        types = session.port_types()
    frozen = tuple(sorted(config.items()))
    with phases.phase("read back"):  # the backend's build marks its DSL's own compile inside
        art = b.build(plan, sm, max_ptx, frozen, where, **options)
    return CompiledKernel(
        backend=b.name,
        entry=art.entry,
        code=art.code,
        code_format=art.code_format,
        grid=art.grid,
        block=art.block,
        shared_mem=int(art.shared_mem),
        extras=tuple(art.extras),
        input_dtypes=types["input_dtypes"],
        output_dtypes=types["output_dtypes"],
        output_shapes=types["output_shapes"],
        config=frozen,
        sm=sm,
        ptx_version=art.ptx_version,
        meta={
            "guards": types["guards"],
            "toolchain": b.toolchain(),
            **art.meta,
            **({"configs_from": f"@triton.autotune of {spec.autotuned}"} if spec.autotuned else {}),
        },
    )
