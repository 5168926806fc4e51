"""The project's own example kernels: each module has a Triton kernel, its launch function
(``launch(*inputs, *outputs, **config)``), ``CONFIGS``, a torch ``reference``, ``meta`` (fake
outputs), ``make_inputs(shape, dtype, device)`` and ``TEST_SHAPES`` (sizes that share one
compiled kernel).

Every module in this package that sets ``BACKEND`` (``"triton"``, ``"cutile"``, ``"cutedsl"``)
and ``LAUNCH`` (its launch function) is an example; ``examples()`` lists them as ``Example``
records, skipping modules whose DSL is not installed (ImportError). Optional: ``DTYPES``,
``TOL`` (dtype name -> (atol, rtol)), ``NAME``, ``REQUIRES`` (modules the launch function
imports: a library's kernels), ``STATIC_DIMS`` (dim -> size fixed in the signature);
``CONFIGS = None`` takes the configs from the kernel's ``@triton.autotune``.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from dataclasses import dataclass
from typing import Callable

import torch

DTYPES = (torch.float32, torch.float16, torch.bfloat16)


@dataclass(frozen=True)
class Example:
    name: str
    backend: str
    launch_fn: Callable
    configs: tuple
    reference: Callable
    meta: Callable
    make_inputs: Callable
    test_shapes: tuple
    dtypes: tuple = DTYPES
    tol: dict | None = None  # dtype name -> (atol, rtol); defaults in tolerance()
    requires: tuple = ()  # modules the launch function imports (compiling needs them, the GPU run does not)
    static_dims: dict | None = None  # dim index -> size the plugin's signature fixes (else dynamic)
    autotuned: bool = False  # configs come from the kernel's @triton.autotune

    def spec(self):
        import tta.declare.specs as specs

        return getattr(specs, self.backend)(self.launch_fn, configs=None if self.autotuned else list(self.configs))

    def buildable(self) -> bool:
        """Whether what the launch function imports is installed here."""
        return all(importlib.util.find_spec(m) is not None for m in self.requires)

    def plugin(self):
        import tta

        return tta.custom_plugin(kernel=[self.spec()], meta_impl=self.meta, name=self.name)

    def input_metas(self, dtype):
        """Tensor metas of the inputs with every dim dynamic."""
        from tta.aot.session import TensorType

        ins = self.make_inputs(self.test_shapes[0], dtype, "meta")
        fixed = self.static_dims or {}
        return [TensorType.make(t.dtype, [fixed.get(j - t.dim(), fixed.get(j)) for j in range(t.dim())]) for t in ins]

    def tolerance(self, dtype) -> tuple[float, float]:
        """(atol, rtol): about one rounding of the output dtype (kernels compute in fp32)."""
        name = str(dtype).removeprefix("torch.")
        if self.tol and name in self.tol:
            return tuple(self.tol[name])
        return {"float32": (1e-5, 1e-5), "float16": (1e-3, 2e-3), "bfloat16": (1e-2, 1.6e-2)}.get(name, (1e-5, 1e-5))

    def compare(self, out, ref) -> tuple[float, bool]:
        """Max abs error, and whether every element is within atol + rtol * |ref|."""
        atol, rtol = self.tolerance(ref.dtype)
        o, r = out.float(), ref.float()
        err = (o - r).abs()
        ok = bool((err <= atol + rtol * r.abs()).all()) and o.shape == r.shape
        return (err.max().item() if err.numel() else 0.0), ok


def _load(module: str) -> Example | None:
    try:
        m = importlib.import_module(module)
    except ImportError:
        return None  # the module's DSL is not installed here
    if not hasattr(m, "BACKEND") or not hasattr(m, "LAUNCH"):
        return None
    short = module.rsplit(".", 1)[1]
    return Example(
        name=getattr(m, "NAME", f"{m.BACKEND}_{short.removeprefix(m.BACKEND + '_')}"),
        backend=m.BACKEND,
        launch_fn=m.LAUNCH,
        configs=tuple(m.CONFIGS or ()),
        reference=m.reference,
        meta=m.meta,
        make_inputs=m.make_inputs,
        test_shapes=tuple(m.TEST_SHAPES),
        dtypes=tuple(getattr(m, "DTYPES", DTYPES)),
        tol=getattr(m, "TOL", None),
        requires=tuple(getattr(m, "REQUIRES", ())),
        static_dims=getattr(m, "STATIC_DIMS", None),
        autotuned=m.CONFIGS is None,
    )


def examples(backends: tuple[str, ...] | None = None) -> list[Example]:
    out = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        ex = _load(f"{__name__}.{info.name}")
        if ex is not None and (backends is None or ex.backend in backends):
            out.append(ex)
    return out


def by_name(name: str) -> Example:
    """An example kernel, or a ``tta.custom_op`` case (``tta.examples.custom_ops``, and
    ``custom_ops_dsl`` for cuTile and CuTeDSL kernels) with its argument values bound into the
    reference."""
    for ex in examples():
        if ex.name == name:
            return ex
    if name.startswith("custom_"):
        from .. import custom_ops, custom_ops_dsl

        cases = [(c, "triton") for c in custom_ops.CASES] + [(c, custom_ops_dsl.KERNEL_DSL_OF_CASE[c.name]) for c in custom_ops_dsl.CASES]
        for c, backend in cases:
            if c.name == name:
                return Example(
                    name=c.name,
                    backend=backend,
                    launch_fn=c.launch,
                    configs=c.configs,
                    reference=c.reference,
                    meta=None,
                    make_inputs=c.make_inputs,
                    test_shapes=c.test_shapes,
                    dtypes=c.dtypes,
                )
    raise KeyError(name)
