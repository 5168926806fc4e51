"""``python -m tta.tools.gpu.build_manifest --via-qdp OUT.json``: the conformance manifest built from
what TensorRT's plugin package hands the engine builder, not from the compiler directly.

Each example kernel becomes a ``tta::`` plugin (``tta.trt.qdp.define``, every dtype it supports);
the real ``tensorrt.plugin`` package, over the native-module stand-in of ``tests/trt_standin``,
runs the build-time call order (``create_plugin(STRICT_AOT)``, output types and shapes, format
combinations, tactics, ``get_launch_params`` -> ``aot_impl``, ``get_kernel``). Each
(combination, tactic) is written as a manifest kernel: the kernel name and code ``get_kernel``
returned, and grid, block, shared memory, extras and output shapes printed from the expression
trees TensorRT would store in the engine. The GPU conformance runner then launches exactly
that. The ``tta.custom_op`` example ops (``tta.examples.custom_ops`` with Triton kernels,
``custom_ops_dsl`` with cuTile and CuTeDSL ones; names ``custom_*``) come too, each through its
generated plugin with its case's argument values as attributes, when their backend is selected. Needs the Torch-TensorRT venv (the plugin package) and a source checkout (the stand-in);
no GPU.
"""

from __future__ import annotations

import os
import sys
import time

from ...aot.base import CompiledKernel, guards_hold, symbol_values, write_manifest
from ...common import dtypes
from ...errors import TTAError
from ...examples.kernels import examples

_DTYPE_BY_TRT = {trt: name for name, trt in dtypes.TENSORRT.items()}


def _standin(plugin_version: str):
    tests = os.path.join(
        os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))), "tests"
    )
    if os.path.isdir(os.path.join(tests, "trt_standin")) and tests not in sys.path:
        sys.path.insert(0, tests)
    try:
        import trt_standin
    except ImportError as e:
        raise TTAError(f"--via-qdp needs the TensorRT stand-in of a source checkout (tests/trt_standin): {e}") from e
    trt_standin.install(plugin_version)
    from trt_standin import exprs, plugin_build

    return exprs, plugin_build


def _constant(expr, what: str) -> int:
    if not expr.is_constant():
        raise TTAError(f"{what} is not a build-time constant")
    return int(expr.get_constant_value())


def _kernels(exprs, built, compiled, added, example, dname, test_shapes, shapes, sm, n_in, version) -> list:
    """Manifest kernels from what the plugin package built, one per tactic."""
    out = []
    for b in sorted(built, key=lambda b: list(compiled).index(b.tactic)):
        source = compiled[b.tactic]
        kname = b.kernel_name.decode() if isinstance(b.kernel_name, bytes) else b.kernel_name
        k = CompiledKernel(
            backend=source.backend,
            entry=kname,
            code=b.code,
            code_format=source.code_format,
            grid=tuple(exprs.to_text(b.launch[f"grid_{a}"]) for a in "xyz"),
            block=tuple(_constant(b.launch[f"block_{a}"], f"{example} block_{a}") for a in "xyz"),
            shared_mem=_constant(b.launch["shared_mem"], f"{example} shared_mem"),
            extras=tuple(exprs.to_text(e) for e in b.extras),
            input_dtypes=tuple(_DTYPE_BY_TRT[t.name] for t in b.types[:n_in]),
            output_dtypes=tuple(_DTYPE_BY_TRT[t.name] for t in b.types[n_in:]),
            output_shapes=tuple(tuple(exprs.to_text(e) for e in o) for o in added.output_shapes),
            config=source.config,
            sm=sm,
            ptx_version=source.ptx_version,
        )
        guards = source.meta.get("guards", [])
        tests = [list(s) for s, ins in zip(test_shapes, shapes) if guards_hold(guards, symbol_values(ins))]
        k.meta.update(
            {
                "example": example,
                "dtype": dname,
                "test_shapes": tests,
                "via": f"tensorrt.plugin {version} aot_impl",
                "tactic": b.tactic,
                "guards": guards,
            }
        )
        out.append(k)
    return out


def _profile_and_inputs(shapes, dname: str) -> tuple[list, list]:
    """The optimization profile spanning the test shapes ((min, opt, max) per input) and the
    network inputs (every dim dynamic) of one dtype."""
    import tensorrt as trt

    from ...trt import qdp

    profile = []
    for k in range(len(shapes[0])):
        dims = list(zip(*[s[k] for s in shapes]))
        profile.append((tuple(min(d) for d in dims), shapes[0][k], tuple(max(d) for d in dims)))
    trt_dtype = getattr(trt.DataType, qdp.TRT_DTYPES[dname])
    return profile, [trt.ITensor(f"x{k}", [-1] * len(p[0]), trt_dtype) for k, p in enumerate(profile)]


def _unified_metas(shapes) -> list:
    """Plugin input types for a custom-op case: a dim whose size equals an earlier dim's at every
    test shape (a broadcast partner, a checked equality) shares its symbol, as the export of a
    model calling the op would."""
    from ...aot.base import input_symbol

    seen, metas = {}, []
    for k in range(len(shapes[0])):
        dims = []
        for j in range(len(shapes[0][k])):
            sizes = tuple(s[k][j] for s in shapes)
            dims.append(seen.get(sizes))
            seen.setdefault(sizes, input_symbol(k, j))
        metas.append(dims)
    return metas


