"""PTX for a cuTile kernel, for TensorRT, which documents only PTX for AOT plugins.

tileiras has no PTX output; the CUBIN it writes embeds the PTX it assembled (the
``.nv_debug_ptx_txt`` section, present because cuTile passes ``--lineinfo``). That PTX is a
*tile kernel*: ISA 9.4 and a ``.language`` directive, which a CUDA 13.0 driver rejects. For
kernels without hidden parameters (TMA descriptors the caller never passes), relabelling it to
the driver's ISA and dropping ``.language`` gives a plain kernel that runs correctly when
launched with ``block = .reqntid`` (seen on an H200 with a CUDA 13.0 driver, outside
TensorRT). So:

* CUBIN -> embedded PTX (``core.ptx_from_cubin``, which stops before the Tile IR source);
* ``.version`` lowered to ``max_ptx`` and ``.language`` dropped (``core.ptx_relabel_version``,
  which refuses entries with hidden parameters);
* the parameters checked to be TensorRT's (input pointers, int32 extras, output pointers);
* ``.target sm_90a`` made plain when ptxas assembles it so;
* block = the kernel's ``.reqntid``.

Anything that fails raises ``PluginError`` saying why; the CUBIN stays available behind
``allow_cubin`` (unverified under TensorRT).
"""

from __future__ import annotations

import dataclasses

from ...common import bridge as core
from ...common.bridge import QdpSlots
from ...errors import GraphError, PluginError
from .. import cuda_tools, ptxabi
from ..base import CompiledKernel


def ptx_variant(k: CompiledKernel, max_ptx: int | None, where: str = "") -> CompiledKernel:
    """The PTX form of a cuTile ``CompiledKernel``."""
    where = where or f"cuTile kernel {k.entry}"
    if k.backend != "cutile" or k.code_format != "cubin":
        raise PluginError(f"{where}: not a cuTile CUBIN")
    try:
        ptx = core.ptx_from_cubin(k.code)
    except GraphError as e:
        raise PluginError(f"{where}: the CUBIN carries no PTX to ship ({e})") from None
    isa = ptxabi.isa_text(max_ptx) if max_ptx is not None else core.ptx_parse(ptx).version
    try:
        ptx = core.ptx_relabel_version(ptx, isa)
    except GraphError as e:
        raise PluginError(f"{where}: its PTX cannot become a plain ISA {isa} kernel: {e}") from None
    entry = core.ptx_parse(ptx).entry(k.entry)
    if entry.language is not None and max_ptx is not None:
        raise PluginError(f"{where}: the PTX still declares .language after relabelling")
    slots = QdpSlots(len(k.input_dtypes), len(k.extras), len(k.output_dtypes))
    ptx, version = ptxabi.to_qdp_abi(ptx, entry=k.entry, slots=slots, max_ptx=max_ptx, where=where)
    ptx, arch_specific = ptxabi.plain_target(ptx, k.sm, cuda_tools.find_ptxas(version), where)
    if not entry.reqntid:
        raise PluginError(f"{where}: the PTX declares no .reqntid, so the block size of a plain launch is unknown")
    block = tuple(entry.reqntid) + (1,) * (3 - len(entry.reqntid))
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
