"""Content-addressed on-disk cache of compiled kernels.

A key is the sha256 of everything that decides the compiled bytes: the kernel and launch
source, the config, the input/output dtypes and shapes, the target SM and PTX ceiling, and the
toolchain versions (see ``aot/compile.py``). Entries live in ``$TTA_CACHE_DIR`` (default
``~/.cache/tta``) as ``v1/<key[:2]>/<key>.entry``:

    {"format": "tta-cache", "version": 1, "key": ..., "sha256": ..., "size": ...}\\n<payload>

The header's sha256 covers the payload bytes and is checked on every load, so a truncated or
corrupted entry is never used: it is reported with a warning, removed and compiled again.

Writes go to a temporary file in the same directory, are fsynced, then ``os.replace``d into
place: a reader sees the old entry, the new one, or none, never half of one. Two processes that
miss on the same key both compile and both write equal content; the later replace wins.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any

FORMAT = "tta-cache"
VERSION = 1


def default_dir() -> Path:
    env = os.environ.get("TTA_CACHE_DIR")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tta"


def digest(parts: Any) -> str:
    """sha256 of a JSON-able description (key order does not matter)."""
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


class CacheWarning(UserWarning):
    pass


class Cache:
    """A directory of entries; ``get``/``put`` JSON payloads by key."""

    def __init__(self, root: str | os.PathLike | None = None):
        self.root = Path(root) if root is not None else default_dir()
        self.hits = 0
        self.misses = 0
        self.corrupt = 0

    def path(self, key: str) -> Path:
        if len(key) < 8 or not all(c in "0123456789abcdef" for c in key):
            raise ValueError(f"cache key {key!r} is not a hex digest")
        return self.root / f"v{VERSION}" / key[:2] / f"{key}.entry"

    def get(self, key: str) -> dict | None:
        """The payload stored under ``key``, or None (missing, or corrupt: warned and removed)."""
        p = self.path(key)
        try:
            data = p.read_bytes()
        except FileNotFoundError:
            self.misses += 1
            return None
        problem = _check(data, key)
        if problem is None:
            nl = data.index(b"\n")
            try:
                payload = json.loads(data[nl + 1 :])
            except ValueError as e:
                problem = f"payload is not JSON ({e})"
            else:
                self.hits += 1
                return payload
        self.corrupt += 1
        self.misses += 1
        warnings.warn(f"tta cache: ignoring corrupt entry {p} ({problem}); it will be rebuilt", CacheWarning, stacklevel=2)
        try:
            p.unlink()
        except OSError:
            pass
        return None

    def put(self, key: str, payload: dict) -> Path:
        body = json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()
        header = {"format": FORMAT, "version": VERSION, "key": key, "sha256": hashlib.sha256(body).hexdigest(), "size": len(body)}
        data = json.dumps(header, sort_keys=True).encode() + b"\n" + body
        p = self.path(key)
        p.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{key[:16]}.", suffix=".tmp", dir=p.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, p)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        return p

    def clear(self) -> int:
        n = 0
        for p in (self.root / f"v{VERSION}").glob("*/*.entry"):
            p.unlink(missing_ok=True)
            n += 1
        return n


def _check(data: bytes, key: str) -> str | None:
    nl = data.find(b"\n")
    if nl < 0:
        return "no header"
    try:
        header = json.loads(data[:nl])
    except ValueError:
        return "header is not JSON"
    if not isinstance(header, dict) or header.get("format") != FORMAT or header.get("version") != VERSION:
        return "not a tta cache entry of this version"
    if header.get("key") != key:
        return f"stored under the wrong key ({header.get('key')})"
    body = data[nl + 1 :]
    if header.get("size") != len(body):
        return f"size {len(body)} != {header.get('size')} (truncated?)"
    if hashlib.sha256(body).hexdigest() != header.get("sha256"):
        return "sha256 mismatch"
    return None
