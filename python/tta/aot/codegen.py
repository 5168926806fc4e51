"""Define a function from source text that tta generated itself.

The kernel DSLs read a kernel's source back through ``inspect``, so a wrapper made at compile
time must have its text registered in ``linecache`` under a unique file name. The source is
always one of tta's templates filled with names it made up and values from the recorded launch,
as torch.fx generates code; nothing from a file, cache or engine ever reaches ``exec``.
"""

from __future__ import annotations

import itertools
import linecache

_counter = itertools.count()


def define(source: str, name: str, scope: dict, label: str):
    """Run ``source`` in ``scope`` under a unique file name and return its function ``name``."""
    filename = f"<tta {label} #{next(_counter)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), scope)
    return scope[name]
