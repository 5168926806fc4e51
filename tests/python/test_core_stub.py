"""``_core.pyi`` against the built extension: the same classes and functions, each class with
the same getters (the stub's attributes and properties), methods and constructor, and every
function and method with the same parameter names. Runs on CPU; no torch needed."""

from __future__ import annotations

import ast
import inspect
import os
import types

import pytest

from tta import _core

pytestmark = pytest.mark.torch_independent

_GETTERS = (types.GetSetDescriptorType, types.MemberDescriptorType)


def _stub() -> ast.Module:
    path = os.path.join(os.path.dirname(_core.__file__), "_core.pyi")
    with open(path) as f:
        return ast.parse(f.read())


def _is_property(fn: ast.FunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "property" for d in fn.decorator_list)


def _is_classvar(ann: ast.expr) -> bool:
    return isinstance(ann, ast.Subscript) and isinstance(ann.value, ast.Name) and ann.value.id == "ClassVar"


def _params(fn: ast.FunctionDef) -> list[str]:
    a = fn.args
    names = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    return names[1:] if names and names[0] == "self" else names


def _runtime_params(obj: object) -> list[str]:
    return [p for p in inspect.signature(obj).parameters if p != "self"]


STUB = _stub()
CLASSES = {n.name: n for n in STUB.body if isinstance(n, ast.ClassDef)}
FUNCTIONS = {n.name: n for n in STUB.body if isinstance(n, ast.FunctionDef)}


def test_the_stub_names_exactly_what_the_extension_exports():
    public = {n for n in dir(_core) if not n.startswith("_")}
    assert set(CLASSES) | set(FUNCTIONS) == public
    for name in CLASSES:
        assert isinstance(getattr(_core, name), type), name
    for name in FUNCTIONS:
        assert callable(getattr(_core, name)) and not isinstance(getattr(_core, name), type), name


@pytest.mark.parametrize("name", sorted(n for n in CLASSES if n != "CoreError"))
def test_each_class_has_the_stubs_getters_methods_and_constructor(name):
    node, cls = CLASSES[name], getattr(_core, name)
    fields = [s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and not _is_classvar(s.annotation)]
    fns = {f.name: f for f in node.body if isinstance(f, ast.FunctionDef)}
    props = {n for n, f in fns.items() if _is_property(f)}
    methods = {n for n, f in fns.items() if not _is_property(f) and not n.startswith("__")}

    own = {n: v for n, v in vars(cls).items() if not n.startswith("__")}
    assert {n for n, v in own.items() if isinstance(v, _GETTERS)} == set(fields) | props
    assert {n for n, v in own.items() if not isinstance(v, _GETTERS)} == methods
    for m in methods:
        assert _runtime_params(getattr(cls, m)) == _params(fns[m]), f"{name}.{m}"

    # The fields, in the stub's order, are what repr, == and `tta report --json` read.
    if hasattr(cls, "__match_args__"):
        assert list(cls.__match_args__) == fields

    # A class Python builds has a constructor with the stub's parameters; the others refuse.
    if "__init__" in fns:
        assert _runtime_params(cls) == _params(fns["__init__"])
    else:
        with pytest.raises(TypeError):
            cls()


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_each_function_has_the_stubs_parameters(name):
    assert _runtime_params(getattr(_core, name)) == _params(FUNCTIONS[name])


def test_result_classes_compare_hash_and_print_by_field_values():
    a = _core.Port("x", "tensor", dtype="float32", shape=["s0", 4])
    b = _core.Port("x", "tensor", "float32", ("s0", 4))
    assert a == b and not a != b and hash(a) == hash(b) and a.shape == ("s0", 4)
    assert a != _core.Port("x", "tensor", dtype="float16", shape=("s0", 4))
    assert a != ("x", "tensor") and a.signature() == ("tensor", "float32", ("s0", 4), None, False)
    assert repr(a) == "Port(name='x', kind='tensor', dtype='float32', shape=('s0', 4), expr=None, mutated=False)"
    r = _core.RegionReport("r", "p", _core.Origin("annotation"), None, "refused", [], [a], [], reason="why")
    assert r.inputs == [a] and r.origin == _core.Origin("annotation") and not r.outlined and r.absorbed == []
    with pytest.raises(TypeError):
        hash(r)  # it holds lists, as the dataclass it replaced did
    with pytest.raises(AttributeError):
        a.name = "y"  # frozen
