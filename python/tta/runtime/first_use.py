"""The eager path checks the kernel on first use: no silently wrong result on any path.

The first call of a ``tta::<op>`` with a new signature (device, dtypes, ranks, which dims are 1)
also runs the region body on copies of the inputs, taken before the kernel ran, and compares
every output, and every input the region writes; a mismatch raises ``KernelCheckError`` naming
the region, its source line, each output's error and the fix (``mismatch.py``). A passing
signature is remembered, so later calls pay one lookup. A failing one is checked, and raises,
on every call.

On CUDA the kernel is the call's own (the launch function as the user wrote it): checked by
default. On a CPU the call runs the region body, so there is nothing to check unless asked;
then the first Triton config whose conditions hold runs under Triton's interpreter on copies,
as ``tta.check_kernels(device="cpu")`` runs it. The switch: ``tta.rewrite(...,
check_kernels=True/False)``, else ``TTA_CHECK_KERNELS=1/0``, else on CUDA only. An op is shared
by every rewrite that outlines a region of that plugin and signature; the latest rewrite's
switch is the op's.
"""

from __future__ import annotations

import contextlib
import os
import threading
import warnings
from dataclasses import dataclass, field
from typing import Any, Sequence

import torch
from torch._subclasses.fake_tensor import FakeTensor

from ..errors import KernelCheckError, KernelCheckWarning
from . import mismatch
from .eager import installed_spec
from .kernel_runs import error_text, poisoned, record_plan, run_body, wide_refs

_OFF = ("0", "false", "no", "off")
_MAX_SEEN = 4096


@dataclass
class OpInfo:
    """What the messages of one op need from the rewrite: the regions it replaced (id, source
    line, what chose it), its outputs and dims by the user's names, and the switch."""

    regions: list[tuple[str, str | None, str | None]] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    dims: dict[str, str] = field(default_factory=dict)  # export symbol -> the user's Dim name
    check: bool | None = None
    passed: set = field(default_factory=set)  # signatures checked and passing
    seen: set = field(default_factory=set)  # exact (shape, dtype, device)s of passing signatures
    plans: dict = field(default_factory=dict)  # config index -> recorded plan (CPU)
    warned: bool = False


_infos: dict[str, OpInfo] = {}
_lock = threading.Lock()


def describe(op: str, region: str, source: str | None, origin: str | None, outputs: Sequence[str], dims: dict, check: bool | None) -> None:
    """Record a region the rewrite replaced with ``op`` (called once per outlined region)."""
    with _lock:
        info = _infos.setdefault(op, OpInfo())
        if all(r[0] != region for r in info.regions):
            info.regions.append((region, source, origin))
        if not info.outputs:
            info.outputs = list(outputs)
        info.dims.update(dims)
        if info.check != check:
            info.check, info.passed, info.seen = check, set(), set()


def info(op: str) -> OpInfo | None:
    return _infos.get(op)


def output_names(op: str, ports: Sequence[Any]) -> list[str]:
    """The op's outputs by the names the user's code gives them (the node names where none)."""
    known = _infos.get(op)
    if known is not None and len(known.outputs) == len(ports):
        return list(known.outputs)
    return [p.name for p in ports]


def enabled(check: bool | None, on_cuda: bool) -> bool:
    if check is not None:
        return check
    env = os.environ.get("TTA_CHECK_KERNELS")
    if env is not None and env.strip():
        return env.strip().lower() not in _OFF
    return on_cuda


def signature(inputs: Sequence[Any]) -> tuple:
    return tuple(
        (t.device.type, t.dtype, tuple(d == 1 for d in t.shape)) if isinstance(t, torch.Tensor) else (type(t).__name__,) for t in inputs
    )


def wanted(op: str, inputs: Sequence[Any]) -> tuple | None:
    """The signature to check this call under, or None when the call is not checked. A call
    whose exact shapes passed before costs one lookup: this runs on every eager call."""
    known = _infos.get(op)
    exact = tuple((t.shape, t.dtype, t.device) if isinstance(t, torch.Tensor) else type(t) for t in inputs)
    if known is not None and exact in known.seen:
        return None
    tensors = [t for t in inputs if isinstance(t, torch.Tensor)]
    on_cuda = any(t.device.type == "cuda" for t in tensors)
    if not enabled(known.check if known is not None else None, on_cuda):
        return None
    if any(isinstance(t, FakeTensor) or t.device.type == "meta" for t in tensors):
        return None  # no values to compare
    if on_cuda and torch.cuda.is_available() and torch.cuda.is_current_stream_capturing():
        return None  # a CUDA graph being captured: no host syncs, no extra launches
    sig = signature(inputs)
    if known is not None and sig in known.passed:
        with _lock:
            if len(known.seen) >= _MAX_SEEN:
                known.seen.clear()  # every size of a dynamic dim: keep the fast path bounded
            known.seen.add(exact)
        return None
    return sig


