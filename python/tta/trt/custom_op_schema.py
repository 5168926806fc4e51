"""What a ``torch.library`` op's schema means for a TensorRT plugin: which arguments are the
plugin's tensors, which are attributes (and of what type), how many outputs it has, and the
refusals that can be made before any model is compiled (mutation, data-dependent output shapes
the op declares, argument types a plugin attribute cannot carry).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from ..errors import PluginError
from . import qdp


@dataclass(frozen=True)
class OpArg:
    """One schema argument: a tensor, an optional tensor or an attribute."""

    name: str
    kind: str  # "tensor" | "optional_tensor" | "attribute"
    attribute: qdp.Attribute | None = None
    kwarg_only: bool = False


@dataclass(frozen=True)
class OpSignature:
    op_name: str  # "ns::op"
    overload: Any  # torch._ops.OpOverload
    args: tuple[OpArg, ...]
    n_outputs: int

    @property
    def tensors(self) -> list[OpArg]:
        return [a for a in self.args if a.kind != "attribute"]

    @property
    def attributes(self) -> list[OpArg]:
        return [a for a in self.args if a.kind == "attribute"]


_SCALARS = {"IntType": int, "SymIntType": int, "FloatType": float, "BoolType": bool, "StringType": str}


def _kind(t) -> str:
    return type(t).__name__


def _arg(op_name: str, a) -> OpArg:
    where = f"tta.custom_op({op_name!r}): argument {a.name!r}"
    t = a.type
    if a.alias_info is not None and a.alias_info.is_write:
        raise PluginError(
            f"{where} is mutated by the op ({t}(a!)); a TensorRT AOT plugin writes only its own outputs: make the "
            "op return a new tensor instead of writing its input"
        )
    t = getattr(a, "real_type", t)  # ScalarType, Layout, MemoryFormat are ints in the JIT type
    if str(t) in ("ScalarType", "Layout", "MemoryFormat", "Device", "Scalar"):
        raise PluginError(
            f"{where} has type {t}, which a TensorRT plugin attribute cannot carry (int, float, bool, str and lists of int/float can)"
        )
    if _kind(t) == "TensorType":
        return OpArg(a.name, "tensor", kwarg_only=a.kwarg_only)
    if _kind(t) == "OptionalType":
        inner = t.getElementType()
        if _kind(inner) == "TensorType":
            return OpArg(a.name, "optional_tensor", kwarg_only=a.kwarg_only)
        raise PluginError(f"{where} is {t}: a TensorRT plugin attribute cannot be None; make it a plain {inner} with a default")
    if _kind(t) in _SCALARS:
        attr = qdp.Attribute(a.name, _SCALARS[_kind(t)], str_fallback=True)
        return OpArg(a.name, "attribute", attr, a.kwarg_only)
    if _kind(t) == "ListType":
        inner = _kind(t.getElementType())
        if inner in ("IntType", "SymIntType", "FloatType"):
            attr = qdp.Attribute(a.name, list, item=_SCALARS[inner])
            return OpArg(a.name, "attribute", attr, a.kwarg_only)
        if inner in ("TensorType", "OptionalType"):
            raise PluginError(f"{where} is {t}: a TensorRT plugin has a fixed number of tensor inputs; list them one by one")
    raise PluginError(
        f"{where} has type {t}, which a TensorRT plugin attribute cannot carry (int, float, bool, str and lists of int/float can)"
    )


def resolve(op_name: str) -> Any:
    """The op's default overload, or a refusal naming it."""
    if not isinstance(op_name, str) or op_name.count("::") != 1:
        raise PluginError(f"tta.custom_op: {op_name!r} is not an op name of the form 'namespace::name'")
    ns, name = op_name.split("::")
    name, _, overload = name.partition(".")
    try:
        packet = getattr(getattr(torch.ops, ns), name)
        return getattr(packet, overload or "default")
    except (AttributeError, RuntimeError):
        raise PluginError(
            f"tta.custom_op({op_name!r}): no such torch op; register it first (torch.library.custom_op, "
            "torch.library.triton_op or a torch.library.Library) together with its fake impl"
        ) from None


def signature(op_name: str) -> OpSignature:
    overload = resolve(op_name)
    schema = overload._schema
    data_dependent = [t for t in ("dynamic_output_shape", "data_dependent_output") if getattr(torch.Tag, t, None) in overload.tags]
    if data_dependent:
        raise PluginError(
            f"tta.custom_op({op_name!r}): the op is tagged {data_dependent[0]}: its output shapes depend on tensor "
            "values, and a TensorRT AOT plugin's output shapes must be computed from its input shapes"
        )
    args = tuple(_arg(op_name, a) for a in schema.arguments)
    if not any(a.kind == "tensor" for a in args):
        raise PluginError(f"tta.custom_op({op_name!r}): the op takes no (non-optional) tensor; a TensorRT plugin needs one input")
    for r in schema.returns:
        if _kind(r.type) != "TensorType":
            raise PluginError(f"tta.custom_op({op_name!r}): it returns {r.type}; a TensorRT plugin returns a fixed number of tensors")
        if r.alias_info is not None:
            raise PluginError(f"tta.custom_op({op_name!r}): it returns a view of an input ({r.type}(a)); a plugin returns new tensors")
    if not schema.returns:
        raise PluginError(f"tta.custom_op({op_name!r}): it returns nothing; a TensorRT plugin must produce outputs")
    return OpSignature(op_name, overload, args, len(schema.returns))
