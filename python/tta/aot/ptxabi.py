"""Thin Python face of the Rust PTX module (``src/lowering/ptx``): the QDP ABI rewrite and the
PTX facts the backends and tests need. No PTX text is edited in Python."""

from __future__ import annotations

import json
from typing import Sequence

from .. import _core
from ..errors import PluginError


def isa_text(ptx_option: int) -> str:
    """Triton's ``ptx_version`` spelling to the PTX ``.version`` one: 90 -> "9.0"."""
    return f"{ptx_option // 10}.{ptx_option % 10}"


def parse(ptx: str) -> dict:
    """Header and entries (``{"version", "target", "entries": [{"name", "params", "reqntid"...}]}``)."""
    return json.loads(_core.ptx_parse(ptx))


def entry(ptx: str, name: str) -> dict:
    for e in parse(ptx)["entries"]:
        if e["name"] == name:
            return e
    raise KeyError(name)


def max_ptx_for_driver(cuda: str) -> int | None:
    """Newest ISA a CUDA driver JITs, in Triton's spelling ("13.0" -> 90)."""
    v = _core.ptx_max_isa_for_driver(cuda)
    if v is None:
        return None
    major, minor = v.split(".")
    return int(major) * 10 + int(minor)


def to_qdp_abi(
    ptx: str,
    *,
    entry: str,
    user_params: int,
    permutation: Sequence[int],
    slots: tuple[int, int, int],
    scratch_sizes: Sequence[int] = (),
    max_ptx: int | None = None,
    where: str = "",
) -> tuple[str, str]:
    """Drop trailing scratch params (refused unless their sizes are 0), reorder the rest to
    (inputs, extras, outputs), check every slot's kind, check ``.version`` <= ``max_ptx``.
    Returns (ptx, version)."""
    if len(permutation) != user_params:
        raise PluginError(f"{where}: parameter order has {len(permutation)} entries for {user_params} parameters")
    spec = {
        "entry": entry,
        "trailing_scratch": list(scratch_sizes),
        "order": list(permutation),
        "slots": {"inputs": slots[0], "extras": slots[1], "outputs": slots[2]},
    }
    if max_ptx is not None:
        spec["max_version"] = isa_text(max_ptx)
    try:
        out = json.loads(_core.ptx_to_qdp_abi(ptx, json.dumps(spec)))
    except _core.CoreError as e:
        raise PluginError(f"{where}: the compiled PTX does not fit TensorRT's AOT launch: {e.args[1]}") from e
    return out["ptx"], parse(out["ptx"])["version"]


def plain_target(ptx: str, sm: int, ptxas: str | None, where: str = "") -> tuple[str, str | None]:
    """The PTX with ``.target sm_90a`` made ``sm_90`` when the kernel needs nothing
    arch-specific, which is when ``ptxas`` (the assembler the kernel was compiled with)
    assembles it for the plain target. Otherwise the PTX is unchanged and the second value says
    why the suffix stays. Plain targets also JIT-compile on later GPUs; ``sm_90a`` loads only on
    sm_90."""
    import os
    import subprocess
    import tempfile

    plain = _core.ptx_drop_arch_suffix(ptx)
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
