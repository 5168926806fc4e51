"""compile.py: dispatch by backend, parallel compiles equal serial ones, progress on stderr,
and compile_plugin's output-shape sources."""

from __future__ import annotations

import pytest
import torch

from tta.aot import compile as C
from tta.aot import driver
from tta.aot.session import TensorType
from tta.errors import PluginError
from tta.examples.kernels import by_name


def _tasks():
    out = []
    for name in ("triton_add_relu", "triton_softmax"):
        ex = by_name(name)
        for cfg in ex.spec().config_dicts():
            out.append(C.Task(ex.spec(), cfg, ex.input_metas(torch.float16), ex.meta, 90, 90, {}))
    return out


@pytest.mark.parametrize("pool", ["thread", "process"])
@pytest.mark.kernels
def test_parallel_compile_equals_serial(pool, capsys):
    tasks = _tasks()
    serial = C.run_tasks(tasks, pool="serial", progress=False)
    parallel = C.run_tasks(tasks, jobs=2, pool=pool, progress=True)
    assert [k.code for k in parallel] == [k.code for k in serial]
    assert parallel == serial
    err = capsys.readouterr().err
    assert err.count("tta: compiled") == len(tasks) and f"{len(tasks)}/{len(tasks)}" in err


@pytest.mark.kernels
def test_errors_in_worker_processes_reach_the_caller():
    ex = by_name("triton_softmax")
    bad = C.Task(
        ex.spec(), {"BLOCK": 1024}, [TensorType.dynamic(torch.float16, 2)], lambda x: x.new_empty(x.shape), 90, 90, {"nonsense": 1}
    )
    with pytest.raises(PluginError, match="unknown Triton compile options"):
        C.run_tasks([bad, bad], jobs=2, pool="process", progress=False)


@pytest.mark.torch_independent
def test_unknown_backend():
    with pytest.raises(PluginError, match="unknown kernel backend"):
        driver.backend("cuda_c")


@pytest.mark.kernels
def test_compile_plugin_uses_meta_impl_or_output_metas():
    ex = by_name("triton_add_relu")
    plugin = ex.plugin()
    metas = ex.input_metas(torch.float32)
    ks = C.compile_plugin(plugin, metas, cache=False, progress=False)
    assert [k.output_shapes for k in ks] == [(("i0_0", "i0_1"),)] * 2
    # Explicit output metas (as the TensorRT adapter has them from the graph) give the same kernels.
    ks2 = C.compile_plugin(plugin, metas, output_metas=[TensorType.make(torch.float32, ("i0_0", "i0_1"))], cache=False, progress=False)
    assert [k.code for k in ks2] == [k.code for k in ks]
    import tta

    no_meta = tta.custom_plugin(kernel=[ex.spec()], name="no_meta")
    with pytest.raises(PluginError, match="meta_impl or pass output_metas"):
        C.compile_plugin(no_meta, metas, cache=False)


@pytest.mark.kernels
def test_conformance_runner_plumbing_without_a_gpu(tmp_path):
    """The isolated runner (one child process per backend, rows streamed back) reports every
    case of the manifest; on a machine without a GPU each one is an error saying why."""
    from tta.aot.base import write_manifest
    from tta.tools.gpu import conformance

    ex = by_name("triton_softmax")
    ks = C.compile_specs([ex.spec()], ex.input_metas(torch.float32), ex.meta, cache=False, progress=False)
    for k in ks:
        k.meta.update(example=ex.name, dtype="float32", test_shapes=[[3, 5], [4, 7]])
    write_manifest(str(tmp_path / "m.json"), ks)
    rows = conformance.run_isolated(str(tmp_path / "m.json"), timeout=300)
    names = ["triton_softmax[BLOCK=1024]", "triton_softmax[BLOCK=2048,num_warps=8]"]
    if torch.cuda.is_available():
        assert [r.kernel for r in rows] == [names[0]] * 2 + [names[1]] * 2
        assert all(r.status == "pass" for r in rows)
    else:  # loading fails once per kernel, and the row says why
        assert [r.kernel for r in rows] == names
        assert all(r.status == "error" and r.note for r in rows)
    md = conformance.markdown(rows)
    assert md.count("\n") == len(rows) + 2


