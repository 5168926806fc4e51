"""The conformance manifest taken through TensorRT's plugin package (``--via-qdp``) launches
the same code with the same numbers as the one built from the compiler directly."""

import tensorrt as trt
import torch
import trt_standin

from tta.aot.base import read_manifest, symbol_values
from tta.common import bridge as core
from tta.examples.custom_ops import CASES
from tta.examples.kernels import by_name
from tta.tools.gpu import build_manifest, qdp_manifest


def _value(expr, env):
    return core.eval_expr(expr, env)


def test_via_qdp_manifest_equals_the_direct_one(tmp_path):
    via, direct = str(tmp_path / "via.json"), str(tmp_path / "direct.json")
    s = qdp_manifest.build(via, backends=["triton"], plugin_version=trt_standin.installed_version())
    assert s["failures"] == [] and s["kernels"] > 0
    build_manifest.build(direct, backends=["triton"])
    vk, info = read_manifest(via)
    dk, _ = read_manifest(direct)
    # The tta.custom_op cases exist only through their generated plugins.
    custom = [k for k in vk if k.meta["example"].startswith("custom_")]
    version = tuple(int(p) for p in trt.__version__.split(".")[:2])
    assert sorted({k.meta["example"] for k in custom}) == sorted(c.name for c in CASES if version >= c.min_plugin)
    # The seed RFC's example has a list attribute: in the manifest from 11.3 on, said so before.
    rfc = "custom_circular_pad"
    assert (rfc in {k.meta["example"] for k in custom}) == (version >= (11, 3))
    assert [x["example"] for x in info["left_out"]] == ([] if version >= (11, 3) else [rfc])
    assert all(k.meta["test_shapes"] for k in custom)
    vk = [k for k in vk if k not in custom]
    assert info["via"] == "qdp"
    key = lambda k: (k.meta["example"], k.meta["dtype"], k.config)  # noqa: E731
    assert sorted(map(key, vk)) == sorted(map(key, dk))
    direct_by = {key(k): k for k in dk}
    for k in vk:
        d = direct_by[key(k)]
        assert k.code == d.code and k.entry == d.entry and k.block == d.block and k.shared_mem == d.shared_mem
        assert k.meta["test_shapes"] == d.meta["test_shapes"] and len(k.meta["test_shapes"]) == 3
        ex = by_name(k.meta["example"])
        for shape in k.meta["test_shapes"]:
            env = symbol_values([tuple(t.shape) for t in ex.make_inputs(tuple(shape), torch.float32, "meta")])
            for a, b in [*zip(k.grid, d.grid), *zip(k.extras, d.extras)]:
                assert _value(a, env) == _value(b, env)
            assert [[_value(x, env) for x in o] for o in k.output_shapes] == [[_value(x, env) for x in o] for o in d.output_shapes]
