"""The compile ledger: with TTA_COMPILE_LOG=FILE, every kernel the test run really compiles
appends one line to FILE, so scripts/compiled_kernels.py can count compiles per environment and name
any kernel compiled twice (the test command fails on one).

A line is: environment, test, DSL, the kernel's identity, seconds, and whether the test is marked
`compiles_again` (it compiles again on purpose, and says why), all tab-separated.
- Triton: Triton's own compile listener, on cache misses only (a hit compiles nothing); the
  identity is Triton's hash of source, options and toolchain, so two environments with different
  Triton versions never share one.
- cuTile, CuTeDSL: each build of tta's backend (they are compiled on every build); the identity is
  a digest of the compiled artifact, the launch function it came from and the environment.

Forked compile workers inherit the hooks and append to the same file (one short write per line).
Subprocesses a test starts are not in the ledger.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import sys
import time

import pytest

_ENV = os.path.basename(sys.prefix)
_running: pytest.Item | None = None  # the test whose protocol runs now


def running_test() -> pytest.Item | None:
    """The test whose protocol runs now (fixtures of any scope run inside some test's protocol
    and are charged to it); conftest's kernel-compile check reads it too."""
    return _running


def _append(log: str, dsl: str, identity: str, seconds: float) -> None:
    test = _running.nodeid if _running is not None else "(outside a test)"
    again = int(_running is not None and _running.get_closest_marker("compiles_again") is not None)
    with open(log, "a") as f:
        f.write(f"{_ENV}\t{test}\t{dsl}\t{identity}\t{seconds:.3f}\t{again}\n")


def _triton_listener(log: str):
    def heard(*, src, metadata, metadata_group, times, cache_hit):
        if not cache_hit:
            _append(log, "triton", str(metadata.get("hash")), times.total / 1e6)

    return heard


def _logged_build(log: str, name: str, build):
    def logged(*args, **kwargs):
        start = time.perf_counter()
        art = build(*args, **kwargs)
        where = args[4] if len(args) > 4 else kwargs.get("where", "")  # build(plan, sm, max_ptx, config, where)
        identity = hashlib.sha256(f"{sys.prefix}\0{where}\0".encode() + bytes(art.code)).hexdigest()[:16]
        _append(log, name, identity, time.perf_counter() - start)
        return art

    return logged


def pytest_configure(config):
    log = os.environ.get("TTA_COMPILE_LOG")
    if not log:
        return
    try:
        import triton.knobs
    except ImportError:
        pass
    else:
        triton.knobs.compilation.listener = _triton_listener(log)
    import tta.aot.driver as driver

    real_backend = driver.backend

    @functools.cache
    def logged_backend(name):
        b = real_backend(name)
        return b if name == "triton" else dataclasses.replace(b, build=_logged_build(log, name, b.build))

    driver.backend = logged_backend


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    global _running
    _running = item
    try:
        return (yield)
    finally:
        _running = None
