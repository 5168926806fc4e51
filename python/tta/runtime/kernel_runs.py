"""How a kernel runs for a check (``tta.verify.check``, ``first_use.py``): one ``Launch`` per
(config, size), run in one batch.

* On a GPU: the compiled artifact TensorRT would receive, loaded and launched as TensorRT's AOT
  plugin runtime does (``gpu/driver.py``: cuModuleLoadData, cuLaunchKernel with input
  pointers, int32 extras, output pointers).
* On a CPU: a Triton kernel under Triton's interpreter (``interpreter.py``), with every
  kernel parameter bound as the plugin binds it (the recorded plan: which port each pointer is,
  each int32 extra's shape expression, each compiled-in constant), on CPU tensors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import torch

from ..aot.base import symbol_values
from ..common import bridge as core

_MAX_MESSAGE = 1500


@dataclass
class Launch:
    """One kernel run on concrete inputs into ``outputs`` (allocated by the caller)."""

    inputs: list[torch.Tensor]
    outputs: list[torch.Tensor]
    compiled: Any = None  # CompiledKernel (GPU)
    kernel: Any = None  # triton JITFunction (interpreter)
    args: dict = field(default_factory=dict)  # interpreter: parameter name -> value
    grid: tuple = ()
    floats: tuple = ()  # run-time float parameters, bound as fp32 scalars (as the plugin binds them)


def triton_launch(plan: Any, inputs: Sequence[torch.Tensor], outputs: Sequence[torch.Tensor]) -> Launch:
    """The interpreter's launch of a recorded Triton plan: each kernel parameter gets what the
    TensorRT plugin gives the compiled kernel (``aot/triton.py``, ``Param`` roles)."""
    env = symbol_values([tuple(t.shape) for t in inputs])
    args: dict[str, Any] = {}
    for p in plan.params:
        if p.role == "input":
            args[p.name] = inputs[p.index]
        elif p.role == "output":
            args[p.name] = outputs[p.index]
        elif p.role == "extra":
            args[p.name] = core.eval_expr(p.value, env)
        else:  # compiled in: a constexpr, a constant int, a float bound as fp32
            args[p.name] = p.value
    grid = tuple(core.eval_expr(g, env) for g in plan.grid)
    return Launch(list(inputs), list(outputs), kernel=plan.kernel, args=args, grid=grid, floats=tuple(getattr(plan, "floats", {})))


# -- GPU -------------------------------------------------------------------------------------


def run_on_gpu(launches: Sequence[Launch]) -> list[str | None]:
    """Launch each compiled artifact; per launch None or what went wrong."""
    from ..runtime.launcher import Loaded

    loaded: dict[int, Any] = {}
    out: list[str | None] = []
    for launch in launches:
        k = launch.compiled
        try:
            if id(k) not in loaded:
                loaded[id(k)] = Loaded(k)
            run = loaded[id(k)]
            grid, extras, _ = run.plan(launch.inputs)
            run.launch(launch.inputs, launch.outputs, grid, extras)
            torch.cuda.synchronize()
            out.append(None)
        except Exception as e:
            out.append(error_text(e))
    return out


def error_text(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}".strip()
    return text if len(text) <= _MAX_MESSAGE else text[:_MAX_MESSAGE] + " ..."


# -- what both checks run a kernel against -----------------------------------------------------


def record_plan(spec: Any, config: dict, input_ports: Sequence[Any], plugin: Any, body: Any) -> Any:
    """The launch plan tta compiles from: the launch function run once on fake inputs with the
    types ``compile_kernels`` gives the kernel (``aot/driver.py``)."""
    from ..aot import driver
    from ..aot.compile import region_input_types
    from ..aot.session import Session

    session = Session(region_input_types(input_ports))
    session.outputs_from_fn(plugin.meta_impl or body, f"tta.{spec.backend}({spec.identity})")
    return driver.record(spec, dict(config), session)


def poisoned(shape: Sequence[int], dtype_name: str, device: Any) -> torch.Tensor:
    """An output buffer full of a value no kernel computes by accident (NaN, the smallest int),
    so elements a kernel never writes show as errors."""
    from ..common.dtypes import torch_dtype

    dtype = torch_dtype(dtype_name)
    fill = float("nan") if dtype.is_floating_point else (True if dtype == torch.bool else torch.iinfo(dtype).min)
    return torch.full(tuple(shape), fill, dtype=dtype, device=device)


def run_body(body: Any, args: Sequence[Any]) -> tuple:
    """The region body on ``args``, its outputs as a tuple. A body holding CPU constants (a model
    exported on the CPU) that cannot take CUDA inputs runs on CPU copies, its outputs moved back
    to the inputs' device."""
    try:
        return _as_tuple(body(*args))
    except RuntimeError:
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        if not tensors or tensors[0].device.type == "cpu":
            raise
        device = tensors[0].device
        outs = body(*[a.cpu() if isinstance(a, torch.Tensor) else a for a in args])
        return tuple(o.to(device) if isinstance(o, torch.Tensor) else o for o in _as_tuple(outs))


_NARROW = (torch.float16, torch.bfloat16)


def wide_refs(body: Any, inputs: Sequence[Any], refs: Sequence[torch.Tensor]) -> list | None:
    """The body's outputs computed from fp32 copies of its fp16/bf16 inputs, in the reference
    outputs' dtypes: what a kernel that keeps fp32 between ops computes. None when no input is
    fp16/bf16 or the body fails on fp32."""
    if not any(isinstance(t, torch.Tensor) and t.dtype in _NARROW for t in inputs):
        return None
    try:
        wide = [(t.float() if t.dtype in _NARROW else t.clone()) if isinstance(t, torch.Tensor) else t for t in inputs]
        return [o.to(r.dtype) for o, r in zip(run_body(body, wide), refs)]
    except Exception:  # noqa: BLE001 - no fp32 reference: the narrow one decides
        return None


def _as_tuple(x: Any) -> tuple:
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)
