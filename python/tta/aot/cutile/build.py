"""cuTile backend, second half: the generated QDP-order entry kernel, its compilation to a CUBIN
(Tile IR bytecode from cuTile's ``export_kernel``, then tileiras), and the checks of the CUBIN's
parameters against TensorRT's launch. The first half (recording, analysis) is ``cutile.py``.

The entry kernel is Python source generated per plan, e.g. for RMSNorm::

    def tta_rmsnorm_kernel_1a2b3c4d(in0, in1, e0, e1, e2, out0, c0, c1):
        a0 = __ct.Array.from_foreign(in0.foreign_pointer, (e0, e1,), (e1, 1,))
        a1 = __ct.Array.from_foreign(in1.foreign_pointer, (e2,), (1,))
        a2 = __ct.Array.from_foreign(out0.foreign_pointer, (e0, e1,), (e1, 1,))
        __tta_user_kernel(a0, a1, a2, c0, c1)

``in*``/``out*`` are 0-d arrays (bare pointers), ``e*`` int32 scalars, ``c*`` compile-time
constants (``ConstantConstraint``, not kernel parameters). cuTile inlines the user's kernel
function into it, so the code is the user's kernel with its arrays' shapes and strides coming
from TensorRT's extras.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
from typing import Any

import torch

from ...common import bridge as core
from ...common import dtypes
from ...common.bridge import PtxEntry, QdpSlots
from ...errors import GraphError, PluginError
from .. import codegen, cuda_tools, phases, ptxabi
from ..driver import Artifact

CUBIN_NOTE = (
    "TensorRT documents only PTX for AOT plugins; CUBIN acceptance is unverified. cuTile emits PTX "
    "ISA 9.4 tile kernels, which a CUDA 13.0 driver rejects, so the CUBIN is shipped."
)


def kernel_name(kernel) -> str:
    fn = getattr(kernel, "_pyfunc", kernel)
    return getattr(fn, "__qualname__", getattr(fn, "__name__", repr(kernel)))


def _tuple(items) -> str:
    return "(" + "".join(f"{i}, " for i in items).rstrip(" ") + ")"


def entry_source(plan, fn_name: str) -> tuple[str, list[str]]:
    """Python source of the QDP-order entry kernel, and its parameter names in order."""
    ins = [f"in{k}" for k in range(len(plan.input_dtypes))]
    outs = [f"out{k}" for k in range(len(plan.output_dtypes))]
    extras = [f"e{i}" for i in range(len(plan.extras))]
    consts = [f"c{j}" for j, a in enumerate(a for a in plan.args if a.kind == "constant")]
    params = ins + extras + outs + consts
    lines = [f"def {fn_name}({', '.join(params)}):"]
    call, j = [], 0
    for i, a in enumerate(plan.args):
        if a.kind == "array":
            ptr = f"{'in' if a.port[0] == 'input' else 'out'}{a.port[1]}"
            lines.append(f"    a{i} = __ct.Array.from_foreign({ptr}.foreign_pointer, {_tuple(a.shape)}, {_tuple(a.strides)})")
            call.append(f"a{i}")
        elif a.kind == "extra":
            call.append(a.value)
        else:
            call.append(f"c{j}")
            j += 1
    lines.append(f"    __tta_user_kernel({', '.join(call)})")
    return "\n".join(lines) + "\n", params


def _entry_kernel(plan, fn_name: str):
    """Define the entry function from its source. cuTile reads kernel source through
    ``inspect``, so the text is registered in ``linecache`` under a unique file name."""
    import cuda.tile as ct

    source, _ = entry_source(plan, fn_name)
    scope = {"__ct": ct, "__tta_user_kernel": plan.kernel._pyfunc, "__name__": "tta_cutile_entry"}
    entry = codegen.define(source, fn_name, scope, f"cutile-entry {fn_name}")
    opts = plan.kernel._compiler_options
    kernel = ct.kernel(
        entry,
        num_ctas=opts.num_ctas,
        occupancy=opts.occupancy,
        opt_level=opts.opt_level,
        num_worker_warps=opts.num_worker_warps,
    )
    return kernel, source


def _signature(plan, symbol: str, pointer_divisibility: int | None, here: str):
    import cuda.tile as ct
    from cuda.tile.compilation import (
        ArrayConstraint,
        CallingConvention,
        ConstantConstraint,
        KernelSignature,
        ScalarConstraint,
    )

    def pointer(dtype: str):
        itemsize = torch.empty((), dtype=dtypes.entry(dtype).torch).element_size()
        # TensorRT documents no alignment for plugin buffers: assume the element size unless the
        # caller knows better (16 lets tileiras use TMA, whose descriptors TensorRT cannot pass).
        return ArrayConstraint(
            getattr(ct, dtypes.entry(dtype).cutile),
            0,
            index_dtype=ct.int32,
            stride_lower_bound_incl=0,
            alias_groups=(),
            may_alias_internally=False,
            base_addr_divisible_by=max(itemsize, pointer_divisibility or 1),
        )

    params = [pointer(d) for d in plan.input_dtypes]
    params += [ScalarConstraint(ct.int32) for _ in plan.extras]
    params += [pointer(d) for d in plan.output_dtypes]
    for a in plan.args:
        if a.kind == "constant":
            try:
                params.append(ConstantConstraint(a.value))
            except TypeError as e:
                raise PluginError(f"{here}: parameter {a.name!r}: cuTile cannot compile in {a.value!r}: {e}") from None
    return KernelSignature(params, CallingConvention.cutile_python_v2(), symbol=symbol)


def _symbol(plan, sm: int, config: tuple) -> str:
    base = re.sub(r"\W", "_", kernel_name(plan.kernel))
    digest = hashlib.sha256(
        json.dumps(
            [base, [a.__dict__ for a in plan.args], plan.extras, plan.input_dtypes, plan.output_dtypes, sm, config], default=repr
        ).encode()
    ).hexdigest()[:8]
    return f"tta_{base}_{digest}"


def toolchain(sm: int = 90) -> dict[str, str]:
    path = cuda_tools.tileiras(sm)
    return {"cuda-tile": _cutile_version(), "tileiras": cuda_tools.tool_version(path), "tileiras_path": path}


def _bytecode_version(tileiras_version: str) -> str:
    """The Tile IR bytecode version to write: the compiler's own, capped to what cuTile writes
    (read from a private list; 13.4 for cuda-tile 1.7)."""
    try:
        from cuda.tile._compile import _SUPPORTED_VERSIONS

        cap = max(_SUPPORTED_VERSIONS).as_string()
    except Exception:  # pragma: no cover - cuTile internals moved
        cap = "13.4"
    as_tuple = lambda v: tuple(int(x) for x in v.split("."))  # noqa: E731
    return min(tileiras_version, cap, key=as_tuple)


def build(plan, sm: int, max_ptx: int | None, config: tuple, where: str, pointer_divisibility: int | None = None) -> Artifact:
    """Export the entry kernel as Tile IR bytecode, compile it with tileiras for ``sm`` (no GPU
    needed) and check the CUBIN's parameters against the QDP launch. ``max_ptx`` does not
    apply: the artifact is a CUBIN (no driver JIT). ``pointer_divisibility`` (bytes): assume
    16 only if TensorRT's buffers are known to be aligned, and expect TMA, which is refused."""
    from cuda.tile.compilation import export_kernel

    kname = kernel_name(plan.kernel)
    here = f"{where}: kernel {kname}"
    symbol = _symbol(plan, sm, config)
    entry, source = _entry_kernel(plan, symbol)
    tool = cuda_tools.tileiras(sm)
    version = _bytecode_version(cuda_tools.tool_version(tool))
    buf = io.BytesIO()
    try:
        signature = _signature(plan, symbol, pointer_divisibility, here)
        with phases.phase(phases.DSL):
            export_kernel(entry, [signature], buf, gpu_code=f"sm_{sm}", output_format="tileir_bytecode", bytecode_version=version)
    except PluginError:
        raise
    except Exception as e:
        raise PluginError(f"{here}: cuTile could not compile the kernel for sm_{sm} (config {dict(config)}): {e}") from e
    opt = plan.kernel._compiler_options.opt_level_for_target(f"sm_{sm}")
    with phases.phase(phases.DSL):
        cubin = cuda_tools.run_tileiras(tool, buf.getvalue(), sm, opt)
    ptx, entry_info = check_cubin(cubin, symbol, len(plan.input_dtypes), len(plan.extras), len(plan.output_dtypes), here)
    return Artifact(
        entry=symbol,
        code=cubin,
        code_format="cubin",
        grid=plan.grid,
        block=(1, 1, 1),
        shared_mem=0,
        extras=tuple(plan.extras),
        ptx_version=core.ptx_parse(ptx).version,
        meta={
            "kernel": kname,
            "entry_source": source,
            "reqntid": None if entry_info.reqntid is None else list(entry_info.reqntid),
            "language": entry_info.language,
            "params": [
                {"name": a.name, "kind": a.kind, "port": a.port, "shape": a.shape, "strides": a.strides, "value": _jsonable(a.value)}
                for a in plan.args
            ],
            "pointer_divisibility": pointer_divisibility,
            "toolchain": {"cuda-tile": _cutile_version(), "tileiras": cuda_tools.tool_version(tool), "bytecode": version},
            "note": CUBIN_NOTE,
        },
    )


