"""Run a launch function once on fake tensors with symbolic shapes and capture what it launches.

Every AOT backend needs the same thing from the user's plain launch code
(``launch_fn(*inputs, *outputs, **config)``): which kernel it starts, with which arguments,
on which grid. We run it under the session's ``FakeTensorMode`` (``session.py``), so every size
the launch code computes (``x.numel()``, ``triton.cdiv(n, BLOCK)``, ``x.stride(0)``) comes out as
an expression over the input symbols. The backend's interceptor replaces the DSL's launch call
while the function runs and hands each launch to the harness instead of a GPU.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, ContextManager

from ..common.identity import qualified_name
from ..errors import PluginError
from .session import Session

Interceptor = Callable[[Callable[[Any], None]], ContextManager]


def run_launch(
    launch_fn: Callable,
    config: dict,
    session: Session,
    interceptor: Interceptor,
    where: str | None = None,
) -> list[Any]:
    """Call ``launch_fn(*inputs, *outputs, **config)`` on the session's fakes with the backend's
    ``interceptor(sink)`` active; return what the interceptor passed to ``sink`` (one item per
    launch). The interceptor must not launch anything itself."""
    where = where or qualified_name(launch_fn)
    captured: list[Any] = []
    session.mark()
    try:
        with session.mode, interceptor(captured.append):
            launch_fn(*session.inputs, *session.outputs, **config)
    except PluginError:
        raise
    except Exception as e:
        text = str(e).split("\nException raised from")[0].strip().splitlines()
        first = text[0] if text else type(e).__name__
        tb_names = {f.name for f in _frames(e)}
        hint = ""
        if "data_ptr" in tb_names or "data_ptr" in first or "numel() on tensor with symbolic" in first:
            hint = " (launch functions run on fake tensors here: pass tensors to the kernel, never data_ptr() or tensor values)"
        elif "data-dependent" in first.lower() or "GuardOnDataDependent" in type(e).__name__:
            hint = " (launch code may use shapes, never tensor values)"
        raise PluginError(
            f"{where}: running the launch function with symbolic shapes (config {config}) failed: {type(e).__name__}: {first}{hint}"
        ) from e
    return captured


def _frames(e: BaseException):
    import traceback

    return traceback.extract_tb(e.__traceback__)


def one_launch(captured: list[Any], where: str, config: dict) -> Any:
    """A plugin tactic is one kernel launch; refuse zero or several."""
    if not captured:
        raise PluginError(f"{where}: the launch function launched no kernel (config {config})")
    if len(captured) > 1:
        raise PluginError(
            f"{where}: the launch function launched {len(captured)} kernels (config {config}); "
            "a TensorRT AOT plugin runs exactly one kernel: split it into several plugins"
        )
    return captured[0]


_patch_lock = threading.Lock()


@contextlib.contextmanager
def patched(owner: Any, attr: str, replacement_factory: Callable[[Any], Any], active: threading.local):
    """Replace ``owner.attr`` while any thread records, and route calls made by a recording
    thread to its sink (``active.sink``) while other threads keep the original behaviour.
    ``replacement_factory(original)`` builds the replacement."""
    with _patch_lock:
        count = getattr(owner, f"_tta_patch_count_{attr}", 0)
        if count == 0:
            original = getattr(owner, attr)
            setattr(owner, f"_tta_original_{attr}", original)
            setattr(owner, attr, replacement_factory(original))
        setattr(owner, f"_tta_patch_count_{attr}", count + 1)
    try:
        yield
    finally:
        with _patch_lock:
            count = getattr(owner, f"_tta_patch_count_{attr}") - 1
            setattr(owner, f"_tta_patch_count_{attr}", count)
            if count == 0:
                setattr(owner, attr, getattr(owner, f"_tta_original_{attr}"))
