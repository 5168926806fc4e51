"""How close a kernel's output must be to the region body's, and how far off it is: the one
comparison both checks use (``tta.verify.check`` at compile time, ``first_use.py`` on the eager
path's first call)."""

from __future__ import annotations

import torch

# (atol, rtol) per output dtype: about one rounding of the dtype plus a kernel's own order of
# summation. Integer and bool outputs must be equal.
TOLERANCES = {
    "float64": (1e-10, 1e-10),
    "float32": (1e-4, 1e-4),
    "float16": (2e-3, 2e-3),
    "bfloat16": (1.6e-2, 1.6e-2),
}
_FP8_TOL = (0.125, 0.125)


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
    o, r = _together(out, ref)
    o, r = o.double(), r.double()
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
    o, r = _together(out, ref)
    if atol == 0 and rtol == 0:
        return bool(torch.equal(o, r))
    return bool(torch.isclose(o.double(), r.double(), rtol=rtol, atol=atol, equal_nan=True).all())


def _together(out: torch.Tensor, ref: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Both on one device, where they are (a GPU compares 16M elements in a millisecond; copying
    them to the CPU first takes a hundred)."""
    o, r = out.detach(), ref.detach()
    return (o, r) if o.device == r.device else (o.cpu(), r.cpu())
