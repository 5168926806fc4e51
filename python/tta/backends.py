"""``tta.compile``: one entry point, one return convention (the compiled module, with
``tta_report``), several backends. TensorRT (the default) is imported only when chosen."""

from __future__ import annotations

from typing import Any, Sequence

from .errors import PluginError

BACKENDS = ("tensorrt", "inductor")


def compile(  # noqa: A001 - the public name is tta.compile
    model: Any,
    example_inputs: Sequence[Any],
    dynamic_shapes: Any = None,
    *,
    backend: str = "tensorrt",
    **options: Any,
):
    """Export ``model``, outline its regions and compile it with ``backend``:

    * ``"tensorrt"``: ``tta.trt.compile.compile`` (Torch-TensorRT; each region a TensorRT AOT
      plugin). ``options``: ``selectors``, ``sm``, ``max_ptx``, ``strict`` and Torch-TensorRT
      settings.
    * ``"inductor"``: ``tta.inductor.compile.compile_inductor`` (``torch.compile``; each Triton
      plugin a ``triton_op`` Inductor embeds). ``options``: ``selectors``, ``strict`` and
      ``torch.compile`` keywords.

    Returns the compiled module; its ``tta_report`` says, per region, what runs it.
    """
    if backend == "tensorrt":
        from .common.required import require

        require(
            ("torch_tensorrt", "tensorrt", "tensorrt.plugin"),
            "tta.compile(backend='tensorrt')",
            "Without TensorRT, tta.compile(..., backend='inductor') runs the same regions through torch.compile.",
        )
        from .trt.compile import compile as compile_trt

        return compile_trt(model, example_inputs, dynamic_shapes, **options)
    if backend == "inductor":
        from .inductor.compile import compile_inductor

        return compile_inductor(model, example_inputs, dynamic_shapes, **options)
    raise PluginError(f"tta.compile: unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
