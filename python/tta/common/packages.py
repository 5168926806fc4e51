"""Installed distributions and the version pins one declares on another, read from the
installed metadata (``importlib.metadata``), never by importing the package."""

from __future__ import annotations

import importlib.metadata as md
import importlib.util


def version_of(*dists: str) -> tuple[str, str] | None:
    """(distribution, version) of the first of ``dists`` that is installed, else None."""
    for d in dists:
        try:
            return d, md.version(d)
        except md.PackageNotFoundError:
            continue
    return None


def module_present(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _norm(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def pins(dist: str, *deps: str, prefix: bool = False) -> list[str]:
    """The requirements ``dist`` declares on ``deps`` (by normalised name, or every name starting
    with one of them when ``prefix``) that apply on this platform, as written ("torch<2.15,>=2.14").
    Requirements of extras are left out."""
    try:
        reqs = md.requires(dist) or []
    except md.PackageNotFoundError:
        return []
    wanted = [_norm(d) for d in deps]
    out = []
    for text in reqs:
        req = _requirement(text)
        if req is None:
            continue
        name = _norm(req.name)
        if not any(name.startswith(w) if prefix else name == w for w in wanted):
            continue
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        out.append(f"{req.name}{req.specifier}")
    return out


def fits(version: str, pin: str) -> bool | None:
    """Whether ``version`` satisfies the specifier of ``pin`` ("torch>=2.14,<2.15"); None when
    it cannot be told (no ``packaging``, an unreadable version)."""
    req = _requirement(pin)
    if req is None:
        return None
    try:
        return req.specifier.contains(version, prereleases=True)
    except Exception:  # packaging.version.InvalidVersion and relatives
        return None


def _requirement(text: str):
    try:
        from packaging.requirements import InvalidRequirement, Requirement
    except ImportError:
        return None
    try:
        return Requirement(text)
    except InvalidRequirement:
        return None
