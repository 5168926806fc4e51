"""Finding and running NVIDIA's command-line compilers (``tileiras``, ``ptxas``) for AOT builds.

Why tta runs ``tileiras`` itself instead of letting cuTile do it: cuTile takes the first
``tileiras`` it finds (the ``nvidia-cuda-tileiras`` wheel, then ``PATH``), and the wheel pip
installs next to torch is pinned by torch's ``cuda-toolkit`` version. torch 2.15 pins 13.2, whose
tileiras cannot target sm_90 (Hopper arrived in 13.3). So tta asks cuTile for Tile IR bytecode
(public API) and compiles it with a tileiras that supports the target, looked up in order:

1. ``$TTA_TILEIRAS`` (path to the binary);
2. ``<venv>/toolchains/*/nvidia/cu13/bin/tileiras``: a toolchain installed beside the venv with
   ``pip install --target <venv>/toolchains/cuda-13.4 "nvidia-cuda-tileiras==13.4.*"
   "nvidia-cuda-nvcc==13.4.*" "nvidia-nvvm==13.4.*"`` (tileiras needs ptxas and libnvvm of its
   own version next to it), so torch's pins stay untouched;
3. the ``nvidia-cuda-tileiras`` wheel in the environment, ``PATH``, ``$CUDA_HOME/bin``,
   ``/usr/local/cuda*/bin``.

The first one whose ``--help`` lists the target SM wins. ``ptxas`` is looked up the same way
(``$TTA_PTXAS`` first), the first one that accepts the PTX ISA wins.
"""

from __future__ import annotations

import functools
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

from ..errors import PluginError


def _candidates(tool: str, env_var: str) -> list[str]:
    found = []
    if os.environ.get(env_var):
        found.append(os.environ[env_var])
    for prefix in dict.fromkeys([sys.prefix, os.path.dirname(os.path.dirname(sys.executable))]):
        found += sorted(glob.glob(os.path.join(prefix, "toolchains", "*", "nvidia", "cu13", "bin", tool)), reverse=True)
    try:
        import nvidia.cu13 as cu13  # the pip wheels' layout

        found += [os.path.join(p, "bin", tool) for p in cu13.__path__]
    except ImportError:
        pass
    if shutil.which(tool):
        found.append(shutil.which(tool))
    if os.environ.get("CUDA_HOME"):
        found.append(os.path.join(os.environ["CUDA_HOME"], "bin", tool))
    found += sorted(glob.glob(f"/usr/local/cuda*/bin/{tool}"), reverse=True)
    return [p for p in dict.fromkeys(found) if os.path.isfile(p) and os.access(p, os.X_OK)]


def _run(cmd: list[str], timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


@functools.lru_cache(maxsize=None)
def tool_version(path: str) -> str:
    """``release 13.4, V13.4.92`` -> ``"13.4"``."""
    m = re.search(r"release (\d+)\.(\d+)", _run([path, "--version"], 60).stdout)
    return f"{m.group(1)}.{m.group(2)}" if m else "?"


@functools.lru_cache(maxsize=None)
def _tileiras_targets(path: str) -> frozenset[str]:
    return frozenset(re.findall(r"=(sm_\d+[a-z]?)\b", _run([path, "--help"], 60).stdout))


@functools.lru_cache(maxsize=None)
def tileiras(sm: int) -> str:
    """Path of a tileiras that compiles for ``sm_{sm}``."""
    seen = []
    for path in _candidates("tileiras", "TTA_TILEIRAS"):
        if f"sm_{sm}" in _tileiras_targets(path):
            return path
        seen.append(f"{path} ({tool_version(path)})")
    raise PluginError(
        f"no tileiras that compiles for sm_{sm} was found (tried: {', '.join(seen) or 'none'}); sm_90 needs "
        "tileiras >= 13.3. Install one beside the venv without touching torch's CUDA pins: "
        f'pip install --target {sys.prefix}/toolchains/cuda-13.4 "nvidia-cuda-tileiras==13.4.*" '
        '"nvidia-cuda-nvcc==13.4.*" "nvidia-nvvm==13.4.*", or set TTA_TILEIRAS'
    )


def run_tileiras(path: str, bytecode: bytes, sm: int, opt_level: int) -> bytes:
    """Tile IR bytecode -> CUBIN, with the flags cuTile's own build uses (``--lineinfo`` also makes
    tileiras embed the PTX it generated, which tta reads to check the kernel's ABI)."""
    with tempfile.TemporaryDirectory(prefix="tta-tileiras-") as d:
        src, out = os.path.join(d, "k.bytecode"), os.path.join(d, "k.cubin")
        with open(src, "wb") as f:
            f.write(bytecode)
        r = _run([path, src, "-o", out, "--gpu-name", f"sm_{sm}", f"-O{opt_level}", "--lineinfo"])
        if r.returncode != 0:
            raise PluginError(f"tileiras {tool_version(path)} failed for sm_{sm}: {r.stderr.strip() or r.stdout.strip()}")
        with open(out, "rb") as f:
            return f.read()


def _isa_tuple(v: str) -> tuple[int, int]:
    major, minor = v.split(".")
    return int(major), int(minor)


# The newest PTX ISA each ptxas release reads (CUDA 12.8 -> 8.7, ..., 13.4 -> 9.4).
_PTXAS_ISA = {
    (12, 8): "8.7",
    (12, 9): "8.8",
    (13, 0): "9.0",
    (13, 1): "9.1",
    (13, 2): "9.2",
    (13, 3): "9.3",
    (13, 4): "9.4",
    (13, 5): "9.5",
}


def ptxas(isa: str) -> str:
    """Path of a ptxas that reads PTX ISA ``isa`` ("9.4")."""
    seen = []
    for path in _candidates("ptxas", "TTA_PTXAS"):
        v = tool_version(path)
        reads = _PTXAS_ISA.get(_isa_tuple(v)) if v != "?" else None
        if reads and _isa_tuple(reads) >= _isa_tuple(isa):
            return path
        seen.append(f"{path} ({v})")
    raise PluginError(f"no ptxas that reads PTX ISA {isa} was found (tried: {', '.join(seen) or 'none'}); set TTA_PTXAS")


def find_ptxas(isa: str) -> str | None:
    """Like ``ptxas`` but None when there is none."""
    try:
        return ptxas(isa)
    except PluginError:
        return None


def assemble(ptx: str, sm: int, arch_suffix: str = "a") -> bytes:
    """PTX -> CUBIN for ``sm_{sm}{arch_suffix}`` with a ptxas that reads the PTX's ISA."""
    m = re.search(r"^\s*\.version\s+(\d+\.\d+)", ptx, re.M)
    if not m:
        raise PluginError("the PTX has no .version line")
    path = ptxas(m.group(1))
    with tempfile.TemporaryDirectory(prefix="tta-ptxas-") as d:
        src, out = os.path.join(d, "k.ptx"), os.path.join(d, "k.cubin")
        with open(src, "w") as f:
            f.write(ptx)
        r = _run([path, f"-arch=sm_{sm}{arch_suffix}", "-O3", src, "-o", out])
        if r.returncode != 0:
            raise PluginError(f"ptxas {tool_version(path)} failed for sm_{sm}{arch_suffix}: {r.stderr.strip()}")
        with open(out, "rb") as f:
            return f.read()