def _custom_op_cases(backends) -> list[tuple]:
    """(case, backend) of every ``tta.custom_op`` example op whose kernels are in ``backends``."""
    from ...examples import custom_ops, custom_ops_dsl

    cases = [(c, "triton") for c in custom_ops.CASES]
    cases += [(c, custom_ops_dsl.KERNEL_DSL_OF_CASE[c.name]) for c in custom_ops_dsl.CASES]
    return [(c, b) for c, b in cases if b in backends]


def _custom_op_kernels(exprs, plugin_build, failures, left_out, sm, max_ptx, backends) -> list:
    """The ``tta.custom_op`` example ops with their case's argument values, through each op's
    generated plugin. A case whose attributes this plugin package cannot carry goes to
    ``left_out`` with the reason (build with ``--plugin-version 11.4`` to include it)."""
    import tensorrt as trt
    import tensorrt.plugin as trtp

    import tta

    from ...aot.session import TensorType
    from ...trt import custom_op, qdp

    out = []
    version = tuple(int(p) for p in trt.__version__.split(".")[:2])
    for case, backend in _custom_op_cases(backends):
        if version < case.min_plugin:
            need = ".".join(map(str, case.min_plugin))
            left_out.append({"example": case.name, "why": f"its attributes need tensorrt.plugin >= {need}, this is {trt.__version__}"})
            continue
        try:
            spec = getattr(tta, backend)(case.launch, configs=list(case.configs))
            op = custom_op.defined(case.op) or tta.custom_op(case.op, kernel=spec)
            for dtype in case.dtypes:
                dname = str(dtype).removeprefix("torch.")
                shapes = [[tuple(t.shape) for t in case.make_inputs(s, dtype, "meta")] for s in case.test_shapes]
                n_in = len(shapes[0])
                metas = [TensorType(dname, tuple(d)) for d in _unified_metas(shapes)]
                name = op.plugin_name([True] * n_in, metas, sm=sm, max_ptx=max_ptx)
                profile, itensors = _profile_and_inputs(shapes, dname)
                create = getattr(trtp.op.tta, name)(*itensors, **qdp.attribute_kwargs(name, case.values))
                added = plugin_build.add_plugin_aot(create)
                built = plugin_build.build_plugin(added, profile)
                compiled = qdp.tactics(name, [dname] * n_in, case.values)
                out += _kernels(exprs, built, compiled, added, case.name, dname, case.test_shapes, shapes, sm, n_in, trt.__version__)
        except (TTAError, ImportError) as e:  # ImportError: the DSL is not installed
            failures.append({"example": case.name, "error": str(e)})
            print(f"tta: {case.name}: {e}", file=sys.stderr)
    return out


def build(out: str, sm: int = 90, max_ptx: int | None = 90, backends=None, plugin_version: str = "11.1") -> dict:
    exprs, plugin_build = _standin(plugin_version)
    import tensorrt as trt
    import tensorrt.plugin as trtp
    import torch

    from ...trt import qdp

    kernels, failures, left_out = [], [], []
    t0 = time.perf_counter()
    for ex in examples(tuple(backends) if backends else ("triton",)):
        if not ex.buildable():
            failures.append({"example": ex.name, "error": f"needs {', '.join(ex.requires)} to compile"})
            continue
        first = ex.dtypes[0]
        n_in = len(ex.input_metas(first))
        combos = [(str(d).removeprefix("torch."),) * n_in for d in ex.dtypes]
        name = f"manifest_{ex.name}"
        try:
            qdp.define(name, ex.plugin(), ex.input_metas(first), ex.meta, dtypes=combos, sm=sm, max_ptx=max_ptx)
        except TTAError as e:
            failures.append({"example": ex.name, "error": str(e)})
            continue
        for dtype in ex.dtypes:
            dname = str(dtype).removeprefix("torch.")
            try:
                shapes = [[tuple(t.shape) for t in ex.make_inputs(s, dtype, "meta")] for s in ex.test_shapes]
                profile, itensors = _profile_and_inputs(shapes, dname)
                added = plugin_build.add_plugin_aot(getattr(trtp.op.tta, name)(*itensors))
                built = plugin_build.build_plugin(added, profile)
                compiled = qdp.tactics(name, [dname] * n_in)
            except TTAError as e:
                failures.append({"example": ex.name, "dtype": dname, "error": str(e)})
                print(f"tta: {ex.name} {dname}: {e}", file=sys.stderr)
                continue
            kernels += _kernels(exprs, built, compiled, added, ex.name, dname, ex.test_shapes, shapes, sm, n_in, trt.__version__)
    kernels += _custom_op_kernels(exprs, plugin_build, failures, left_out, sm, max_ptx, tuple(backends) if backends else ("triton",))
    del torch
    info = {
        "sm": sm,
        "max_ptx": max_ptx,
        "via": "qdp",
        "plugin_package": plugin_version,
        "failures": failures,
        "left_out": left_out,
        "seconds": round(time.perf_counter() - t0, 2),
    }
    write_manifest(out, kernels, **info)
    return {"kernels": len(kernels), **info}
