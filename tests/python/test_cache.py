"""The content-addressed compile cache: hits and misses, what the key covers, corruption, and
concurrent writers in several processes."""

from __future__ import annotations

import multiprocessing
import os
import sys
import warnings

import pytest
import torch

from tta.aot import compile as C
from tta.aot import driver
from tta.aot.session import TensorType
from tta.common.cache import Cache, CacheWarning, digest
from tta.declare.specs import triton as triton_spec
from tta.examples.kernels import by_name


@pytest.mark.torch_independent
def test_put_get_roundtrip_and_miss(tmp_path):
    c = Cache(tmp_path)
    key = digest({"a": 1})
    assert c.get(key) is None and c.misses == 1
    c.put(key, {"x": [1, 2, 3]})
    assert Cache(tmp_path).get(key) == {"x": [1, 2, 3]}
    assert digest({"a": 1, "b": 2}) == digest({"b": 2, "a": 1}) != digest({"a": 1, "b": 3})


@pytest.mark.torch_independent
def test_default_dir_follows_env(monkeypatch, tmp_path):
    monkeypatch.setenv("TTA_CACHE_DIR", str(tmp_path / "here"))
    assert Cache().root == tmp_path / "here"
    monkeypatch.delenv("TTA_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert Cache().root == tmp_path / "xdg" / "tta"


@pytest.mark.parametrize("damage", ["flip", "truncate", "key", "garbage"])
@pytest.mark.torch_independent
def test_corrupt_entries_are_detected_warned_and_removed(tmp_path, damage):
    c = Cache(tmp_path)
    key = digest("k")
    p = c.put(key, {"payload": "x" * 100})
    data = bytearray(p.read_bytes())
    if damage == "flip":
        data[-10] ^= 0x01
    elif damage == "truncate":
        data = data[:-5]
    elif damage == "key":
        data = data.replace(key.encode(), digest("other").encode())
    else:
        data = bytearray(b"not a cache entry")
    p.write_bytes(bytes(data))
    with pytest.warns(CacheWarning, match="corrupt entry"):
        assert c.get(key) is None
    assert c.corrupt == 1 and not p.exists()


def _writer(root, worker, rounds):
    c = Cache(root)
    shared = digest("shared")
    bad = 0
    for i in range(rounds):
        c.put(shared, {"worker": worker, "i": i, "blob": "y" * 20000})
        c.put(digest(f"own-{worker}-{i % 3}"), {"worker": worker, "i": i})
        with warnings.catch_warnings():
            warnings.simplefilter("error", CacheWarning)
            try:
                got = c.get(shared)
            except CacheWarning:
                bad += 1
                continue
        if got is None or got["blob"] != "y" * 20000:
            bad += 1
    return bad


@pytest.mark.torch_independent
def test_concurrent_writers_never_expose_partial_entries(tmp_path):
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(4) as pool:
        bad = pool.starmap(_writer, [(str(tmp_path), w, 60) for w in range(4)])
    assert bad == [0, 0, 0, 0]
    c = Cache(tmp_path)
    assert c.get(digest("shared"))["blob"] == "y" * 20000
    assert all(c.get(digest(f"own-{w}-{i}")) is not None for w in range(4) for i in range(3))
    leftovers = [p for p in tmp_path.rglob("*") if p.is_file() and not p.name.endswith(".entry")]
    assert leftovers == []  # temporary files are renamed or removed


def _metas(ex, dt=torch.float16):
    return ex.input_metas(dt)


@pytest.mark.kernels
def test_compile_specs_hits_the_cache_and_keys_cover_inputs(tmp_path, monkeypatch):
    ex = by_name("triton_softmax")
    cache = Cache(tmp_path)
    first = C.compile_specs([ex.spec()], _metas(ex), ex.meta, cache=cache, progress=False)
    assert cache.misses == 2 and cache.hits == 0

    def no_compile(*a, **k):
        if a[0]:
            raise AssertionError("compiled although cached")
        return []

    monkeypatch.setattr(C, "run_tasks", no_compile)
    again = C.compile_specs([ex.spec()], _metas(ex), ex.meta, cache=Cache(tmp_path), progress=False)
    assert again == first

    # Each of these changes the key, so it must compile (and no_compile raises).
    for change in [
        dict(input_metas=_metas(ex, torch.float32)),
        dict(sm=89),
        dict(max_ptx=87),
        dict(pointer_divisibility=16),
    ]:
        kw = dict(input_metas=_metas(ex), output_metas=ex.meta, cache=Cache(tmp_path), progress=False)
        kw.update(change)
        with pytest.raises(AssertionError, match="compiled although cached"):
            C.compile_specs([ex.spec()], **kw)
    from tta.declare.specs import triton as triton_spec

    with pytest.raises(AssertionError, match="compiled although cached"):
        C.compile_specs([triton_spec(ex.launch_fn, [{"BLOCK": 4096}])], _metas(ex), ex.meta, cache=Cache(tmp_path), progress=False)


@pytest.mark.torch_independent
@pytest.mark.kernels
def test_an_edited_kernel_in_another_module_changes_the_key(tmp_path, monkeypatch):
    # The launch function's own text and module stay the same; only the kernel it launches
    # (defined elsewhere, reached through a host function of a third module) is edited.
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "k_launch.py").write_text("import k_host\n\ndef launch(x, out):\n    k_host.run(x, out)\n")
    (tmp_path / "k_host.py").write_text("from k_kernel import kernel\n\ndef run(x, out):\n    kernel(x, out)\n")

    def key() -> str:
        for m in ("k_launch", "k_host", "k_kernel"):
            sys.modules.pop(m, None)
        import k_launch

        task = C.Task(triton_spec(k_launch.launch), {}, [TensorType.dynamic("float32", 1)], [], 90, 90, {})
        return C.task_key(task, {})

    (tmp_path / "k_kernel.py").write_text("def kernel(x, out):\n    return x + 1\n")
    before = key()
    assert key() == before
    (tmp_path / "k_kernel.py").write_text("def kernel(x, out):\n    return x * 2 + 10\n")
    assert key() != before