def copies(inputs: Sequence[Any]) -> list[Any]:
    return [t.detach().clone() if isinstance(t, torch.Tensor) else t for t in inputs]


def check(op: str, sig: tuple, ports: tuple, plugin: Any, body: Any, before: list, inputs: Sequence[Any], outs: tuple, ran: bool) -> None:
    """Compare the call's kernel with the region body on ``before`` (copies of the inputs taken
    before the call). ``ran``: the kernel produced ``outs`` and wrote ``inputs`` (CUDA); else
    ``outs`` and ``inputs`` are the region body's and the kernel runs under the interpreter
    here, on copies (CPU). A signature the check cannot judge is settled too, with a warning,
    so its later calls copy nothing."""
    known = _infos.setdefault(op, OpInfo())
    try:
        found, label = _compare_call(op, known, ports, plugin, body, before, inputs, outs, ran)
    except Exception as e:  # noqa: BLE001 - the user's call worked; say why it is unchecked
        _unchecked(op, known, f"the check itself failed: {error_text(e)}")
        found = None
    if found is None:
        with _lock:
            known.passed.add(sig)
        return
    raise _error(op, known, plugin, ports[0], ports[1], before, found, label)


def _compare_call(op, known, ports, plugin, body, before, inputs, outs, ran) -> tuple:
    in_ports, out_ports = ports
    on_cuda = any(isinstance(t, torch.Tensor) and t.device.type == "cuda" for t in inputs)
    if not ran and on_cuda:
        return None, None  # the body ran instead of the kernel: EagerFallbackWarning says so
    if _draws_random(body):
        _unchecked(op, known, "the region draws random numbers (the kernel's and the body's cannot match)")
        return None, None
    written = [i for i, p in enumerate(in_ports) if p.is_tensor and p.mutated]
    with torch.no_grad(), _no_autocast(before):
        if ran:  # the kernel's side is the call's own; the body runs here
            kernel_outs, kernel_ins, label = list(outs), list(inputs), "the launch function"
            body_ins = copies(before) if written else before  # `before` stays as it was
            try:
                body_outs = list(run_body(body, body_ins))
            except Exception as e:  # noqa: BLE001 - the user's call worked; say why it is unchecked
                _unchecked(op, known, f"the region body failed on the call's inputs: {error_text(e)}")
                return None, None
        else:  # the body's side is the call's own; the kernel runs here
            run = _interpreted(op, known, plugin, body, in_ports, before)
            if run is None:
                return None, None
            kernel_outs, kernel_ins, label = run
            body_outs, body_ins = list(outs), list(inputs)
        got = kernel_outs + [kernel_ins[i] for i in written]
        refs = body_outs + [body_ins[i] for i in written]
        names = output_names(op, out_ports) + [f"{in_ports[i].name} (written in place)" for i in written]
        found = mismatch.find(got, refs, names)
        if found is not None and not written:
            # Other right answers: a kernel that keeps fp32 where the region rounds to fp16/bf16
            # between ops, a Triton tl.dot on fp32 that uses TF32 (its default) where torch's
            # matmul does not.
            for alt in (wide_refs(body, before, refs), _tf32_refs(body, before, refs, on_cuda)):
                if found is not None and alt:
                    found = mismatch.find(got, refs, names, wide=alt)
    return found, label


_RANDOM = ("rand", "bernoulli", "dropout", "normal", "uniform", "multinomial", "exponential", "poisson")


def _draws_random(body: Any) -> bool:
    graph = getattr(body, "graph", None)
    return any(n.op == "call_function" and any(w in str(n.target) for w in _RANDOM) for n in getattr(graph, "nodes", ()))


def _no_autocast(inputs):
    """The body as the op's kernel sees it: the op has no autocast kernel, so its inputs come
    in their own dtypes; the body must not be cast again inside the check."""
    device = next((t.device.type for t in inputs if isinstance(t, torch.Tensor)), "cpu")
    try:
        return torch.autocast(device_type=device, enabled=False)
    except Exception:  # noqa: BLE001 - a device without autocast
        return contextlib.nullcontext()


def _tf32_refs(body, before, refs, on_cuda: bool) -> list | None:
    if not on_cuda or not any(r.dtype == torch.float32 for r in refs if isinstance(r, torch.Tensor)):
        return None
    matmul, cudnn = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
        return list(run_body(body, before))
    except Exception:  # noqa: BLE001 - no TF32 reference: the fp32 one decides
        return None
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = matmul, cudnn


