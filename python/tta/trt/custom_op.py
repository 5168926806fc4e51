"""``tta.custom_op``: a TensorRT AOT plugin and its Torch-TensorRT converter for an existing
``torch.library`` op (``custom_op``, ``triton_op`` or a ``Library`` definition with a fake impl),
through the same QDP machinery as outlined regions (``qdp.define``, the converter's plugin
layer).

How an op becomes plugins: its tensors (schema order; an absent optional tensor is left out)
are the plugin's inputs, its other arguments attributes (``custom_op_schema.py``). Each call
site is converted by looking at the exported node: its inputs' dtypes, static dims and which
dims the export proved equal (a ``torch._check`` or broadcasting in the fake impl) pick a
*variant*, one ``tta::`` QDP plugin each, whose output dtypes and shapes come from running the
op's fake impl on symbolic inputs. The call site's attribute values travel as QDP attributes to
the descriptor and ``aot_impl``, which compile the kernels for them: the launch function gets
``(*input tensors in schema order, *outputs, **config, **attribute values)``, an absent optional
tensor as ``None`` in its place.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

from ..aot.session import TensorType
from ..declare.plugin import Plugin
from ..errors import PluginError
from . import custom_op_schema, qdp


@dataclass
class CustomOp:
    """What ``tta.custom_op`` registered for one op."""

    signature: custom_op_schema.OpSignature
    kernels: tuple
    # How the converter was registered: capability_validator, priority, supports_dynamic_shapes.
    converter: tuple = ()
    variants: dict[tuple, str] = field(default_factory=dict)  # variant key -> plugin name
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def op_name(self) -> str:
        return self.signature.op_name

    def qualified_names(self) -> set[str]:
        """How Torch-TensorRT's partitioners name this op's nodes (``torch.ops.ns.op.overload``)."""
        o = self.signature.overload
        return {f"torch.ops.{o.namespace}.{o._schema.name.split('::', 1)[1]}.{o._overloadname}"}

    def plugin_name(self, present: Sequence[bool], metas: Sequence[TensorType], sm: int = 90, max_ptx: int | None = 90) -> str:
        """The ``tta::`` plugin of this op for a call site whose optional tensors are
        ``present`` and whose plugin inputs are ``metas`` (defined on first use), its kernels
        built for ``sm`` and PTX ISA ``max_ptx``."""
        key = (tuple(present), tuple((m.dtype, m.shape) for m in metas))
        with self.lock:
            name = self.variants.get(key)
            if name is None:
                name = self._define(tuple(present), list(metas), key)
                self.variants[key] = name
        qdp.define(name, qdp.registered(name).plugin, metas, None, sm=sm, max_ptx=max_ptx)
        return name

    def _define(self, present: tuple, metas: list[TensorType], key: tuple) -> str:
        sig = self.signature
        digest = hashlib.sha256(repr((self.kernels, key)).encode()).hexdigest()[:10]
        name = f"{sig.op_name.replace('::', '__').replace('.', '_')}__{digest}"
        absent = [i for i, p in enumerate(present) if not p]
        specs = tuple(_with_absent(s, absent, [sig.tensors[i].name for i in absent]) for s in self.kernels)
        plugin = Plugin(name=name, key=f"{sig.op_name}@{digest}", kernels=specs)
        attrs = [a.attribute for a in sig.attributes]
        names = [a.name for a, p in zip(sig.tensors, present) if p]
        qdp.define(name, plugin, metas, _output_fn(sig, present), attributes=attrs, n_outputs=sig.n_outputs, input_names=names)
        return name


_ops: dict[str, CustomOp] = {}
_lock = threading.Lock()


def _with_absent(spec: Any, positions: list[int], names: list[str]) -> Any:
    """``spec`` whose launch function gets ``None`` at the positions of absent optional tensors."""
    if not positions:
        return spec
    user = spec.launch_fn

    @functools.wraps(user)
    def launch(*tensors: Any, **kwargs: Any):
        args = list(tensors)
        for p in positions:
            args.insert(p, None)
        return user(*args, **kwargs)

    return replace(spec, launch_fn=launch, identity=f"{spec.identity}[without {','.join(names)}]")


def _output_fn(sig: custom_op_schema.OpSignature, present: tuple) -> Callable:
    """``fn(*plugin inputs, **attribute values)``: the op on fake tensors (its fake impl)."""

    def outputs(*tensors: Any, **values: Any):
        it = iter(tensors)
        kwargs = {}
        for a, p in zip(sig.tensors, present):
            kwargs[a.name] = next(it) if p else None
        kwargs.update(values)
        return sig.overload(**kwargs)

    outputs.__qualname__ = f"fake impl of {sig.op_name}"
    return outputs


try:
    from torch_tensorrt.dynamo.conversion._ConverterRegistry import ConverterPriority

    _STANDARD: Any = ConverterPriority.STANDARD
except ImportError:  # the plugin side works without Torch-TensorRT; the converter needs it
    _STANDARD = None


def custom_op(
    op_name: str,
    capability_validator: Callable | None = None,
    priority: Any = _STANDARD,
    supports_dynamic_shapes: bool = True,
    requires_output_allocator: bool = False,
    *,
    kernel: Any = None,
    use_aot_if_available: bool = True,
    _aot_register: Callable[[], None] | None = None,
) -> CustomOp:
    """Make ``op_name`` ("ns::op", an existing torch op with a fake impl) convertible by
    Torch-TensorRT into an ahead-of-time TensorRT plugin running ``kernel`` (a kernel spec,
    ``tta.triton/cutile/cutedsl``, or a list of them: one tactic per config).

    The other parameters are those of Torch-TensorRT's ``custom_op``, in its order and with its
    names, so that a call to it becomes a call to this by changing the import and adding
    ``kernel=``. ``capability_validator(node, settings) -> bool`` and ``priority``
    (``ConverterPriority``, default STANDARD) mean what they mean there;
    ``supports_dynamic_shapes`` too, but defaults to True, as the plugins take any input shape.
    What tta cannot honour is refused, never ignored: ``requires_output_allocator=True``
    (data-dependent outputs), ``use_aot_if_available=False`` (the plugin is always AOT) and
    ``_aot_register`` (tta registers the ``aot_impl`` itself)."""
    from ..common.required import require
    from ..declare.plugin import check_kernels

    sig = custom_op_schema.signature(op_name)
    where = f"tta.custom_op({op_name!r})"
    # The TensorRT AOT plugin needs tensorrt.plugin; Torch-TensorRT is optional: without it the
    # plugins serve TensorRT's own network API and no converter is registered.
    require(("tensorrt", "tensorrt.plugin"), where)
    if kernel is None:
        given = (
            ""
            if capability_validator is None or callable(capability_validator)
            else (f" (the second positional argument is capability_validator, as in Torch-TensorRT; got {capability_validator!r})")
        )
        raise PluginError(f"{where}: give kernel= (tta.triton(launch_fn, configs=[...]) or a list of specs){given}")
    if capability_validator is not None and not callable(capability_validator):
        raise PluginError(f"{where}: capability_validator must be a function (node, settings) -> bool, got {capability_validator!r}")
    if requires_output_allocator:
        raise PluginError(
            f"{where}: requires_output_allocator=True means data-dependent output shapes; a TensorRT "
            "AOT plugin's output shapes must be computed from its input shapes"
        )
    if not use_aot_if_available:
        raise PluginError(
            f"{where}: use_aot_if_available=False asks for a JIT plugin (a Python impl run by TensorRT); tta's "
            "plugins are ahead-of-time only: leave use_aot_if_available at True"
        )
    if _aot_register is not None:
        raise PluginError(
            f"{where}: _aot_register registers another aot_impl for the plugin; tta registers its own from kernel=, "
            "so the two would clash: leave _aot_register out"
        )
    kernels = tuple(kernel) if isinstance(kernel, (list, tuple)) else (kernel,)
    check_kernels(kernels, op_name)
    names = {a.name for a in sig.attributes}
    for spec in kernels:
        for cfg in spec.config_dicts():
            clash = names & set(cfg)
            if clash:
                raise PluginError(
                    f"{where}: config key(s) {sorted(clash)} of {spec!r} are also arguments of the op; "
                    "the op's arguments reach the launch function as keywords of the same name"
                )
    # Attribute types the installed plugin package cannot carry are refused now, by name.
    qdp.check_attributes([a.attribute for a in sig.attributes], where)
    converter = (capability_validator, priority, supports_dynamic_shapes)
    with _lock:
        if op_name in _ops:
            # Registration is process-wide: the same call again (a re-run cell) is a no-op,
            # other kernels or converter arguments an error (neither would take effect).
            before = _ops[op_name]
            if before.kernels == kernels and _same_converter(before.converter, converter):
                return before
            what = "kernels" if before.kernels != kernels else "converter arguments"
            raise PluginError(
                f"{where} was already called with other {what} ({before.kernels if what == 'kernels' else before.converter}); "
                "TensorRT plugins and converters cannot be replaced within a process"
            )
        entry = CustomOp(signature=sig, kernels=kernels, converter=converter)
        _ops[op_name] = entry
    import importlib.util

    # Without Torch-TensorRT there is no converter to register; the plugins still serve
    # TensorRT's own network API (``trtp.op.tta.<variant>``, ``CustomOp.plugin_name``).
    if importlib.util.find_spec("torch_tensorrt") is not None:
        from . import converter as trt_converter

        trt_converter.register_custom_op(entry, capability_validator, priority, supports_dynamic_shapes)
    return entry


def _same_converter(a: tuple, b: tuple) -> bool:
    # The validator by identity (functions have no other equality); the rest by value.
    return a[0] is b[0] and a[1:] == b[1:]


def all_defined() -> list[CustomOp]:
    """Every op ``tta.custom_op`` made in this process."""
    return list(_ops.values())


def defined(name: str) -> CustomOp | None:
    """What ``tta.custom_op(name, ...)`` made in this process, if it was called."""
    return _ops.get(name)


def lookup(overload: Any) -> CustomOp | None:
    name = overload._schema.name
    overload_name = overload._schema.overload_name
    return _ops.get(name) or (_ops.get(f"{name}.{overload_name}") if overload_name else None)
