"""The TensorRT stand-in itself: the real plugin package loads over it once, its expression
builder refuses null expressions, and attributes decode as the real bindings make them."""

from typing import Tuple, Union

import numpy as np
import pytest
import tensorrt as trt
import tensorrt.plugin as trtp
import trt_standin
from trt_standin import exprs
from trt_standin.plugin_build import add_plugin_aot, build_plugin

AOT_RET = Tuple[Union[str, bytes], Union[str, bytes], trtp.KernelLaunchParams, trtp.SymIntExprs]


def test_one_registry_under_both_names():
    import tensorrt.plugin._lib as a
    import tensorrt_bindings.plugin._lib as b

    assert a is b and a.QDP_REGISTRY is b.QDP_REGISTRY
    assert trt.__version__ == trt_standin.VERSIONS[trt_standin.installed_version()]
    assert trtp.__file__.startswith(trt_standin.plugin_package_dir(trt_standin.installed_version()))
    with pytest.raises(RuntimeError, match="already installed"):
        trt_standin.install("11.4" if trt_standin.installed_version() == "11.1" else "11.1")


def test_builder_folds_constants_and_refuses_null():
    b = exprs.IExprBuilder()
    x = exprs.InputDimExpr(0, 1)
    e = b.operation(trt.DimensionOperation.CEIL_DIV, b.operation(trt.DimensionOperation.PROD, x, b.constant(3)), b.constant(4))
    assert exprs.evaluate(e, [(2, 5)]) == 4 and exprs.to_text(e) == "CeilDiv((i0_1 * 3), 4)"
    assert b.operation(trt.DimensionOperation.SUM, b.constant(2), b.constant(5)).get_constant_value() == 7
    with pytest.raises(TypeError, match="null"):
        b.operation(trt.DimensionOperation.SUM, x, None)
    with pytest.raises(TypeError):
        b.constant(np.int64(3))
    d = trt.DimsExprs(1)
    with pytest.raises(TypeError, match="null"):
        d[0] = None


def _register(pid, attr_type):
    @trtp.register(pid)
    def desc(x: trtp.TensorDesc, a: attr_type) -> trtp.TensorDesc:
        return x.like()

    @trtp.aot_impl(pid)
    def aot(x: trtp.TensorDesc, a: attr_type, outputs: Tuple[trtp.TensorDesc], tactic: int) -> AOT_RET:
        lp = trtp.KernelLaunchParams()
        lp.grid_x = x.shape_expr[0]
        return "k", "ptx", lp, trtp.SymIntExprs.from_tuple([trtp.SymInt32(x.shape_expr[1])])


@pytest.mark.parametrize("kind,value", [("str", "cfg"), ("bytes", b"\x01\x02"), ("bool", True), ("int", 7), ("float", 0.5)])
def test_attribute_round_trip(kind, value):
    """str/bytes/bool survive on every version; int/float fail on 11.1 with NumPy >= 2.4 (the
    real package's bug, reproduced because PluginField.data is 1-D as in the bindings)."""
    attr_type = {"str": str, "bytes": bytes, "bool": bool, "int": int, "float": float}[kind]
    pid = f"standin_t::attr_{kind}"
    _register(pid, attr_type)
    x = trt.ITensor("x", (-1, 8), trt.float32)
    create = getattr(trtp.op.standin_t, f"attr_{kind}")(x, a=value)
    broken = kind in ("int", "float") and trt.__version__.startswith("11.1") and int(np.__version__.split(".")[1]) >= 4
    if broken:
        with pytest.raises(TypeError, match="0-dimensional"):
            add_plugin_aot(create)
        return
    added = add_plugin_aot(create)
    assert added.plugin.attrs == {"a": value} and type(added.plugin.attrs["a"]) is attr_type
    (k,) = build_plugin(added, [((1, 8), (4, 8), (16, 8))])
    assert k.launch_values([(5, 8)])["grid_x"] == 5 and k.extra_values([(5, 8)]) == [8]


def test_numpy_scalar_becomes_a_refused_null_expression():
    pid = "standin_t::npscalar"

    @trtp.register(pid)
    def desc(x: trtp.TensorDesc) -> trtp.TensorDesc:
        return x.like()

    @trtp.aot_impl(pid)
    def aot(x: trtp.TensorDesc, outputs: Tuple[trtp.TensorDesc], tactic: int) -> AOT_RET:
        lp = trtp.KernelLaunchParams()
        lp.shared_mem = np.int64(128)  # silently None in the package
        return "k", "ptx", lp, trtp.SymIntExprs(0)

    added = add_plugin_aot(trtp.op.standin_t.npscalar(trt.ITensor("x", (4,), trt.float32)))
    with pytest.raises(TypeError, match="shared_mem: null expression"):
        build_plugin(added, [((4,), (4,), (4,))])
