"""Triton's own tuning decorators, read ahead of time.

``@triton.autotune(configs=[...], key=[...])``: each ``triton.Config`` is one TensorRT tactic
(TensorRT times the tactics and keeps the fastest, which is what the autotuner does at run
time). A config becomes a tta config dict: its keyword values plus ``num_warps``,
``num_stages`` (and ``num_ctas``/``maxnreg`` when set). While recording a tactic, the
autotuner's ``run`` applies that config instead of benchmarking (``launch``); the launch
function itself gets no keyword arguments, as in eager code.

``@triton.heuristics``: Triton computes its values from the launch's arguments before the
kernel runs; while recording those are the fake tensors and symbolic sizes, so the values come
out of the recorded shapes. They must be compile-time constants (they are ``tl.constexpr``s);
a value that depends on a dynamic dim is refused where the kernel's arguments are planned.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

from ..errors import PluginError

_active = threading.local()

# ``_active.choice``: the config (dict) the autotuner applies while recording, USER when the
# spec's configs are the launch function's keywords, None when no tactic is being recorded.
USER = "user"


def _autotuner_type():
    try:
        from triton.runtime.autotuner import Autotuner
    except ImportError:
        return None
    return Autotuner


def config_dict(cfg: Any, kernel: str, where: str) -> dict[str, Any]:
    """One ``triton.Config`` as a tta config; refused when it needs what a tactic cannot do."""
    if getattr(cfg, "pre_hook", None) is not None:
        raise PluginError(
            f"{where}: a @triton.autotune config of kernel {kernel} ({cfg}) has a pre_hook, Python code run before "
            "each launch; a TensorRT tactic launches the compiled kernel alone, so the hook would never run. List "
            "the configs without it in tta.triton(launch_fn, configs=[...])"
        )
    if getattr(cfg, "ir_override", None) is not None:
        raise PluginError(
            f"{where}: a @triton.autotune config of kernel {kernel} ({cfg}) overrides the IR, which tta cannot compile ahead of time"
        )
    out = dict(cfg.kwargs)
    out["num_warps"] = cfg.num_warps
    out["num_stages"] = cfg.num_stages
    if getattr(cfg, "num_ctas", 1) not in (None, 1):
        out["num_ctas"] = cfg.num_ctas
    if getattr(cfg, "maxnreg", None) is not None:
        out["maxnreg"] = cfg.maxnreg
    return out


def autotune_configs(launch_fn: Callable, where: str) -> tuple[str, list[dict[str, Any]]] | None:
    """(kernel name, configs) of the one ``@triton.autotune`` kernel ``launch_fn`` reaches, or
    None when it reaches none."""
    from ..common.identity import reachable_objects

    Autotuner = _autotuner_type()
    if Autotuner is None:
        return None
    tuners = reachable_objects(launch_fn, Autotuner)
    if not tuners:
        return None
    names = [_name(t) for t in tuners]
    if len(tuners) > 1:
        raise PluginError(
            f"{where}: the launch function reaches several @triton.autotune kernels ({', '.join(names)}); a plugin "
            "runs one kernel: list its configs in tta.triton(launch_fn, configs=[...])"
        )
    configs = [config_dict(c, names[0], where) for c in tuners[0].configs]
    seen = []
    for c in configs:
        if c in seen:
            raise PluginError(f"{where}: @triton.autotune of kernel {names[0]} lists config {c} twice")
        seen.append(c)
    return names[0], configs


def _name(tuner: Any) -> str:
    base = getattr(tuner, "base_fn", None) or getattr(tuner, "fn", None)
    return getattr(base, "__qualname__", None) or getattr(base, "__name__", repr(tuner))


class tactic:
    """While active (this thread), a recorded ``@triton.autotune`` launch applies ``choice``."""

    def __init__(self, choice: Any):
        self.choice = choice

    def __enter__(self):
        self.prev = getattr(_active, "choice", None)
        _active.choice = self.choice

    def __exit__(self, *exc):
        _active.choice = self.prev


def run_autotuned(tuner: Any, args: tuple, kwargs: dict, where: str) -> Any:
    """What a recorded ``Autotuner.run`` does: launch the inner kernel with the tactic's config."""
    choice = getattr(_active, "choice", None)
    name = _name(tuner)
    if choice == USER:
        # The user listed configs: the launch function passes the tuned values itself.
        return tuner.fn.run(*args, **kwargs)
    if not isinstance(choice, dict):
        raise PluginError(
            f"{where}: kernel {name} is wrapped in @triton.autotune, but tta did not find it among the names the "
            "launch function uses, so it has no configs for it: list them in tta.triton(launch_fn, configs=[...])"
        )
    clash = sorted(set(choice) & set(kwargs))
    if clash:
        raise PluginError(f"{where}: the launch passes {clash} to kernel {name}, which its @triton.autotune configs set")
    return tuner.fn.run(*args, **kwargs, **choice)
