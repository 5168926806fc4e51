"""What ``tta.verify.check`` runs a region on: sizes inside the export's ranges, random inputs of the
ports' dtypes, and how close an output must be to the region body's.

Sizes are small on purpose (the check runs inside every ``tta.compile``, on a CPU under Triton's
interpreter, whose cost grows with the grid): size set ``k`` gives the ``i``-th symbol of the
region the value ``lo + k + (k + 1) * i`` clamped into its range, so different dims get different
values (a kernel that mixes two dims up is caught) and the second set is not a multiple of the
first.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Sequence

import torch

from ..aot.compile import export_ranges
from ..common import bridge as core
from ..common.dtypes import torch_dtype

# Names a port dim may call (the Rust expression grammar's functions), never symbols.
_FUNCS = {"FloorDiv", "CeilDiv", "Mod", "PythonMod", "Max", "Min"}
_NAME = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")

# (atol, rtol) per output dtype: about one rounding of the dtype plus a kernel's own order of
# summation. Integer and bool outputs must be equal.
TOLERANCES = {
    "float64": (1e-10, 1e-10),
    "float32": (1e-4, 1e-4),
    "float16": (2e-3, 2e-3),
    "bfloat16": (1.6e-2, 1.6e-2),
}
_FP8_TOL = (0.125, 0.125)


def _finite(v: Any) -> int | None:
    try:
        x = int(v)
    except Exception:  # sympy's oo and torch's int_oo: no bound
        return None
    return x if abs(x) < 2**62 else None


def symbol_ranges(program: Any) -> dict[str, tuple[int, int | None]]:
    """``{"s77": (1, 512)}``: each size symbol's range, from an ExportedProgram's
    ``range_constraints`` (what the user declared) over the shape environment of its fake
    tensors (what export proved; a GraphModule has only that). ``None``: no upper bound."""
    out: dict[str, tuple[int, int | None]] = {}
    graph = getattr(program, "graph", None)
    env = None
    for n in getattr(graph, "nodes", ()):
        v = n.meta.get("val")
        dims = v.shape if isinstance(v, torch.Tensor) else (v,) if isinstance(v, torch.SymInt) else ()
        sym = next((d for d in dims if isinstance(d, torch.SymInt)), None)
        if sym is not None:
            env = sym.node.shape_env
            break
    for sym, vr in (getattr(env, "var_to_range", None) or {}).items():
        out[str(sym)] = (_finite(vr.lower) or 0, _finite(vr.upper))
    out.update(export_ranges(program))  # the ranges compile_kernels bounds the kernels' dims with
    return out


def dim_symbols(ports: Iterable[Any]) -> list[str]:
    """The size symbols the tensor ports' dims mention, in order of first appearance."""
    seen: dict[str, None] = {}
    for p in ports:
        for d in p.shape:
            if isinstance(d, str):
                for name in _NAME.findall(d):
                    if name not in _FUNCS:
                        seen.setdefault(name)
    return list(seen)


def size_sets(ports: Sequence[Any], ranges: dict[str, tuple[int, int | None]], n: int = 2) -> list[dict[str, int]]:
    """``n`` assignments of the ports' symbols (fewer when the ranges leave fewer distinct ones;
    one, empty, when every dim is static)."""
    symbols = dim_symbols(ports)
    out: list[dict[str, int]] = []
    for k in range(max(n, 1) * 3):  # a few more tries when clamping makes two sets equal
        env = {}
        for i, s in enumerate(symbols):
            lo, hi = ranges.get(s, (2, None))
            lo = max(lo, 1)
            v = lo + k + (k + 1) * i
            env[s] = min(v, hi) if hi is not None else v
        if env not in out:
            out.append(env)
        if len(out) == n or not symbols:
            break
    return out


def shapes_at(ports: Sequence[Any], env: dict[str, int]) -> list[tuple[int, ...]]:
    return [tuple(d if isinstance(d, int) else core.eval_expr(d, env) for d in p.shape) for p in ports]


def random_inputs(ports: Sequence[Any], shapes: Sequence[tuple[int, ...]], seed: int, device: str) -> list[torch.Tensor]:
    """Dense random tensors: normal floats, small non-negative integers, random bools."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    out = []
    for p, shape in zip(ports, shapes):
        dtype = torch_dtype(p.dtype)
        if dtype == torch.bool:
            t = torch.randint(0, 2, shape, generator=g).bool()
        elif dtype.is_floating_point:
            t = torch.randn(shape, generator=g, dtype=torch.float32).to(dtype)
        elif dtype.is_complex:
            t = torch.randn(shape, generator=g, dtype=dtype)
        else:
            t = torch.randint(0, 4, shape, generator=g).to(dtype)
        out.append(t.to(device))
    return out


def tolerance(dtype: torch.dtype, overrides: dict | None = None) -> tuple[float, float]:
    name = str(dtype).removeprefix("torch.")
    if overrides and name in overrides:
        return tuple(overrides[name])  # type: ignore[return-value]
    if not dtype.is_floating_point and not dtype.is_complex:
        return (0.0, 0.0)
    return TOLERANCES.get(name, _FP8_TOL)


def max_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    """The largest absolute difference (inf where only one side is NaN or inf)."""
    if out.numel() == 0:
        return 0.0
    o, r = out.detach().cpu().double(), ref.detach().cpu().double()
    same = (o == r) | (torch.isnan(o) & torch.isnan(r))
    err = torch.where(same, torch.zeros_like(o), (o - r).abs())
    err = torch.nan_to_num(err, nan=float("inf"))
    return float(err.max())


def close(out: torch.Tensor, ref: torch.Tensor, overrides: dict | None = None) -> bool:
    """Whether ``out`` has ``ref``'s shape and dtype and every element is within
    ``atol + rtol * |ref|`` (NaN where the reference has NaN)."""
    if out.shape != ref.shape or out.dtype != ref.dtype:
        return False
    atol, rtol = tolerance(ref.dtype, overrides)
    o, r = out.detach().cpu(), ref.detach().cpu()
    if atol == 0 and rtol == 0:
        return bool(torch.equal(o, r))
    return bool(torch.isclose(o.double(), r.double(), rtol=rtol, atol=atol, equal_nan=True).all())
