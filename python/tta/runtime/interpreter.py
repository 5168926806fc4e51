"""Triton kernels run under Triton's interpreter on CPU tensors, for ``tta.verify.check``.

The launches of one check run in a few forked children: the interpreter patches
``triton.language`` while it runs (other threads of this process keep the real one), and a kernel
that reads out of bounds kills its child, not the caller. The outputs are in shared memory, so
the children's writes come back. Two things the interpreter does differently from the GPU are
set right while it runs: ``@triton.jit`` helpers a kernel calls are interpreted too, and bf16
``tl.dot`` operands are read as the numbers they stand for.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import threading
import time
from typing import Any, Sequence

import torch

from .kernel_runs import Launch, error_text

_in_process_lock = threading.Lock()


@contextlib.contextmanager
def _interpreting():
    """While active, a ``@triton.jit`` function called from an interpreted kernel is
    interpreted too (with ``TRITON_INTERPRET=1`` set at import, Triton would have made every
    one an InterpretedFunction; here they are ordinary JITFunctions)."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    wrapped: dict[int, Any] = {}
    patched: set[int] = set()  # the triton.language modules the current launch patched
    original = JITFunction.__call__

    def call(self, *args, **kwargs):
        f = wrapped.get(id(self))
        if f is None:
            f = wrapped[id(self)] = InterpretedFunction(self.fn)
        if _lang_modules(self.fn) <= patched:
            # The kernel's launch patched these modules already: skip the interpreter's
            # per-call re-patching (a fifth of the run time of a small kernel).
            return f.rewrite()(*args, **kwargs)
        return f(*args, **kwargs)

    from triton.runtime import interpreter

    builder = interpreter.InterpreterBuilder
    original_dot = builder.create_dot

    def create_dot(self, a, b, d, *rest):
        # The interpreter keeps bf16 as uint16 bits and multiplies those as integers; widen
        # them to the fp32 they stand for (exact), as the GPU's tensor cores read them.
        return original_dot(self, _widen_bf16(a), _widen_bf16(b), d, *rest)

    JITFunction.__call__ = call
    builder.create_dot = create_dot
    try:
        yield InterpretedFunction, patched
    finally:
        JITFunction.__call__ = original
        builder.create_dot = original_dot


def _widen_bf16(h):
    import numpy as np
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    if h.dtype != tl.bfloat16:
        return h
    return TensorHandle((h.data.astype(np.uint32) << 16).view(np.float32), tl.float32)


def _fp32_scalar(v: float):
    """A run-time float as the interpreter's fp32 scalar (what the compiled kernel gets)."""
    import numpy as np
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    return tl.tensor(TensorHandle(np.array([v], dtype=np.float32), tl.float32), tl.float32)


def _run_all(launches: Sequence[tuple[int, Launch]], report) -> None:
    with _interpreting() as (InterpretedFunction, patched):
        for i, launch in launches:
            patched.clear()
            patched.update(_lang_modules(launch.kernel.fn))
            try:
                args = {k: _fp32_scalar(v) if k in launch.floats else v for k, v in launch.args.items()}
                InterpretedFunction(launch.kernel.fn)[launch.grid](**args)
                report(i, None)
            except BaseException as e:  # noqa: BLE001 - whatever the kernel raised is the answer
                report(i, error_text(e))


def run_interpreted(launches: Sequence[Launch], timeout: float = 300.0, jobs: int | None = None) -> list[str | None]:
    """Every launch under Triton's interpreter, in forked children (up to ``jobs``, default
    ``TTA_CHECK_JOBS`` or the CPU count capped at 4; in this process where fork is unsafe: no
    ``os.fork``, or CUDA already initialised); per launch None or what went wrong."""
    if not launches:
        return []
    if not hasattr(os, "fork") or _cuda_initialized():
        results: list[str | None] = [None] * len(launches)
        with _in_process_lock:
            _run_all(list(enumerate(launches)), lambda i, err: results.__setitem__(i, err))
        return results
    for launch in launches:
        for t in launch.outputs:
            t.share_memory_()
    jobs = jobs or int(os.environ.get("TTA_CHECK_JOBS", 0)) or min(4, os.cpu_count() or 1)
    # The costliest launches first, dealt round-robin: the children finish close together.
    order = sorted(range(len(launches)), key=lambda i: -_cost(launches[i]))
    groups = [order[k::jobs] for k in range(min(jobs, len(launches)))]
    return _forked(launches, groups, timeout)


def _cost(launch: Launch) -> int:
    n = 1
    for g in launch.grid:
        n *= max(int(g), 1)
    return n * max((t.numel() for t in launch.inputs), default=1)


class _Child:
    def __init__(self, launches: Sequence[Launch], group: list[int]):
        self.group, self.done = group, set()
        r, w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the child: run, report each launch as one JSON line, never return
            try:
                os.close(r)
                torch.set_num_threads(1)

                def report(i, err):
                    os.write(w, (json.dumps({"i": i, "error": err}) + "\n").encode())

                _run_all([(i, launches[i]) for i in group], report)
            finally:
                os._exit(0)
        os.close(w)
        self.fd, self.buf, self.open = r, b"", True


def _forked(launches: Sequence[Launch], groups: list[list[int]], timeout: float) -> list[str | None]:
    results: list[str | None] = [None] * len(launches)
    children = [_Child(launches, g) for g in groups]
    deadline, timed_out = time.monotonic() + timeout, False
    try:
        while any(c.open for c in children):
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([c.fd for c in children if c.open], [], [], left)
            for c in children:
                if c.fd not in ready:
                    continue
                chunk = os.read(c.fd, 65536)
                if not chunk:
                    c.open = False
                    continue
                *lines, c.buf = (c.buf + chunk).split(b"\n")
                for line in lines:
                    msg = json.loads(line)
                    results[msg["i"]] = msg["error"]
                    c.done.add(msg["i"])
    finally:
        for c in children:
            if c.open:
                os.kill(c.pid, signal.SIGKILL)
            os.close(c.fd)
            _, c.status = os.waitpid(c.pid, 0)
    for c in children:
        missing = [i for i in c.group if i not in c.done]
        if not missing:
            continue
        if timed_out:
            why = f"the interpreter ran past {timeout:.0f}s"
        elif os.WIFSIGNALED(c.status):
            why = f"the interpreter process died of {signal.Signals(os.WTERMSIG(c.status)).name} (an access outside a buffer?)"
        else:
            why = f"the interpreter process exited with status {os.WEXITSTATUS(c.status)}"
        results[missing[0]] = why
        for i in missing[1:]:
            results[i] = f"not run: {why} in an earlier launch"
    return results


def _lang_modules(fn) -> set[int]:
    import triton.language as tl

    return {id(v) for v in fn.__globals__.values() if v is tl or v is tl.core}


def _cuda_initialized() -> bool:
    try:
        return bool(torch.cuda.is_initialized())
    except Exception:
        return False
