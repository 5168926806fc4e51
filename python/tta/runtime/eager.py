"""Eager execution of a plugin with its own kernel (the ``tta::<op>`` eager impl, see ops.py).

On CUDA inputs, run the first kernel spec whose DSL is installed through its launch function,
exactly as the user wrote it (the DSL's own JIT and launcher). Anything else (CPU tensors, no
DSL, scalar inputs) returns None and the caller runs the region body instead.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import torch

from ..declare.specs import installed


def _output_shapes(plugin, inputs: Sequence[torch.Tensor], body: Callable | None) -> list[tuple[tuple[int, ...], torch.dtype]] | None:
    if plugin.meta_impl is not None:
        outs = plugin.meta_impl(*inputs)  # meta_impls return empty tensors: cheap on real inputs
    elif body is not None:
        from torch._subclasses.fake_tensor import FakeTensorMode

        with FakeTensorMode(allow_non_fake_inputs=True) as mode:
            outs = body(*[mode.from_tensor(t) for t in inputs])
    else:
        return None
    outs = outs if isinstance(outs, (list, tuple)) else (outs,)
    return [(tuple(int(d) for d in o.shape), o.dtype) for o in outs]


def launch(plugin, inputs: Sequence[Any], body: Callable | None = None) -> tuple[torch.Tensor, ...] | None:
    """Run the plugin's kernel on ``inputs``; None when it cannot run here (the caller falls
    back to the region body). Never runs on CPU tensors."""
    return run(plugin, inputs, body)[0]


def why_not(plugin, inputs: Sequence[Any]) -> str | None:
    """Why the plugin's kernel cannot run on ``inputs`` at all, or None when it may."""
    if not plugin.kernels:
        return "the plugin has no kernel"
    if not inputs or not all(isinstance(t, torch.Tensor) for t in inputs):
        return "launch functions take tensors only, and the op has integer inputs"
    devices = {t.device for t in inputs}
    if len(devices) != 1:
        return f"the inputs are on several devices ({', '.join(sorted(map(str, devices)))})"
    device = next(iter(devices))
    if device.type != "cuda":
        return f"the inputs are on {device.type}, the kernels run on CUDA"
    if not any(installed(s.backend) for s in plugin.kernels):
        backends = ", ".join(sorted({s.backend for s in plugin.kernels}))
        return f"no kernel DSL of the plugin is installed ({backends})"
    return None


def run(plugin, inputs: Sequence[Any], body: Callable | None = None) -> tuple[tuple[torch.Tensor, ...] | None, str | None]:
    """``(outputs, None)`` from the plugin's kernel, or ``(None, why)`` when it cannot run (the
    ``tta::<op>`` eager impl then runs the region body and records why)."""
    why = why_not(plugin, inputs)
    if why is not None:
        return None, why
    spec = installed_spec(plugin)
    shapes = _output_shapes(plugin, inputs, body)
    if shapes is None:
        return None, "the output shapes are unknown (no meta_impl and no region body)"
    device = inputs[0].device
    # Kernels read and write dense buffers (what TensorRT hands them).
    args = [t.contiguous() for t in inputs]
    outs = [torch.empty(shape, dtype=dtype, device=device) for shape, dtype in shapes]
    with torch.cuda.device(device):
        outs = launch_first_fitting(spec, args, outs)
    return (outs, None) if outs is not None else (None, f"every config of {spec.identity} refused these sizes")


def installed_spec(plugin):
    """The plugin's first kernel spec whose DSL is installed: the one its eager call runs."""
    return next((s for s in plugin.kernels if installed(s.backend)), None)


def launch_first_fitting(spec, args: Sequence[torch.Tensor], outs: Sequence[torch.Tensor]) -> tuple[torch.Tensor, ...] | None:
    """Run ``spec``'s first config whose launch code accepts these sizes; None when none does.

    A launch function refuses sizes by asserting on them (e.g. a row longer than BLOCK); under
    symbolic shapes those conditions are exactly the guards a compiled config carries, so this
    picks, per call, the config the guards allow (the Inductor path traces it symbolically).
    An autotuned kernel tunes itself, as in eager code: one call, no keywords.
    """
    for config in spec.config_dicts()[:1] if spec.autotuned else spec.config_dicts():
        try:
            spec.launch_fn(*args, *outs, **spec.launch_kwargs(config))
        except AssertionError:
            continue  # the next config may take these sizes
        return tuple(outs)
    return None
