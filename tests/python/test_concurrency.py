"""Concurrent use: threads rewriting one ExportedProgram, and processes rewriting and compiling
the same model against one compile cache, give the results a single caller gets."""

from __future__ import annotations

import collections
import concurrent.futures as cf
import itertools
import multiprocessing
import os
import threading
from pathlib import Path

import concurrency_model as cm
import pytest

import tta
from tta.common.cache import Cache
from tta.runtime import ops

_tags = itertools.count()


def test_threads_rewriting_one_program_agree_and_register_each_op_once(monkeypatch):
    fused, rms = cm.plugins(f"_threads{next(_tags)}")  # ops no other test registered
    ep = cm.export(cm.Model(fused, rms))
    defined: collections.Counter = collections.Counter()
    real_define = ops._lib.define

    def counting_define(schema, *args, **kwargs):
        defined[schema.split("(")[0]] += 1
        return real_define(schema, *args, **kwargs)

    monkeypatch.setattr(ops._lib, "define", counting_define)
    threads, rounds = 8, 4
    start = threading.Barrier(threads)

    def work():
        start.wait()
        return [cm.fingerprint(tta.rewrite(ep)) for _ in range(rounds)]

    with cf.ThreadPoolExecutor(threads) as ex:
        results = [f.result(timeout=600) for f in [ex.submit(work) for _ in range(threads)]]
    serial = tta.rewrite(ep)
    assert [r.status for r in serial.regions] == ["outlined"] * 4
    flat = [fp for per_thread in results for fp in per_thread]
    assert len(flat) == threads * rounds
    assert all(fp == cm.fingerprint(serial) for fp in flat)
    assert dict(defined) == {r.op: 1 for r in serial.regions}


@pytest.mark.kernels
@pytest.mark.compiles_again  # eight threads miss one empty cache at once: each compiles every kernel
def test_threads_compiling_at_once_agree_and_store_one_entry_per_kernel(tmp_path):
    fused, rms = cm.plugins()
    result = tta.rewrite(cm.export(cm.Model(fused, rms)))
    threads = 8
    start = threading.Barrier(threads)

    def work():
        start.wait()
        kernels = result.compile_kernels(sm=90, cache=Cache(tmp_path), pool="serial", progress=False)
        return cm.kernel_digests(kernels)

    with cf.ThreadPoolExecutor(threads) as ex:
        digests = [f.result(timeout=900) for f in [ex.submit(work) for _ in range(threads)]]
    assert all(d == digests[0] for d in digests)
    assert sorted(len(v) for v in digests[0].values()) == [1, 2]
    entries = sorted(tmp_path.rglob("*.entry"))
    assert len(entries) == 3 and not list(tmp_path.rglob("*.tmp"))
    assert all(Cache(tmp_path).get(p.stem) is not None for p in entries)


def _rewrite_and_compile(cache_dir: str) -> tuple:
    """One process's whole job (runs in a spawned child)."""
    os.environ["TTA_CACHE_DIR"] = cache_dir
    os.environ["TTA_COMPILE_POOL"] = "serial"
    fused, rms = cm.plugins()
    result = tta.rewrite(cm.export(cm.Model(fused, rms)))
    return cm.fingerprint(result), cm.kernel_digests(result.compile_kernels(sm=90))


@pytest.mark.kernels
def test_processes_rewriting_and_compiling_share_one_cache(tmp_path):
    cache_dir = str(tmp_path / "cache")
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(4) as pool:
        results = pool.map_async(_rewrite_and_compile, [cache_dir] * 4).get(timeout=900)
    assert all(r == results[0] for r in results)
    fingerprint, kernels = results[0]
    assert [status for _, status, _, _ in fingerprint[0]] == ["outlined"] * 4
    # Two ops (add+ReLU with two configs, RMSNorm with one): three kernels, one entry each,
    # every entry whole, no temporary file left behind.
    assert sorted(len(v) for v in kernels.values()) == [1, 2]
    entries = sorted(Path(cache_dir).rglob("*.entry"))
    assert len(entries) == 3
    assert all(Cache(cache_dir).get(p.stem) is not None for p in entries)
    assert not list(Path(cache_dir).rglob("*.tmp"))
