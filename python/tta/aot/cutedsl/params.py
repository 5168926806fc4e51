"""The host function's parameters as tta reads them: its signature with string annotations
evaluated, which are ``cutlass.Constexpr``, and one ``HostArg`` per parameter."""

from __future__ import annotations

import inspect
import typing
from dataclasses import dataclass
from typing import Any, Callable


def signature(fn: Callable) -> inspect.Signature:
    """With string annotations (``from __future__ import annotations``) evaluated, as the DSL does."""
    try:
        return inspect.signature(fn, eval_str=True)
    except Exception:
        return inspect.signature(fn)


def is_constexpr(annotation: Any) -> bool:
    from cutlass import Constexpr

    return annotation is Constexpr or typing.get_origin(annotation) is Constexpr


@dataclass
class HostArg:
    """One parameter of the host function."""

    name: str
    kind: str  # "pointer" | "int" | "constexpr" | "stream"
    value: Any  # compile-time argument
    port: tuple[str, int] | None = None  # pointer
    expr: str | None = None  # int: shape expression
