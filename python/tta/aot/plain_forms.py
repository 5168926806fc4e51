"""What ptxas accepted for a plain target (``sm_90``, not ``sm_90a``), kept on disk so that a
kernel made only of forms already accepted needs no second assembly.

Whether an assembler accepts a module for a target follows from the module's instruction forms
(opcodes with all their qualifiers, special registers, entry directives: ``src/ptx/forms.rs``),
so the union of the forms of every module ptxas accepted for a target is accepted too. One file
per (target, assembler, PTX ISA version) in tta's cache folder, one form per line, appended to;
a form is added only after ptxas accepted a module holding it, and a module with any form not
seen yet is assembled, so a wrong answer needs a form ptxas itself accepted. Removing the folder
only costs the second assemblies again.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from ..common.cache import default_dir, digest

_known: dict[Path, set[str]] = {}  # read once per process, then kept in step with our appends


@functools.lru_cache(maxsize=None)
def _assembler(ptxas: str) -> str:
    """The assembler's path, size and time (a new toolkit starts a new record), read once per
    process rather than once per kernel."""
    try:
        st = os.stat(ptxas)
        return f"{os.path.realpath(ptxas)}\0{st.st_size}\0{st.st_mtime_ns}"
    except OSError:
        return ptxas


def record_path(sm: int, ptxas: str, ptx_version: str) -> Path:
    """The record for this target, this assembler and this ISA."""
    key = digest({"ptxas": _assembler(ptxas), "isa": ptx_version})[:24]
    return default_dir() / "plain-target-forms" / f"sm_{sm}-{key}.txt"


def _read(path: Path) -> set[str]:
    try:
        text = path.read_text()
    except OSError:
        return set()
    lines = text.split("\n")
    return set(lines[:-1])  # a last line without its newline may still be being written


def accepted(path: Path, forms: list[str]) -> bool:
    """Whether every form was in a module ptxas accepted for this target."""
    known = _known.get(path)
    if known is None or not known.issuperset(forms):
        known = _known[path] = _read(path)  # another process may have added some
    return known.issuperset(forms)


def add(path: Path, forms: list[str]) -> None:
    """ptxas accepted a module with these forms: record the new ones (best effort)."""
    known = _known.setdefault(path, _read(path))
    new = [f for f in forms if f not in known]
    if not new:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, "".join(f + "\n" for f in new).encode())  # one append: whole lines
        finally:
            os.close(fd)
    except OSError:
        return
    known.update(new)