def _unchecked(op: str, known: OpInfo, why: str) -> None:
    if not known.warned:
        known.warned = True
        warnings.warn(f"tta::{op} ({_where(op, known)}) was not checked on first use: {why}", KernelCheckWarning, stacklevel=5)


def _interpreted(op, known, plugin, body, in_ports, before) -> tuple | None:
    """The first Triton config whose conditions hold, run under the interpreter on copies:
    (its outputs, the inputs after it ran, what ran); None when no kernel can run here."""
    from ..aot.base import guards_hold, symbol_values
    from ..common import bridge as core
    from ..declare.specs import installed
    from . import interpreter
    from .kernel_runs import triton_launch

    spec = next((s for s in plugin.kernels if s.backend == "triton"), None)
    why = None
    if spec is None:
        why = f"its kernels ({', '.join(sorted({s.backend for s in plugin.kernels}))}) have no CPU interpreter; run it on a GPU"
    elif not installed("triton"):
        why = "Triton is not installed"
    elif not all(isinstance(t, torch.Tensor) for t in before):
        why = "the op also reads integers"
    if why is None:
        args = [t.contiguous().clone() for t in before]
        values = symbol_values([tuple(t.shape) for t in args])
        for index, cfg in enumerate(spec.config_dicts()):
            try:
                plan = known.plans.get(index) or record_plan(spec, cfg, in_ports, plugin, body)
            except Exception as e:  # noqa: BLE001 - a launch tta cannot record is named, not raised
                why = f"recording {spec.identity} failed: {error_text(e)}"
                break
            known.plans[index] = plan
            if not guards_hold(plan.guards, values):
                continue
            outs = [poisoned(tuple(core.eval_expr(d, values) for d in s), d, "cpu") for s, d in zip(plan.output_shapes, plan.output_dtypes)]
            (err,) = interpreter.run_interpreted([triton_launch(plan, args, outs)])
            if err is not None:
                why = f"{spec.identity} failed under the interpreter: {err}"
                break
            config = ",".join(f"{k}={v}" for k, v in cfg.items())
            return outs, args, f"{spec.identity} [{config}] under Triton's interpreter"
        else:
            why = why or "no config's conditions hold at these sizes"
    _unchecked(op, known, why)
    return None


def _where(op: str, known: OpInfo) -> str:
    if not known.regions:
        return f"tta::{op}"
    rid, source, _ = known.regions[0]
    more = f" and {len(known.regions) - 1} more region(s) of this op" if len(known.regions) > 1 else ""
    return f"region {rid} ({source or 'source unknown'}){more}"


def _error(op, known, plugin, in_ports, out_ports, before, found, label) -> KernelCheckError:
    spec = installed_spec(plugin) or (plugin.kernels[0] if plugin.kernels else None)
    params = mismatch.output_params(spec.launch_fn, len(in_ports), len(out_ports)) if spec is not None else None
    origin = known.regions[0][2] if known.regions else None
    source = known.regions[0][1] if known.regions else None
    env = _sizes(in_ports, before)
    at = mismatch.sizes_text(env, known.dims)
    text = (
        f"tta: the kernel of {_where(op, known)} does not compute what the region computes, "
        f"on the first eager call at {at} ({label}): {mismatch.describe(found)}"
    )
    for fix in mismatch.fixes(found, params=params, launch=spec.identity if spec else None, origin=origin, source=source):
        text += f". {fix[0].upper()}{fix[1:]}"
    text += ". To skip this check: tta.rewrite(..., check_kernels=False) or TTA_CHECK_KERNELS=0"
    worst = max(found.failed, key=lambda k: found.errors.get(k, 0.0)) if found.failed else None
    return KernelCheckError(
        text,
        region=known.regions[0][0] if known.regions else None,
        source=source,
        config=None,
        output=worst,
        max_error=found.max_error,
    )


def _sizes(in_ports, inputs) -> dict[str, int]:
    """Each symbol a port's dim is, with its value in this call's inputs."""
    env: dict[str, int] = {}
    for p, t in zip(in_ports, inputs):
        if not p.is_tensor or not isinstance(t, torch.Tensor):
            continue
        for d, v in zip(p.shape, t.shape):
            if isinstance(d, str) and d.isidentifier():
                env.setdefault(d, int(v))
    return env


def reset() -> None:
    """Forget every passing signature (tests)."""
    with _lock:
        for known in _infos.values():
            known.passed.clear()
            known.seen.clear()
            known.warned = False
