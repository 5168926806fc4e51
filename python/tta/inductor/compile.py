"""PyTorch's own compilers as tta backends: ``tta.compile(..., backend="inductor")`` and
``tta.aot_compile`` (an AOTInductor ``.pt2`` package).

Steps: ``torch.export`` (no decompositions, so Inductor still sees fused ops such as
scaled_dot_product_attention outside the regions), ``tta.rewrite``, ``program.lower`` (each plugin
op to its Triton op or its region body), then ``torch.compile`` of the program's module or
``aoti_compile_and_package`` of the program. Torch-TensorRT is never imported here.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from typing import Any, Sequence

import torch
from torch.export import ExportedProgram

from ..errors import PackageRuntimeWarning, PluginError
from .package_check import libraries_with_private_libstdcxx
from .program import BackendReport, lower
from .rewritten import rewritten
from .shared_libstdcxx import compiler_linking, loaded_libstdcxx


def _lowered(
    model,
    example_inputs,
    dynamic_shapes,
    selectors,
    strict: bool,
    backend: str,
    kernels: Any = None,
    max_ptx: int | None = 90,
    triton_on_cpu: bool = False,
    check_kernels: bool = False,
) -> tuple[ExportedProgram, BackendReport]:
    from .kernel_bundle import as_bundle

    result = rewritten(model, example_inputs, dynamic_shapes, selectors, strict, backend, check_kernels, max_ptx)
    program, report = lower(result, backend, as_bundle(kernels), max_ptx, triton_on_cpu=triton_on_cpu)
    report.kernel_check = result.kernel_check
    return program, report


def _for_dynamo(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """The exported module as ``torch.compile`` should see it: what it adds around the graph
    costs host time on every call, which on a model this size is more than the GPU time.

    * Its forward hooks go: ``ExportedProgram.module()`` checks the inputs in a pre-hook, and
      ``torch.compile`` runs module hooks outside the compiled frame, in Python, every call.
    * Where the inputs are positional tensors and the output one tensor or a tuple of them, the
      pytree flattening and the export guard call (``_guards_fn``) go too: Dynamo turns the
      flattening into guards on pytree's registry and specs, checked every call, and guards the
      sizes itself anyway. Other signatures keep both.
    """
    from torch.utils import _pytree as pytree

    graph = gm.graph
    info = getattr(graph._codegen, "pytree_info", None)
    if info is not None and info.in_spec is not None and info.out_spec is not None:
        n_in = sum(n.op == "placeholder" for n in graph.nodes)
        out = graph.output_node()
        leaves = out.args[0]
        positional = info.in_spec == pytree.tree_structure(((0,) * n_in, {}))
        one = info.out_spec == pytree.tree_structure(0)
        flat_tuple = isinstance(leaves, (tuple, list)) and info.out_spec == pytree.tree_structure((0,) * len(leaves))
        if positional and isinstance(leaves, (tuple, list)) and (one or flat_tuple):
            for n in list(graph.nodes):
                if n.op == "call_module" and n.target == "_guards_fn" and not n.users:
                    graph.erase_node(n)
            graph._codegen = torch.fx.graph.CodeGen()
            out.args = (leaves[0] if one else tuple(leaves),)
    return torch.fx.GraphModule(gm, graph, class_name=type(gm).__name__)


def compile_inductor(
    model: torch.nn.Module | ExportedProgram,
    example_inputs: Sequence[Any],
    dynamic_shapes: Any = None,
    *,
    selectors: Any = None,
    strict: bool = False,
    kernels: Any = None,
    max_ptx: int | None = 90,
    check_kernels: bool = True,
    **torch_compile_options: Any,
):
    """``torch.compile`` of the rewritten program; the user's Triton kernels are in Inductor's
    code. For inference (the module's parameters are frozen: plugin ops have no backward).
    Returns the compiled module with ``tta_report`` (a ``BackendReport``: per region,
    whether the user's kernel or the region body runs, and why). ``torch_compile_options`` go
    to ``torch.compile`` (``mode``, ``dynamic``, ``options``, ``fullgraph``...).

    cuTile and CuTeDSL kernels run as their compiled artifacts (``tta_cubin::<op>``): ``kernels``
    gives them (a ``kernel_bundle`` path or mapping, compiled where the DSL is installed),
    else they are compiled here for this GPU (PTX ISA at most ``max_ptx``) when the DSL is.

    ``check_kernels`` (default on): first run every plugin's kernel against its region body
    (``tta.check_kernels``; a kernel that computes something else is a ``KernelCheckError``);
    the report is ``tta_report.kernel_check``."""
    program, report = _lowered(
        model, example_inputs, dynamic_shapes, selectors, strict, "inductor", kernels, max_ptx, check_kernels=check_kernels
    )
    options = dict(torch_compile_options)
    options.setdefault("backend", "inductor")
    if dynamic_shapes is not None:
        options.setdefault("dynamic", True)
    gm = _for_dynamo(program.module())
    for p in gm.parameters():
        p.requires_grad_(False)  # inference: plugin ops have no backward
    module = torch.compile(gm, **options)
    module.tta_report = report
    module.tta_program = program
    return module


@dataclass
class AOTPackage:
    """What ``tta.aot_compile`` returns: the package path and the per-region report.
    ``relinked_libstdcxx``: the toolchain had copied a private libstdc++ into the package, so it
    was linked again against this process's ``libstdc++.so.6`` (``shared_libstdcxx.py``)."""

    path: str
    tta_report: BackendReport
    program: ExportedProgram
    relinked_libstdcxx: bool = False

    def load(self, **kwargs: Any):
        """``torch._inductor.aoti_load_package`` of the package (any process can do this
        without tta)."""
        return torch._inductor.aoti_load_package(self.path, **kwargs)

    def __str__(self) -> str:
        return f"{self.path}\n{self.tta_report}"


def _package(program: ExportedProgram, path: str, inductor_configs: dict | None) -> str:
    return torch._inductor.aoti_compile_and_package(program, package_path=path, inductor_configs=inductor_configs)


def _package_with_shared_libstdcxx(program: ExportedProgram, path: str, inductor_configs: dict | None) -> str | None:
    """The package built again with the user's compiler linking this process's libstdc++.so.6
    (``shared_libstdcxx.py``); None where this process has no libstdc++.so.6 to name."""
    libstdcxx = loaded_libstdcxx()
    if libstdcxx is None:
        return None
    from torch._inductor import config, cpp_builder

    cxx = compiler_linking(cpp_builder.get_cpp_compiler(), libstdcxx)
    # No cache may hand back the objects linked the first time.
    with config.patch({"cpp.cxx": (cxx,), "force_disable_caches": True}):
        return _package(program, path, inductor_configs)


def _warn_private_libstdcxx(package_path: str, private: list[str]) -> None:
    warnings.warn(
        f"tta.aot_compile: {package_path} holds {', '.join(private)} with its own copy of libstdc++ linked "
        "in (it does not load libstdc++.so.6), also when linked again against this process's "
        "libstdc++.so.6; such packages crashed aoti_load_package where they were seen (tta's "
        "docs/verification.md). Point CXX at a g++ whose link of torch's AOTInductor libraries needs "
        "libstdc++.so.6 and compile again.",
        PackageRuntimeWarning,
        stacklevel=3,
    )


def aot_compile(
    model: torch.nn.Module | ExportedProgram,
    example_inputs: Sequence[Any],
    path: str | os.PathLike,
    dynamic_shapes: Any = None,
    *,
    selectors: Any = None,
    strict: bool = False,
    inductor_configs: dict | None = None,
    check_kernels: bool = True,
) -> AOTPackage:
    """An AOTInductor package of the rewritten program at ``path`` (a ``.pt2``). It holds the
    user's Triton kernels compiled by Inductor and loads with
    ``torch._inductor.aoti_load_package`` in a process that never imports tta.
    ``check_kernels``: as in ``compile_inductor``."""
    path = os.fspath(path)
    if not path.endswith(".pt2"):
        raise PluginError(f"tta.aot_compile: the package path must end in .pt2, got {path!r}")
    program, report = _lowered(model, example_inputs, dynamic_shapes, selectors, strict, "aot_inductor", check_kernels=check_kernels)
    out = _package(program, path, inductor_configs)
    relinked = False
    private = libraries_with_private_libstdcxx(out)
    if private:
        # The toolchain linked a private libstdc++ into the package: link it again against the
        # process's own, which is what a package needs to load next to torch.
        again = _package_with_shared_libstdcxx(program, path, inductor_configs)
        if again is not None:
            out, relinked = again, True
            private = libraries_with_private_libstdcxx(out)
    if private:
        _warn_private_libstdcxx(out, private)
    return AOTPackage(path=out, tta_report=report, program=program, relinked_libstdcxx=relinked)
