"""What ``tta.rewrite`` does when a marked region cannot be lowered: by default an error that
lists every refused region with its reason and source line, so a model never runs without
the user's kernel unnoticed; ``on_refused="warn"`` or ``"keep"`` run such regions as ordinary
ops instead."""

from __future__ import annotations

import warnings

from ..errors import RegionRefusedError, RegionRefusedWarning

CHOICES = ("raise", "warn", "keep")


def check_choice(on_refused: str) -> None:
    if on_refused not in CHOICES:
        raise ValueError(f"on_refused must be one of {', '.join(map(repr, CHOICES))}, got {on_refused!r}")


def message(refused: list, total: int) -> str:
    lines = [f"tta refused {len(refused)} of {total} marked region(s); they would run as ordinary PyTorch ops, without your kernel:"]
    for r in refused:
        lines.append(f"  - region {r.id} (impl {r.impl}) at {r.source or 'unknown source'}: {r.reason}")
    lines.append('Fix these regions, or pass on_refused="warn" or "keep" to run them as ordinary ops.')
    return "\n".join(lines)


def handle(result, on_refused: str, stacklevel: int = 3) -> None:
    """Raise or warn about ``result``'s refused regions as ``on_refused`` says."""
    refused = result.refused
    if not refused or on_refused == "keep":
        return
    text = message(refused, len(result.regions))
    if on_refused == "warn":
        warnings.warn(text, RegionRefusedWarning, stacklevel=stacklevel)
        return
    raise RegionRefusedError(text, regions=refused, result=result)
