"""Compiled cuTile/CuTeDSL kernels for the Inductor backend, per plugin name, in a file: built
where the DSL is installed (``compile_bundle``), used where only CUDA and cuda-python are
(``tta.compile(..., backend="inductor", kernels=path)``). The file is a tta kernel manifest
(``aot/base.py``) whose info maps each plugin name to its kernels."""

from __future__ import annotations

import os
from typing import Any, Mapping, Sequence

from ..aot.base import CompiledKernel, read_manifest, write_manifest
from ..errors import PluginError

Bundle = dict[str, list[CompiledKernel]]


def compile_bundle(
    model: Any,
    example_inputs: Sequence[Any],
    dynamic_shapes: Any = None,
    *,
    sm: int = 90,
    max_ptx: int | None = 90,
    selectors: Any = None,
    strict: bool = False,
) -> Bundle:
    """The kernels of every outlined region whose plugin has kernels but no Triton one (those
    Inductor cannot embed), compiled for ``sm`` as the TensorRT path compiles them."""
    from ..fx.kernels import compile_kernels
    from ..runtime import ops
    from .rewritten import rewritten

    result = rewritten(model, example_inputs, dynamic_shapes, selectors, strict, "inductor")
    wanted = {}  # plugin name -> its first region
    for region in result.outlined:
        sig = ops.signature_of(region.op) if region.op else None
        plugin = sig[2] if sig else None
        if plugin is None or plugin.name in wanted or not plugin.kernels or any(k.backend == "triton" for k in plugin.kernels):
            continue
        wanted[plugin.name] = region
    compiled = compile_kernels(list(wanted.values()), sm=sm, max_ptx=max_ptx)  # one pool for all of them
    return {name: compiled[region.op] for name, region in wanted.items()}


def save_bundle(path: str | os.PathLike, bundle: Mapping[str, Sequence[CompiledKernel]]) -> None:
    kernels, index = [], {}
    for name, ks in bundle.items():
        index[name] = list(range(len(kernels), len(kernels) + len(ks)))
        kernels.extend(ks)
    write_manifest(os.fspath(path), kernels, plugins=index)


def load_bundle(path: str | os.PathLike) -> Bundle:
    kernels, info = read_manifest(os.fspath(path))
    if "plugins" not in info:
        raise PluginError(f"{path}: a kernel manifest without a plugin index is not a kernel bundle (save it with save_bundle)")
    return {name: [kernels[i] for i in idx] for name, idx in info["plugins"].items()}


def as_bundle(kernels: Any) -> Bundle:
    """``kernels`` as given to the Inductor backend: None, a bundle path, or a mapping."""
    if kernels is None:
        return {}
    if isinstance(kernels, (str, os.PathLike)):
        return load_bundle(kernels)
    if isinstance(kernels, Mapping):
        return {name: list(ks) for name, ks in kernels.items()}
    raise PluginError(f"kernels= takes a bundle path or a mapping of plugin name to compiled kernels, got {type(kernels).__name__}")
