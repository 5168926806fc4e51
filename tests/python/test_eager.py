"""Eager execution: the example Triton kernels are correct (Triton's interpreter on CPU tensors,
against the torch reference), and tta's eager launch never runs on CPU tensors."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from tta.examples.kernels import by_name, examples
from tta.runtime import eager

# Runs in a child process: TRITON_INTERPRET must be set before triton is imported (the @jit
# decorator picks the interpreter at definition time).
_INTERPRET = r"""
import json, sys, torch
from tta.examples.kernels import examples
rows = []
# Library kernels (Liger's) take floats the interpreter cannot bind: test_kernel_forms.py runs them.
for ex in [e for e in examples(("triton",)) if not e.requires]:
    for dt in ex.dtypes:
        for shape in ex.test_shapes:
            spec = ex.spec()
            for cfg in spec.config_dicts():
                ins = ex.make_inputs(shape, dt, "cpu")
                ref = ex.reference(*ins)
                refs = ref if isinstance(ref, tuple) else (ref,)
                outs = [torch.empty(r.shape, dtype=r.dtype) for r in refs]
                tuner = None
                if spec.autotuned:  # run each of the decorator's configs: one config skips benchmarking
                    import triton
                    tuner = next(o for o in vars(sys.modules[ex.launch_fn.__module__]).values() if isinstance(o, triton.runtime.Autotuner))
                    saved, tuner.configs = tuner.configs, [c for c in tuner.configs if ex.spec().config_dicts()[tuner.configs.index(c)] == cfg]
                try:
                    ex.launch_fn(*ins, *outs, **spec.launch_kwargs(cfg))
                except AssertionError:
                    rows.append([ex.name, str(dt), list(shape), cfg, None, "guard"])
                    continue
                finally:
                    if tuner is not None:
                        tuner.configs = saved
                errs = [ex.compare(o, r) for o, r in zip(outs, refs)]
                rows.append([ex.name, str(dt), list(shape), cfg, max(e for e, _ in errs), all(ok for _, ok in errs)])
print(json.dumps(rows))
"""


@pytest.fixture(scope="module")
def interpreted():
    env = dict(os.environ, TRITON_INTERPRET="1")
    r = subprocess.run([sys.executable, "-c", _INTERPRET], env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_examples_match_torch_under_the_interpreter(interpreted):
    names = {ex.name for ex in examples(("triton",)) if not ex.requires}
    assert {row[0] for row in interpreted} == names
    failures = [row for row in interpreted if row[5] is False]
    assert failures == []
    ran = [row for row in interpreted if row[5] is True]
    # Every example, dtype and size ran with at least one config (guards skip too-long rows).
    assert {(r[0], r[1], tuple(r[2])) for r in ran} == {
        (ex.name, str(dt), tuple(s)) for ex in examples(("triton",)) if not ex.requires for dt in ex.dtypes for s in ex.test_shapes
    }


def test_interpreter_run_checks_something(interpreted):
    # The comparison is not vacuous: every run measured an error against torch, the guards
    # skipped only a few configs, and some outputs differ from torch's by rounding.
    ran = [r for r in interpreted if r[5] != "guard"]
    assert ran and all(isinstance(r[4], float) for r in ran)
    assert len(ran) > len(interpreted) - len(ran)
    assert any(r[4] > 0 for r in ran)


@pytest.mark.torch_independent
def test_eager_launch_never_runs_on_cpu():
    ex = by_name("triton_add_relu")
    plugin = ex.plugin()
    x, y = ex.make_inputs((4, 8), torch.float32, "cpu")
    assert eager.launch(plugin, [x, y]) is None
    assert eager.launch(plugin, [x, 3]) is None


@pytest.mark.torch_independent
def test_eager_falls_back_when_no_backend_is_installed(monkeypatch):
    ex = by_name("triton_add_relu")
    monkeypatch.setattr(eager, "installed", lambda backend: False)
    assert eager.launch(ex.plugin(), [torch.ones(2)]) is None