@pytest.mark.kernels
def test_requests_of_several_plugins_compile_in_one_pool_and_a_shared_task_once(monkeypatch, tmp_path):
    from tta.common.cache import Cache

    pools = []
    real = C.run_tasks
    monkeypatch.setattr(C, "run_tasks", lambda tasks, *a, **kw: pools.append(len(tasks)) or real(tasks, *a, **kw))
    add, soft = by_name("triton_add_relu"), by_name("triton_softmax")
    requests = [
        C.Request([ex.spec()], ex.input_metas(torch.float16), ex.meta)
        for ex in (add, soft, add)  # the third repeats the first
    ]
    timed: list = []
    got = C.compile_requests(requests, cache=Cache(tmp_path), pool="serial", progress=False, timings=timed)
    n_add, n_soft = len(add.spec().config_dicts()), len(soft.spec().config_dicts())
    assert [len(ks) for ks in got] == [n_add, n_soft, n_add] and pools == [n_add + n_soft]
    assert got[2] == got[0]
    assert [bool("dsl" in t.times) for t in timed] == [True] * (n_add + n_soft) + [False] * n_add
    # Each request alone, through the cache the batch filled: the same kernels, nothing compiled.
    assert [C.compile_specs(r.specs, r.input_metas, r.output_metas, cache=Cache(tmp_path)) for r in requests] == got
    assert pools == [n_add + n_soft, 0, 0, 0]


@pytest.mark.kernels
def test_a_rewrites_plugins_compile_in_one_pool(monkeypatch, tmp_path):
    import tta
    from tta.common.cache import Cache
    from tta.tools.gpu.models import RMSNORM, SWIGLU, LlamaBlock

    pools = []
    real = C.run_tasks
    monkeypatch.setattr(C, "run_tasks", lambda tasks, *a, **kw: pools.append(len(tasks)) or real(tasks, *a, **kw))
    x = torch.randn(2, 8, 64, dtype=torch.float16)
    result = tta.rewrite(torch.export.export(LlamaBlock(64, 4, 128).eval().half(), (x,)))
    kernels = result.compile_kernels(cache=Cache(tmp_path), pool="serial", progress=False)
    n = {p.name: sum(len(s.config_dicts()) for s in p.kernels) for p in (RMSNORM, SWIGLU)}
    assert sorted(len(ks) for ks in kernels.values()) == sorted(n.values())  # the two RMSNorms share one op
    assert pools == [sum(n.values())]


@pytest.mark.parametrize("pool", ["thread", "process"])
@pytest.mark.kernels
@pytest.mark.compiles_again  # an empty Triton cache of its own, on purpose: without the lock both workers would miss it
def test_tactics_that_compile_to_one_kernel_compile_it_once(pool, tmp_path, monkeypatch):
    # ROWS only changes the grid, so these four tactics are one Triton kernel; two workers start
    # on two of them at once, and without a lock both would miss Triton's cache.
    import triton
    import triton.knobs

    import tta.declare.specs as specs

    log = tmp_path / "misses"
    before = triton.knobs.compilation.listener

    def heard(**kw):
        if not kw["cache_hit"]:
            with open(log, "a") as f:  # forked workers write here too
                f.write(kw["metadata"]["hash"] + "\n")
        if before is not None:
            before(**kw)

    monkeypatch.setattr(triton.knobs.compilation, "listener", heard)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))  # the knob reads it
    ex = by_name("triton_rmsnorm")
    spec = specs.triton(ex.launch_fn, configs=[{"BLOCK": 1024, "ROWS": r} for r in (1, 2, 4, 8)])
    ks = C.compile_specs([spec], ex.input_metas(torch.float16), ex.meta, cache=False, jobs=2, pool=pool, progress=False)
    assert len(log.read_text().split()) == 1
    assert len({k.code for k in ks}) == 1 and len({k.grid for k in ks}) == 4


@pytest.mark.torch_independent
def test_a_lock_that_cannot_be_taken_lets_the_work_run(tmp_path):
    from tta.common import filelock

    with filelock.held(tmp_path / "locks" / "a.lock") as taken:
        assert taken and (tmp_path / "locks" / "a.lock").exists()
    (tmp_path / "file").write_text("")
    with filelock.held(tmp_path / "file" / "a.lock") as taken:  # its folder is a file
        assert not taken
