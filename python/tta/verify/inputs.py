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
from ..runtime.compare import TOLERANCES, close, max_error, tolerance  # noqa: F401 - the check's names for them

# Names a port dim may call (the Rust expression grammar's functions), never symbols.
_FUNCS = {"FloorDiv", "CeilDiv", "Mod", "PythonMod", "Max", "Min"}
_NAME = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")


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