def check_cubin(cubin: bytes, symbol: str, n_in: int, n_extra: int, n_out: int, here: str) -> tuple[str, PtxEntry]:
    """The CUBIN's kernel must take exactly TensorRT's arguments: no hidden parameters (TMA
    descriptors), no clusters, and pointer/int32 slots in QDP order, both in the PTX tileiras
    generated (embedded in the CUBIN) and in the parameter layout ptxas recorded."""
    try:
        ptx = core.ptx_from_cubin(cubin)
    except GraphError as e:
        raise PluginError(f"{here}: cannot read the kernel's parameters from the CUBIN: {e}") from e
    entry = next((e for e in core.ptx_parse(ptx).entries if e.name == symbol), None)
    if entry is None:
        raise PluginError(f"{here}: the CUBIN has no entry {symbol!r}")
    hidden = [p for p in entry.params if p.hidden]
    if hidden:
        kinds = ", ".join(f"{p.ty}[{p.array_len}]" for p in hidden)
        raise PluginError(
            f"{here}: tileiras gave the kernel {len(hidden)} hidden parameter(s) ({kinds}: TMA tensor-map "
            "descriptors), which TensorRT's AOT launch does not pass; use ct.load/ct.store(..., allow_tma=False) or "
            "do not assume 16-byte aligned pointers (pointer_divisibility)"
        )
    clusters = [d for d in entry.directives if d in (".reqnctapercluster", ".blocksareclusters", ".explicitcluster")]
    if clusters:
        raise PluginError(f"{here}: the kernel runs in clusters ({', '.join(clusters)}); the TensorRT AOT launch has none (num_ctas=1)")
    slots = QdpSlots(n_in, n_extra, n_out)
    ptxabi.to_qdp_abi(ptx, entry=symbol, slots=slots, where=here)
    ptxabi.check_cubin_layout(cubin, symbol, slots, here)
    return ptx, entry


def _cutile_version() -> str:
    try:
        from importlib.metadata import version

        return version("cuda-tile")
    except Exception:  # pragma: no cover
        return "?"


def _jsonable(v: Any) -> Any:
    if isinstance(v, tuple):
        return [_jsonable(x) for x in v]
    return v if isinstance(v, (int, float, str, bool)) or v is None else repr(v)
