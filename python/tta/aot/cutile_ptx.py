"""PTX for a cuTile kernel, for TensorRT, which documents only PTX for AOT plugins.

tileiras has no PTX output; the CUBIN it writes embeds the PTX it assembled (the
``.nv_debug_ptx_txt`` section, present because cuTile passes ``--lineinfo``). That PTX is a
*tile kernel*: ISA 9.4 and a ``.language`` directive, which a CUDA 13.0 driver rejects. For
kernels without hidden parameters (TMA descriptors the caller never passes), relabelling it to
the driver's ISA and dropping ``.language`` gives a plain kernel that runs correctly when
launched with ``block = .reqntid`` (seen on an H200 with a CUDA 13.0 driver, outside
TensorRT). So:

* CUBIN -> embedded PTX (``_core.ptx_from_cubin``, which stops before the Tile IR source);
* ``.version`` lowered to ``max_ptx`` and ``.language`` dropped (``_core.ptx_relabel_version``,
  which refuses entries with hidden parameters);
* the parameters checked to be TensorRT's (input pointers, int32 extras, output pointers);
* ``.target sm_90a`` made plain when ptxas assembles it so;
* block = the kernel's ``.reqntid``.

Anything that fails raises ``PluginError`` saying why; the CUBIN stays available behind
``allow_cubin`` (unverified under TensorRT).
"""

from __future__ import annotations

import dataclasses

from .. import _core
from ..errors import PluginError
from . import cuda_tools, ptxabi
from .base import CompiledKernel


def ptx_variant(k: CompiledKernel, max_ptx: int | None, where: str = "") -> CompiledKernel:
    """The PTX form of a cuTile ``CompiledKernel`` (its CUBIN unchanged in ``meta``)."""
    where = where or f"cuTile kernel {k.entry}"
    if k.backend != "cutile" or k.code_format != "cubin":
        raise PluginError(f"{where}: not a cuTile CUBIN")
    try:
        ptx = _core.ptx_from_cubin(k.code)
    except _core.CoreError as e:
        raise PluginError(f"{where}: the CUBIN carries no PTX to ship ({e.args[-1]})") from None
    isa = ptxabi.isa_text(max_ptx) if max_ptx is not None else ptxabi.parse(ptx)["version"]
    try:
        ptx = _core.ptx_relabel_version(ptx, isa)
    except _core.CoreError as e:
        raise PluginError(f"{where}: its PTX cannot become a plain ISA {isa} kernel: {e.args[-1]}") from None
    entry = ptxabi.entry(ptx, k.entry)
    if entry.get("language") is not None and max_ptx is not None:
        raise PluginError(f"{where}: the PTX still declares .language after relabelling")
    n_in, n_extra, n_out = len(k.input_dtypes), len(k.extras), len(k.output_dtypes)
    n = len(entry["params"])
    ptx, version = ptxabi.to_qdp_abi(
        ptx, entry=k.entry, user_params=n, permutation=list(range(n)), slots=(n_in, n_extra, n_out), max_ptx=max_ptx, where=where
    )
    ptx, arch_specific = ptxabi.plain_target(ptx, k.sm, cuda_tools.find_ptxas(version), where)
    reqntid = entry.get("reqntid")
    if not reqntid:
        raise PluginError(f"{where}: the PTX declares no .reqntid, so the block size of a plain launch is unknown")
    block = tuple(reqntid) + (1,) * (3 - len(reqntid))
    meta = dict(k.meta)
    meta.update(
        {
            "ptx_from": "the CUBIN's embedded PTX, relabelled to a plain kernel",
            "arch_specific": arch_specific,
            "note": "cuTile PTX relabelled from a tile kernel: runs for kernels without hidden parameters (seen on an "
            "H200 outside TensorRT); TensorRT itself unverified",
        }
    )
    return dataclasses.replace(k, code=ptx.encode(), code_format="ptx", block=block, ptx_version=version, meta=meta)
