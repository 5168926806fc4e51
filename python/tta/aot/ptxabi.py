"""TensorRT's AOT launch ABI (QDP) as the backends apply it: the parameter order (input
pointers, int32 extras, output pointers), the PTX rewrite into it and the CUBIN layout check
(rules and text work in Rust, ``src/ptx/qdp.rs``), with the backend's context in each error, and
the choice of a plain ``.target``. No PTX text is edited in Python."""

from __future__ import annotations

from typing import Sequence

from ..common import bridge as core
from ..common.bridge import ParamRole, PtxEntry, QdpSlots
from ..errors import GraphError, PluginError
from . import phases


def isa_text(ptx_option: int) -> str:
    """Triton's ``ptx_version`` spelling to the PTX ``.version`` one: 90 -> "9.0"."""
    return f"{ptx_option // 10}.{ptx_option % 10}"


def isa_option(version: str) -> int:
    """The PTX ``.version`` spelling to Triton's: "9.0" -> 90."""
    major, minor = version.split(".")
    return int(major) * 10 + int(minor)


def max_ptx_for_driver(cuda: str) -> int | None:
    """Newest ISA a CUDA driver JITs, in Triton's spelling ("13.0" -> 90)."""
    v = core.max_isa_for_driver(cuda)
    return None if v is None else isa_option(v)


def qdp_order(roles: Sequence[ParamRole]) -> list[int]:
    """The permutation that puts a kernel's parameters, given as (role, index) with role
    "input", "extra" or "output", into the QDP order: new i = old order[i]."""
    return core.qdp_layout(roles)[0]


def slots_of(roles: Sequence[ParamRole]) -> QdpSlots:
    return core.qdp_layout(roles)[1]


def check_each_port_once(roles: Sequence[ParamRole], n_inputs: int, n_outputs: int, here: str) -> None:
    """TensorRT passes a pointer for every input and output: the kernel takes each once.
    ``roles``: the kernel's runtime parameters as (role, index)."""
    try:
        core.check_qdp_roles(roles, n_inputs, n_outputs)
    except GraphError as e:
        raise PluginError(f"{here}: {e}") from None


def to_qdp_abi(
    ptx: str,
    *,
    entry: str,
    roles: Sequence[ParamRole] | None = None,
    slots: QdpSlots | None = None,
    scratch_sizes: Sequence[int] = (),
    max_ptx: int | None = None,
    where: str = "",
) -> tuple[str, str]:
    """Drop trailing scratch params (refused unless their sizes are 0), reorder the rest to
    (inputs, extras, outputs) by their ``roles`` (or keep them, checked against ``slots``),
    check every slot's kind, check ``.version`` <= ``max_ptx``. Returns (ptx, version)."""
    try:
        out, _ = core.ptx_to_qdp_abi(
            ptx, entry, roles=roles, slots=slots, trailing_scratch=scratch_sizes, max_version=None if max_ptx is None else isa_text(max_ptx)
        )
    except GraphError as e:
        raise PluginError(f"{where}: the compiled PTX does not fit TensorRT's AOT launch: {e}") from e
    return out, core.ptx_parse(out).version


def check_cubin_layout(cubin: bytes, entry: str, slots: QdpSlots, where: str) -> None:
    """The parameter layout ptxas recorded in a CUBIN must be TensorRT's: 8-byte pointers for
    inputs and outputs around 4-byte int32 extras."""
    try:
        core.check_cubin_slots(cubin, entry, slots)
    except GraphError as e:
        raise PluginError(f"{where}: {e}") from e


def entry_of(ptx: str, name: str) -> PtxEntry:
    return core.ptx_parse(ptx).entry(name)


def plain_target(ptx: str, sm: int, ptxas: str | None, where: str = "") -> tuple[str, str | None]:
    """The PTX with ``.target sm_90a`` made ``sm_90`` when the kernel needs nothing
    arch-specific, which is when ``ptxas`` (an assembler that reads the PTX's ISA) assembles it
    for the plain target, or when every instruction form it holds was in a module ptxas did
    assemble for that target (``plain_forms.py``). Otherwise the PTX is unchanged and the second
    value says why the suffix stays. Plain targets also JIT-compile on later GPUs; ``sm_90a``
    loads only on sm_90."""
    import os
    import subprocess
    import tempfile

    from . import plain_forms

    plain = core.ptx_drop_arch_suffix(ptx)
    if plain == ptx:
        return ptx, None
    if not ptxas:
        return ptx, "no ptxas to check the plain target with"
    with phases.phase("ptxas check"):
        forms = core.ptx_instruction_forms(plain)
        record = plain_forms.record_path(sm, ptxas, core.ptx_parse(plain).version)
        if plain_forms.accepted(record, forms):
            return plain, None
        with tempfile.TemporaryDirectory(prefix="tta-target-") as d:
            src = os.path.join(d, "k.ptx")
            with open(src, "w") as f:
                f.write(plain)
            r = subprocess.run([ptxas, f"-arch=sm_{sm}", src, "-o", os.path.join(d, "k.cubin")], capture_output=True, text=True)
    if r.returncode != 0:
        first = (r.stderr.replace(src, "k.ptx").strip().splitlines() or ["ptxas failed"])[0]
        return ptx, f"{where}: needs sm_{sm}a: {first}"
    plain_forms.add(record, forms)
    return plain, None
