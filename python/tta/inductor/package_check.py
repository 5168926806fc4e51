"""Does an AOTInductor package carry its own copy of libstdc++?

A ``wrapper.so`` that does not need ``libstdc++.so.6`` yet defines libstdc++'s own symbols had the
C++ runtime linked in statically (seen on the GPU machine, for every package torch built there,
though its plain ``g++ -shared`` links ``libstdc++.so.6``). Loaded
into a process where torch has already loaded ``libstdc++.so.6``, calls through the PLT bind to
that library while the code inlined into the package uses its own, never initialised copies of the
runtime's statics: ``aoti_load_package`` crashed in the model's constructor on every such package
(docs/verification.md). ``tta.aot_compile`` links such a package again (``shared_libstdcxx.py``) and
warns when that did not help.

Only the ELF dynamic section and dynamic symbol table are read (64-bit little-endian, as x86-64
and aarch64 Linux build them); anything else is reported as not checkable, never guessed.
"""

from __future__ import annotations

import struct
import zipfile
from dataclasses import dataclass

# A symbol only libstdc++ itself defines: std::locale::classic().
_LIBSTDCXX_OWN_SYMBOL = b"_ZNSt6locale7classicEv"
_SHT_DYNSYM, _SHT_DYNAMIC = 11, 6
_DT_NEEDED, _DT_NULL = 1, 0


@dataclass(frozen=True)
class SharedObject:
    needed: tuple[str, ...]
    defines_libstdcxx: bool

    @property
    def private_libstdcxx(self) -> bool:
        return self.defines_libstdcxx and not any(n.startswith("libstdc++") for n in self.needed)


def read_shared_object(data: bytes) -> SharedObject | None:
    """The libraries an ELF shared object needs and whether it defines libstdc++'s own symbols;
    None where the bytes are not a 64-bit little-endian ELF file this reader understands."""
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return None
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    if shentsize != 64 or shoff + shnum * 64 > len(data):
        return None
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * 64) for i in range(shnum)]

    def strtab(index: int) -> bytes:
        if not 0 <= index < shnum:
            return b""
        _, _, _, _, off, size, *_ = sections[index]
        return data[off : off + size]

    def string(table: bytes, at: int) -> bytes:
        end = table.find(b"\0", at)
        return table[at : end if end >= 0 else len(table)]

    needed: list[str] = []
    defines = False
    for _name, kind, _flags, _addr, off, size, link, _info, _align, entsize in sections:
        if off + size > len(data):
            return None
        if kind == _SHT_DYNAMIC:
            names = strtab(link)
            for at in range(off, off + size - 15, 16):
                tag, value = struct.unpack_from("<qQ", data, at)
                if tag == _DT_NULL:
                    break
                if tag == _DT_NEEDED:
                    needed.append(string(names, value).decode("utf-8", "replace"))
        elif kind == _SHT_DYNSYM and entsize == 24:
            names = strtab(link)
            for at in range(off, off + size - 23, 24):
                name, _sinfo, _other, shndx = struct.unpack_from("<IBBH", data, at)
                if shndx != 0 and string(names, name) == _LIBSTDCXX_OWN_SYMBOL:  # defined here
                    defines = True
    return SharedObject(tuple(needed), defines)


def libraries_with_private_libstdcxx(package_path: str) -> list[str]:
    """The shared objects inside an AOTInductor ``.pt2`` that carry their own libstdc++."""
    found = []
    with zipfile.ZipFile(package_path) as z:
        for name in z.namelist():
            if name.endswith(".so"):
                so = read_shared_object(z.read(name))
                if so is not None and so.private_libstdcxx:
                    found.append(name)
    return found
