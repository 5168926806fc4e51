"""TensorRT's AOT launch ABI (QDP) as the backends apply it: the parameter order (input
pointers, int32 extras, output pointers), the PTX rewrite into it (done in Rust, ``src/ptx``),
and the CUBIN layout check. No PTX text is edited in Python."""

from __future__ import annotations

from typing import Sequence

from .. import core
from ..core import PtxEntry, QdpSlots
from ..errors import GraphError, PluginError

# Where each role goes in the QDP order.
_ROLE_RANK = {"input": 0, "extra": 1, "output": 2}


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


def qdp_order(roles: Sequence[tuple[str, int]]) -> list[int]:
    """The permutation that puts a kernel's parameters, given as (role, index) with role
    "input", "extra" or "output", into the QDP order: new i = old order[i]."""
    return sorted(range(len(roles)), key=lambda i: (_ROLE_RANK[roles[i][0]], roles[i][1]))


def slots_of(roles: Sequence[tuple[str, int]]) -> QdpSlots:
    return QdpSlots(*(sum(r == role for r, _ in roles) for role in ("input", "extra", "output")))


def to_qdp_abi(
    ptx: str,
    *,
    entry: str,
    user_params: int,
    permutation: Sequence[int],
    slots: QdpSlots,
    scratch_sizes: Sequence[int] = (),
    max_ptx: int | None = None,
    where: str = "",
) -> tuple[str, str]:
    """Drop trailing scratch params (refused unless their sizes are 0), reorder the rest to
    (inputs, extras, outputs), check every slot's kind, check ``.version`` <= ``max_ptx``.
    Returns (ptx, version)."""
    permutation = list(permutation)
    if len(permutation) != user_params:
        raise PluginError(f"{where}: parameter order has {len(permutation)} entries for {user_params} parameters")
    try:
        out, _ = core.ptx_to_qdp_abi(ptx, entry, order=permutation, slots=slots, trailing_scratch=scratch_sizes,
                                     max_version=None if max_ptx is None else isa_text(max_ptx))
    except GraphError as e:
        raise PluginError(f"{where}: the compiled PTX does not fit TensorRT's AOT launch: {e}") from e
    return out, core.ptx_parse(out).version


def check_cubin_layout(cubin: bytes, entry: str, slots: QdpSlots, where: str) -> None:
    """The parameter layout ptxas recorded in a CUBIN must be TensorRT's: 8-byte pointers for
    inputs and outputs around 4-byte int32 extras."""
    try:
        sizes = [p.size for p in core.cubin_params(cubin, entry)]
    except GraphError as e:
        raise PluginError(f"{where}: cannot read the kernel's parameters from the CUBIN: {e}") from e
    want = [8] * slots.inputs + [4] * slots.extras + [8] * slots.outputs
    if sizes != want:
        raise PluginError(f"{where}: the CUBIN lays out parameters of sizes {sizes}, but TensorRT passes {want}")


def entry_of(ptx: str, name: str) -> PtxEntry:
    return core.ptx_parse(ptx).entry(name)


def plain_target(ptx: str, sm: int, ptxas: str | None, where: str = "") -> tuple[str, str | None]:
    """The PTX with ``.target sm_90a`` made ``sm_90`` when the kernel needs nothing
    arch-specific, which is when ``ptxas`` (an assembler that reads the PTX's ISA) assembles it
    for the plain target. Otherwise the PTX is unchanged and the second value says why the
    suffix stays. Plain targets also JIT-compile on later GPUs; ``sm_90a`` loads only on sm_90."""
    import os
    import subprocess
    import tempfile

    plain = core.ptx_drop_arch_suffix(ptx)
    if plain == ptx:
        return ptx, None
    if not ptxas:
        return ptx, "no ptxas to check the plain target with"
    with tempfile.TemporaryDirectory(prefix="tta-target-") as d:
        src = os.path.join(d, "k.ptx")
        with open(src, "w") as f:
            f.write(plain)
        r = subprocess.run([ptxas, f"-arch=sm_{sm}", src, "-o", os.path.join(d, "k.cubin")], capture_output=True, text=True)
    if r.returncode != 0:
        first = (r.stderr.replace(src, "k.ptx").strip().splitlines() or ["ptxas failed"])[0]
        return ptx, f"{where}: needs sm_{sm}a: {first}"
    return plain, None
