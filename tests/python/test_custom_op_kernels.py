"""The ``tta.custom_op`` example ops (``tta.examples.custom_ops``) compute what they claim: each
case's launch function (called as a plugin calls it: inputs in schema order, outputs, config and
the op's other arguments as keywords) under Triton's interpreter on CPU tensors, against the
case's reference and the op's own eager implementation."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

# TRITON_INTERPRET must be set before triton is imported: a child process.
_INTERPRET = r"""
import importlib.util, json, sys, torch
# Where Torch-TensorRT is installed (.venv-torch2.14), tta.trt imports it, which needs TensorRT's
# native library: put the project's stand-in for it in place first, as the TensorRT tests do.
if importlib.util.find_spec("torch_tensorrt") is not None:
    sys.path.insert(0, sys.argv[1])
    import trt_standin
    trt_standin.install()
from tta.examples import custom_ops as co
from tta.trt.custom_op_schema import signature

rows = []
for case in co.CASES:
    sig = signature(case.op)
    for dt in case.dtypes:
        for shape in case.test_shapes:
            ins = case.make_inputs(shape, dt, "cpu")
            ref = case.reference(*ins)
            refs = list(ref) if isinstance(ref, tuple) else [ref]
            outs = [torch.empty(r.shape, dtype=r.dtype) for r in refs]
            for cfg in case.configs:
                case.launch(*ins, *outs, **cfg, **case.values)
                kernel_ok = all(o.dtype == r.dtype and torch.allclose(o.float(), r.float(), atol=1e-5, rtol=1e-5) for o, r in zip(outs, refs))
                # The op's eager impl, called by schema names, agrees with the reference.
                tensors = iter(ins)
                kwargs = {a.name: next(tensors) for a in sig.tensors}
                kwargs.update(case.values)
                got = sig.overload(**kwargs)
                got = list(got) if isinstance(got, tuple) else [got]
                op_ok = all(torch.allclose(g.float(), r.float(), atol=1e-5, rtol=1e-5) for g, r in zip(got, refs))
                err = max(float((o.float() - r.float()).abs().max()) for o, r in zip(outs, refs))
                rows.append([case.name, list(shape), kernel_ok, op_ok, err])
# The triton_op runs its own kernel (wrap_triton) eagerly; older torch's wrap_triton refuses
# interpreted kernels, so there its launch function runs the same kernel.
x = torch.randn(5, 7)
try:
    got = torch.ops.tta_examples.tri_scale(x, 4)
except RuntimeError as e:
    if "wrap_triton" not in str(e):
        raise
    got = torch.empty_like(x)
    co.launch_tri_scale(x, got, k=4)
rows.append(["tri_scale", [5, 7], bool(torch.equal(got, x * 4)), True, 0.0])
print(json.dumps(rows))
"""


@pytest.fixture(scope="module")
def interpreted():
    env = dict(os.environ, TRITON_INTERPRET="1")
    tests_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    r = subprocess.run([sys.executable, "-c", _INTERPRET, tests_dir], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_custom_op_cases_match_their_references(interpreted):
    from tta.examples.custom_ops import CASES

    assert {row[0] for row in interpreted} == {c.name for c in CASES} | {"tri_scale"}
    assert [row for row in interpreted if not (row[2] and row[3])] == []
    assert len(interpreted) == sum(len(c.test_shapes) * len(c.dtypes) * len(c.configs) for c in CASES) + 1
