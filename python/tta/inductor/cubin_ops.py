"""One ``torch.library.custom_op`` per ``tta::<op>`` whose kernel is cuTile or CuTeDSL:
``tta_cubin::<op>``, same signature.

Its CUDA impl launches the kernel's compiled artifact, the very ``CompiledKernel`` the TensorRT
path ships (PTX or CUBIN, grid and extras as shape expressions), with the CUDA driver
(``tta.runtime.launcher.Loaded``: ``cuModuleLoadData`` + ``cuLaunchKernel``) on torch's current
stream, so eager code, ``torch.compile`` and CUDA graphs order it with their own kernels.
Inductor cannot see inside it (it calls the op as an extern kernel). The kernels are compiled
ahead of time, possibly on another machine (the DSLs need not be installed where this runs).

Per call: the first kernel (config order) whose input dtypes match and whose guards hold for
the sizes, remembered per (sizes, dtypes), as the TensorRT path picks a tactic per profile.
"""

from __future__ import annotations

import inspect
import threading
from typing import Any, Sequence

import torch

from ..aot.base import CompiledKernel, guards_hold, symbol_values
from ..common.dtypes import dtype_name, torch_dtype
from ..errors import PluginError

NAMESPACE = "tta_cubin"

_ops: dict[str, torch._ops.OpOverload] = {}
_lock = threading.Lock()
_MAX_REMEMBERED = 4096  # (sizes, dtypes) choices kept per op


def unavailable() -> str | None:
    """Why compiled kernels cannot be launched in this process (None when they can)."""
    if not torch.cuda.is_available():
        return "no CUDA device"
    try:
        from ..runtime.launcher import cuda_driver

        cuda_driver()
    except ImportError:
        return "cuda-python is not installed (it launches the compiled kernel)"
    return None


class Launcher:
    """Launch one op's compiled kernels: pick per (sizes, dtypes), load per device."""

    def __init__(self, op: str, kernels: Sequence[CompiledKernel], n_out: int):
        if not kernels:
            raise PluginError(f"tta_cubin::{op}: no compiled kernels")
        self.op, self.kernels, self.n_out = op, list(kernels), n_out
        self._choice: dict[tuple, int] = {}
        self._loaded: dict[tuple[int, int], Any] = {}

    def pick(self, inputs: Sequence[torch.Tensor]) -> int:
        shapes = tuple(tuple(int(d) for d in t.shape) for t in inputs)
        dtypes = tuple(dtype_name(t.dtype) for t in inputs)
        key = (shapes, dtypes)
        i = self._choice.get(key)
        if i is not None:
            return i
        env = symbol_values(shapes)
        for i, k in enumerate(self.kernels):
            if tuple(k.input_dtypes) == dtypes and guards_hold(k.meta.get("guards", ()), env):
                break
        else:
            have = sorted({"/".join(k.input_dtypes) for k in self.kernels})
            raise PluginError(
                f"tta_cubin::{self.op}: no compiled kernel takes inputs {list(dtypes)} of sizes {list(shapes)} "
                f"(compiled for {', '.join(have)}; or their guards fail)"
            )
        if len(self._choice) >= _MAX_REMEMBERED:
            self._choice.clear()
        self._choice[key] = i
        return i

    def _load(self, i: int, device: torch.device):
        key = (i, device.index)
        loaded = self._loaded.get(key)
        if loaded is None:
            from ..runtime.launcher import Loaded

            with torch.cuda.device(device):
                loaded = self._loaded[key] = Loaded(self.kernels[i])
        return loaded

    def __call__(self, *inputs: torch.Tensor):
        args = [t.contiguous() for t in inputs]  # the kernels read dense buffers, as TensorRT hands them
        device = args[0].device
        loaded = self._load(self.pick(args), device)
        grid, extras, shapes = loaded.plan(args)
        outs = [torch.empty(s, dtype=torch_dtype(d), device=device) for s, d in zip(shapes, loaded.kernel.output_dtypes)]
        if all(g > 0 for g in grid):  # an empty grid is no work (and an error to the driver)
            with torch.cuda.device(device):
                loaded.launch(args, outs, grid, extras, stream=torch.cuda.current_stream(device).cuda_stream)
        return outs[0] if self.n_out == 1 else tuple(outs)


def _signature(op: str, n_out: int) -> inspect.Signature:
    from .triton_ops import op_signature as triton_signature
    from .triton_ops import signature_inputs

    return triton_signature(signature_inputs(op), n_out)


def ensure_cubin_op(op: str, kernels: Sequence[CompiledKernel]) -> torch._ops.OpOverload:
    """``tta_cubin::<op>`` for ``tta::<op>`` launching ``kernels``, registered once per process
    (a later call with other kernels replaces them)."""
    from ..runtime import ops

    inputs, outputs, plugin = ops.signature_of(op)
    n_out = len(outputs)
    launcher = Launcher(op, kernels, n_out)
    with _lock:
        existing = _ops.get(op)
        if existing is not None:
            _launchers[op] = launcher
            return existing

        def impl(*args):
            return _launchers[op](*args)

        impl.__signature__ = _signature(op, n_out)
        impl.__name__ = op
        custom = torch.library.custom_op(f"{NAMESPACE}::{op}", impl, mutates_args=(), device_types="cuda")
        custom.register_fake(ops.make_fake(plugin, ops.body_of(op), n_out))
        _launchers[op] = launcher
        overload = getattr(getattr(torch.ops, NAMESPACE), op).default
        _ops[op] = overload
        return overload


_launchers: dict[str, Launcher] = {}


def launcher_of(op: str) -> Launcher | None:
    return _launchers.get(op)
