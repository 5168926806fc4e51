"""What a kernel that does not compute its region got wrong, and what to write instead.

Both checks (``tta.verify.check`` before a compile, ``first_use.py`` on the eager path) compare a
kernel's outputs with the region body's and describe a mismatch here, in the user's terms: each
output by the name the user's code gives it, with its largest error; outputs written in another
order, with the ``outputs=`` to declare or the parameter order the launch function should take;
an output written in another layout (transposed, dims permuted), with the layout tta's buffer has.
"""

from __future__ import annotations

import inspect
import itertools
from dataclasses import dataclass, field
from typing import Any, Sequence

import torch

from .compare import close, max_error

_MAX_PERMUTED = 6  # outputs: 720 orders at most
_MAX_LAYOUT_RANK = 4  # dims: 24 layouts at most


@dataclass
class Mismatch:
    """How a kernel's outputs differ from the region body's (``find``)."""

    names: list[str]
    errors: dict[str, float] = field(default_factory=dict)  # output name -> max error
    failed: list[str] = field(default_factory=list)  # outputs off the reference
    shapes: list[str] = field(default_factory=list)  # "y has shape (4, 8), the body's (8, 4)"
    order: list[int] | None = None  # buffer i holds the body's output order[i]
    layouts: dict[str, tuple[int, ...]] = field(default_factory=dict)  # output -> the dims order it was written in

    @property
    def max_error(self) -> float:
        return max(self.errors.values(), default=0.0)


def find(outs: Sequence[torch.Tensor], refs: Sequence[torch.Tensor], names: Sequence[str], tolerances=None, wide=None) -> Mismatch | None:
    """None when every output is close to the body's (or, for kernels that keep fp32, to
    ``wide``: the body's outputs from fp32 copies of its inputs); else what differs."""
    names = list(names)
    ok = [close(o, r, tolerances) for o, r in zip(outs, refs)]
    if not all(ok) and wide:
        ok = [a or close(o, w, tolerances) for a, o, w in zip(ok, outs, wide)]
    if all(ok) and len(outs) == len(refs):
        return None
    m = Mismatch(names)
    m.errors = {n: (max_error(o, r) if o.shape == r.shape else float("inf")) for n, o, r in zip(names, outs, refs)}
    m.failed = [n for n, good in zip(names, ok) if not good] or list(names)  # no pairs: the counts differ
    m.shapes = [f"{n} has shape {tuple(o.shape)}, the body's {tuple(r.shape)}" for n, o, r in zip(names, outs, refs) if o.shape != r.shape]
    m.order = _order(outs, refs, tolerances)
    if m.order is None:
        for n, o, r in zip(names, outs, refs):
            if n in m.failed:
                dims = _layout(o, r, tolerances)
                if dims is not None:
                    m.layouts[n] = dims
    return m


def _order(outs, refs, tolerances) -> list[int] | None:
    n = len(outs)
    if n < 2 or n > _MAX_PERMUTED or len(refs) != n:
        return None
    matches = [[close(o, r, tolerances) for r in refs] for o in outs]
    for perm in itertools.permutations(range(n)):
        if list(perm) != list(range(n)) and all(matches[i][perm[i]] for i in range(n)):
            return list(perm)
    return None


def _layout(out: torch.Tensor, ref: torch.Tensor, tolerances) -> tuple[int, ...] | None:
    """The dims order ``p`` such that the kernel wrote ``ref.permute(p)`` densely into ``out``'s
    buffer (a transposed write), or None."""
    if out.numel() != ref.numel() or out.numel() < 2 or not 2 <= ref.dim() <= _MAX_LAYOUT_RANK:
        return None
    flat = out.reshape(-1)
    for p in itertools.permutations(range(ref.dim())):
        if list(p) == list(range(ref.dim())):
            continue
        if close(flat, ref.permute(p).contiguous().reshape(-1), tolerances):
            return tuple(p)
    return None


def fixes(m: Mismatch, *, params: Sequence[str] | None, launch: str | None, origin: str | None, source: str | None) -> list[str]:
    """What to write, one sentence each: ``params`` are the launch function's parameters the
    outputs go to, ``launch`` its name, ``origin`` what chose the region (``annotation`` for
    ``lower_as``), ``source`` the region's source line."""
    out = []
    if m.order is not None:
        out.append(_order_fix(m.order, m.names, params, launch, origin, source))
    for name, dims in m.layouts.items():
        out.append(_layout_fix(name, dims))
    return out


def _order_fix(order, names, params, launch, origin, source) -> str:
    n = len(names)
    holds = ", ".join(f"the buffer of {names[i]} holds {names[order[i]]}" for i in range(n) if order[i] != i)
    text = f"the launch function takes its outputs in another order: tta passes ({', '.join(names)})"
    text += f" to its parameters ({', '.join(params)}), and {holds}" if params else f", and {holds}"
    written = ", ".join(names[order[i]] for i in range(n))
    ways = []
    if origin == "annotation":
        at = f" at {source}" if source else ""
        ways.append(f"declare `outputs=lambda: ({written})` on the `tta.lower_as(...)`{at} (a decorated function: return ({written}))")
    if params:
        inverse = {j: i for i, j in enumerate(order)}
        taken = ", ".join(params[inverse[j]] for j in range(n))
        ways.append(f"make {launch or 'the launch function'} take its output parameters as ({taken})")
    if not ways:
        ways.append(f"have the launch function write ({', '.join(names)}) in this order")
    return text + ". Fix: " + "; or ".join(ways)


def _layout_fix(name: str, dims: tuple[int, ...]) -> str:
    return (
        f"output {name} holds the right values in another layout: the kernel wrote {name}.permute{dims} densely "
        f"(dims in the order {dims}), where tta's buffer is {name} itself, contiguous (row-major). Fix: index the "
        f"output with its row-major strides (the last dim fastest), or have the region return {name}.permute{dims}"
        " if that is the layout you mean"
    )


def describe(m: Mismatch) -> str:
    """Each off output with its largest error, and what is off about shapes."""
    parts = [f"{n} (max error {m.errors.get(n, float('nan')):.3g})" for n in m.failed]
    text = (
        "outputs off: " + ", ".join(parts)
        if len(parts) > 1
        else f"output {m.failed[0]!r} is off by up to {m.errors.get(m.failed[0], float('nan')):.3g}"
    )
    if m.shapes:
        text += "; " + "; ".join(m.shapes)
    return text


def sizes_text(env: dict[str, int], names: dict[str, str] | None = None) -> str:
    """``b=2, n=48``: symbol values under the names the user gave the dims (``Dim("b")``)."""
    names = names or {}
    return ", ".join(f"{names.get(k, k)}={v}" for k, v in env.items()) or "its static shapes"


def output_params(launch_fn: Any, n_in: int, n_out: int) -> list[str] | None:
    """The launch function's parameter names that receive the outputs (after the inputs)."""
    try:
        params = [
            p.name for p in inspect.signature(launch_fn).parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        return None
    return params[n_in : n_in + n_out] if len(params) >= n_in + n_out else None
