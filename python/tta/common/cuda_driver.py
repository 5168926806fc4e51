"""The installed CUDA driver and the newest PTX ISA it JIT-compiles: the default PTX ceiling of
``tta.compile`` and what ``tta doctor`` reports (``driver_ptx_cap``, one function for both).

The driver is asked through ``libcuda``'s ``cuDriverGetVersion`` with ctypes: it needs no GPU,
no CUDA context and no cuda-python, and answers on a machine whose GPU is busy or absent as long
as the driver library is installed. The ISA for a driver version comes from the Rust core's
table (``src/ptx/isa.rs``); a driver newer than the table accepts at least the newest ISA the
table knows.
"""

from __future__ import annotations

import ctypes
import functools
from dataclasses import dataclass

# Without a driver to ask (a build machine): CUDA 13.0's ISA, tta's long-standing default.
DEFAULT_MAX_PTX = 90

_LIBCUDA = ("libcuda.so.1", "libcuda.so", "nvcuda.dll")


def driver_version() -> str | None:
    """The CUDA version of the installed driver ("13.0"), None when no driver library loads."""
    for name in _LIBCUDA:
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        v = ctypes.c_int(0)
        try:
            rc = lib.cuDriverGetVersion(ctypes.byref(v))
        except AttributeError:  # not a CUDA driver library
            continue
        if rc == 0 and v.value > 0:
            return f"{v.value // 1000}.{(v.value % 1000) // 10}"
    return None


@dataclass(frozen=True)
class PtxCap:
    """The PTX ceiling: ``option`` in Triton's spelling (90 = ISA 9.0), the driver it follows
    (None: no driver found) and the sentence that says why."""

    option: int
    driver: str | None
    why: str
    problem: bool = False  # a driver tta cannot serve (older than CUDA 11.0, unreadable)

    @property
    def isa(self) -> str:
        return f"{self.option // 10}.{self.option % 10}"


def cap_for_driver(driver: str | None) -> PtxCap:
    """The ceiling a driver of this CUDA version ("13.0") sets; None: no driver."""
    from . import bridge as core

    if driver is None:
        return PtxCap(DEFAULT_MAX_PTX, None, f"no CUDA driver found: PTX ISA {DEFAULT_MAX_PTX / 10:.1f} (CUDA 13.0's)")
    try:
        major, minor = (int(p) for p in driver.split(".")[:2])
    except ValueError:
        return PtxCap(DEFAULT_MAX_PTX, driver, f"driver version {driver!r} unreadable: PTX ISA {DEFAULT_MAX_PTX / 10:.1f}", True)
    exact = core.max_isa_for_driver(f"{major}.{minor}")
    if exact is not None:
        return PtxCap(_option(exact), driver, f"the CUDA {driver} driver JIT-compiles PTX ISA up to {exact}")
    # Newer than the table: it accepts whatever the newest driver the table knows accepts.
    for m in range(major, 10, -1):
        for n in range(minor if m == major else 9, -1, -1):
            known = core.max_isa_for_driver(f"{m}.{n}")
            if known is not None:
                return PtxCap(
                    _option(known), driver, f"the CUDA {driver} driver is newer than tta's table: PTX ISA {known} (CUDA {m}.{n}'s)"
                )
    return PtxCap(DEFAULT_MAX_PTX, driver, f"the CUDA {driver} driver is older than CUDA 11.0, which tta does not support", True)


@functools.lru_cache(maxsize=1)
def driver_ptx_cap() -> PtxCap:
    """The PTX ceiling this machine's driver sets (asked once per process)."""
    return cap_for_driver(driver_version())


def _option(isa: str) -> int:
    major, minor = isa.split(".")
    return int(major) * 10 + int(minor)