@pytest.mark.kernels
def test_a_cache_entry_never_decides_what_is_imported(tmp_path, monkeypatch):
    # An entry may name modules (old entries recorded kernel "sources"); loading it must not
    # import them: what runs is what the caller passed.
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "planted_module.py").write_text("raise SystemExit('imported from a cache entry')\n")
    ex = by_name("triton_add_relu")
    spec = triton_spec(ex.launch_fn, [ex.configs[0]])
    cache = Cache(tmp_path / "cache")
    (k,) = C.compile_specs([spec], _metas(ex), ex.meta, cache=cache, progress=False)
    task = C.Task(spec, dict(ex.configs[0]), _metas(ex), ex.meta, 90, 90, {})
    key = C.task_key(task, driver.backend("triton").toolchain())
    planted = k.to_json()
    planted["meta"]["sources"] = {"planted_module:kernel": "0" * 64}
    cache.put(key, {"kernel": planted, "label": "planted"})

    def no_compile(tasks, **kw):
        if tasks:
            raise AssertionError("compiled although cached")
        return []

    monkeypatch.setattr(C, "run_tasks", no_compile)
    (again,) = C.compile_specs([spec], _metas(ex), ex.meta, cache=cache, progress=False)
    assert again.code == k.code and "planted_module" not in sys.modules


@pytest.mark.kernels
def test_corrupt_compiled_entry_is_rebuilt(tmp_path):
    ex = by_name("triton_softmax")
    first = C.compile_specs([ex.spec()], _metas(ex), ex.meta, cache=Cache(tmp_path), progress=False)
    entries = sorted(tmp_path.rglob("*.entry"))
    assert len(entries) == 2
    data = bytearray(entries[0].read_bytes())
    data[len(data) // 2] ^= 0x20
    entries[0].write_bytes(bytes(data))
    c = Cache(tmp_path)
    with pytest.warns(CacheWarning):
        again = C.compile_specs([ex.spec()], _metas(ex), ex.meta, cache=c, progress=False)
    assert again == first and c.corrupt == 1 and c.hits == 1
    assert all(Cache(tmp_path).get(p.stem) is not None for p in tmp_path.rglob("*.entry"))


@pytest.mark.kernels
def test_cached_rebuild_compiles_nothing(tmp_path, monkeypatch):
    """A rebuild is served from the cache alone: every config is a hit and the compiler never
    runs (the timing is the benchmark's job: python -m tta.aot.bench_compile)."""
    ex = by_name("triton_add_relu")
    metas = _metas(ex)
    first = C.compile_specs([ex.spec()], metas, ex.meta, cache=Cache(tmp_path), progress=False)

    def no_compile(tasks, **kw):
        if tasks:
            raise AssertionError("compiled although cached")
        return []

    monkeypatch.setattr(C, "run_tasks", no_compile)
    for _ in range(3):
        cache = Cache(tmp_path)
        assert C.compile_specs([ex.spec()], metas, ex.meta, cache=cache, progress=False) == first
        assert (cache.hits, cache.misses) == (len(ex.configs), 0)


@pytest.mark.kernels
def test_default_cache_dir_is_used(tmp_path, monkeypatch):
    monkeypatch.setenv("TTA_CACHE_DIR", str(tmp_path))
    ex = by_name("triton_softmax")
    C.compile_specs([ex.spec()], _metas(ex), ex.meta, progress=False)
    assert len(list(tmp_path.rglob("*.entry"))) == 2
    assert os.path.isdir(tmp_path / "v1")
