"""Source lines: which frame of a stack trace is the user's (``file:line``), for every error
and report that names where the user wrote something."""

from __future__ import annotations

import contextlib
import os
import re

import torch

_FRAME = re.compile(r'File "([^"]+)", line (\d+)')
TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
# The package root: every module of tta is library code, not the user's.
TTA_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
# A `with tta.lower_as(...)` entry passes through contextlib, and a traced torch.cond branch runs
# as fx-generated code (`<eval_with_key>`); the user's line is further out.
_CONTEXTLIB = contextlib.__file__


def first_user_frame(stack_trace: str | None, _cache: dict = {}) -> str | None:
    """Innermost frame of the stack trace that is not torch's or tta's code, as ``file:line``."""
    if not stack_trace:
        return None
    hit = _cache.get(stack_trace)
    if hit is None and stack_trace not in _cache:
        for m in reversed(list(_FRAME.finditer(stack_trace))):
            path = m.group(1)
            if not path.startswith((TORCH_DIR, TTA_DIR, _CONTEXTLIB, "<eval_with_key>")):
                hit = f"{path}:{m.group(2)}"
                break
        _cache[stack_trace] = hit
    return hit
