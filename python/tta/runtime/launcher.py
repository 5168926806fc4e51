"""Launch a ``CompiledKernel`` the way TensorRT's AOT plugin runtime does, with the CUDA driver
API only: ``cuModuleLoadData`` (PTX, which the driver JIT-compiles, or a CUBIN),
``cuFuncSetAttribute`` for more than 48 KB of dynamic shared memory, and ``cuLaunchKernel``
with the arguments in QDP order: input pointers, int32 extras, output pointers. Grid and
extras are the kernel's shape expressions evaluated for the actual input shapes.

cuda-python moved its driver module: ``cuda.bindings.driver`` (12.6+, the only one in 13.x) and
``cuda.cuda`` (older); both are tried.
"""

from __future__ import annotations

import ctypes
from typing import Sequence

import torch

from ..aot.base import CompiledKernel, symbol_values

_SMEM_DEFAULT_LIMIT = 48 * 1024


def cuda_driver():
    try:
        from cuda.bindings import driver
    except ImportError:  # cuda-python < 12.6
        from cuda import cuda as driver
    return driver


def _check(result, what: str):
    cu = cuda_driver()
    err, *rest = result if isinstance(result, tuple) else (result,)
    if err != cu.CUresult.CUDA_SUCCESS:
        _, name = cu.cuGetErrorName(err)
        raise RuntimeError(f"{what} failed: {name.decode() if isinstance(name, bytes) else name} ({int(err)})")
    return rest[0] if len(rest) == 1 else tuple(rest)


def driver_version() -> str:
    """``cuDriverGetVersion`` as "13.0"."""
    cu = cuda_driver()
    _check(cu.cuInit(0), "cuInit")
    v = _check(cu.cuDriverGetVersion(), "cuDriverGetVersion")
    return f"{v // 1000}.{(v % 1000) // 10}"


def evaluate(expr: str, env: dict[str, int]) -> int:
    from ..common import bridge as core

    return core.eval_expr(expr, env)


class Loaded:
    """One compiled kernel loaded into the current CUDA context."""

    def __init__(self, kernel: CompiledKernel):
        cu = cuda_driver()
        torch.cuda.init()
        torch.empty(1, device="cuda")  # make torch's primary context current on this thread
        _check(cu.cuInit(0), "cuInit")
        self.kernel = kernel
        # cuModuleLoadData reads PTX as a NUL-terminated string.
        self._image = kernel.code + b"\0" if kernel.code_format == "ptx" else kernel.code
        self.module = _check(cu.cuModuleLoadData(self._image), f"cuModuleLoadData({kernel.entry}, {kernel.code_format})")
        self.function = _check(cu.cuModuleGetFunction(self.module, kernel.entry.encode()), f"cuModuleGetFunction({kernel.entry})")
        if kernel.shared_mem > _SMEM_DEFAULT_LIMIT:
            # Past 48 KB the driver needs an explicit opt-in (Triton's launcher does the same).
            attr = cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            _check(cu.cuFuncSetAttribute(self.function, attr, kernel.shared_mem), "cuFuncSetAttribute")

    def plan(self, inputs: Sequence[torch.Tensor]) -> tuple[tuple[int, int, int], list[int], list[tuple[int, ...]]]:
        """Grid, extras and output shapes for these inputs."""
        env = symbol_values([tuple(t.shape) for t in inputs])
        grid = tuple(evaluate(g, env) for g in self.kernel.grid)
        extras = [evaluate(e, env) for e in self.kernel.extras]
        outs = [tuple(evaluate(d, env) for d in shape) for shape in self.kernel.output_shapes]
        for e, text in zip(extras, self.kernel.extras):
            if not -(2**31) <= e < 2**31:
                raise OverflowError(f"extra {text} = {e} does not fit the int32 TensorRT passes")
        return grid, extras, outs  # type: ignore[return-value]

    def prepare(
        self, inputs: Sequence[torch.Tensor], outputs: Sequence[torch.Tensor], grid, extras: Sequence[int], stream: int | None = None
    ):
        """A no-argument launcher with the argument block built once, as TensorRT's C++ runtime
        has it ready at enqueue time (so timing it measures the launch, not Python)."""
        cu = cuda_driver()
        # One C value per parameter, in QDP order; kernelParams is an array of pointers to them.
        values = [ctypes.c_void_p(t.data_ptr()) for t in inputs]
        values += [ctypes.c_int32(e) for e in extras]
        values += [ctypes.c_void_p(t.data_ptr()) for t in outputs]
        params = (ctypes.c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
        if stream is None:
            stream = torch.cuda.current_stream().cuda_stream
        k = self.kernel
        args = (self.function, *grid, *k.block, k.shared_mem, cu.CUstream(stream), ctypes.addressof(params), 0)
        launch, what = cu.cuLaunchKernel, f"cuLaunchKernel({k.entry})"

        def run():
            _keep = (values, params)  # noqa: F841 - the C values must outlive the launch call
            _check(launch(*args), what)

        return run

    def launch(
        self, inputs: Sequence[torch.Tensor], outputs: Sequence[torch.Tensor], grid, extras: Sequence[int], stream: int | None = None
    ) -> None:
        self.prepare(inputs, outputs, grid, extras, stream)()

    def __call__(self, inputs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        """Allocate the outputs and launch once."""
        grid, extras, shapes = self.plan(inputs)
        outs = [torch.empty(s, dtype=getattr(torch, d), device=inputs[0].device) for s, d in zip(shapes, self.kernel.output_dtypes)]
        self.launch(inputs, outs, grid, extras)
        return outs
