"""Where a compile's time goes (tta.aot.phases): nested phases count each second once, a real
compile reports the DSL's own time and tta's, and a cache hit only the cache."""

from __future__ import annotations

import threading
import time

import pytest
import torch

from tta.aot import phases
from tta.aot.compile import compile_specs
from tta.common.cache import Cache
from tta.examples.kernels import by_name


@pytest.mark.torch_independent
def test_nested_phases_count_each_second_once_in_the_innermost():
    with phases.timing() as times:
        with phases.phase("outer"):
            time.sleep(0.02)
            with phases.phase("inner"):
                time.sleep(0.05)
            time.sleep(0.02)
        with phases.phase("inner"):
            time.sleep(0.01)
    assert set(times) == {"outer", "inner"}
    assert 0.035 <= times["outer"] < 0.055 and 0.055 <= times["inner"] < 0.08
    assert phases.own_share({"dsl": 3.0, "record": 1.0}) == 0.25 and phases.own_share({}) == 0.0


@pytest.mark.torch_independent
def test_phases_outside_a_timing_and_in_other_threads_are_not_counted():
    with phases.phase("nobody"):  # no timing open: nothing to fill, nothing raised
        pass

    def elsewhere():
        with phases.phase("elsewhere"):
            pass

    with phases.timing() as times:
        other = threading.Thread(target=elsewhere)
        other.start()
        other.join()
        with phases.phase("here"):
            pass
    assert list(times) == ["here"]


@pytest.mark.kernels
def test_a_cold_compile_splits_into_tta_and_the_dsl_and_a_hit_is_only_the_cache(tmp_path):
    ex = by_name("triton_add_relu")
    timed: list = []
    compile_specs([ex.spec()], ex.input_metas(torch.float16), ex.meta, cache=Cache(tmp_path), pool="serial", progress=False, timings=timed)
    assert len(timed) == len(ex.spec().config_dicts())
    for task in timed:
        assert {"session", "record", "dsl", "read back", "cache"} <= set(task.times), task.times
        assert all(v >= 0 for v in task.times.values()) and 0 < phases.own_share(task.times) < 1
    hits: list = []
    compile_specs([ex.spec()], ex.input_metas(torch.float16), ex.meta, cache=Cache(tmp_path), pool="serial", progress=False, timings=hits)
    assert [set(t.times) for t in hits] == [{"cache"}] * len(timed)
