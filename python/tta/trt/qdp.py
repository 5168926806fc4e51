"""TensorRT Quickly Deployable Plugins (``tensorrt.plugin``) for tta ops, built ahead of time.

Interface used by the Torch-TensorRT side (converter, lowering pass, ``tta.compile``):

``register(op_name, *, sm=KEEP, max_ptx=KEEP, allow_cubin=KEEP) -> str``
    Define plugin ``"tta::<op_name>"`` for the ``tta::<op_name>`` torch op (``trtp.register``,
    ``trtp.autotune``, ``trtp.aot_impl``) and return its id. Idempotent and thread-safe: the
    trtp definitions are made once per process; a later call only updates the target options
    it is given (``sm``: compute capability the kernels are compiled for, default 90;
    ``max_ptx``: newest PTX ISA the target driver JIT-compiles, Triton's spelling, default
    90 = ISA 9.0, None = no cap; ``allow_cubin``, default False: see below). The op must have been created
    by ``tta.runtime.ops.ensure_op`` (``tta.rewrite`` / the lowering pass). Region plugins take no
    attributes: call the op as ``trtp.op.tta.<op_name>(*itensors)``.

``profile_tactics.restrict_tactics(op_name, dim_ranges) -> list[int]``
    ``dim_ranges[k][j] = (min, max)`` of input k's dim j over the optimization profile (with
    several profiles: the smallest min and largest max). Compiles the op's kernels for the
    target (cached) and returns the tactics whose guards (conditions the kernel was compiled
    under, e.g. ``i0_1 <= 1024``) hold for every shape in those ranges; raises ``PluginError``
    naming the range and the guard when none is left. Changes nothing.

``profile_tactics.restricted(op_name, tactics) -> str``
    The plugin (id without namespace) to add for a layer that may run only ``tactics``:
    ``op_name`` itself when that is all of them, else a plugin of the same kernels offering just
    those (defined once per set, sharing the compiled kernels). TensorRT asks a plugin for its
    tactics only when it builds the engine, after every layer is added, so each call site with
    its own profile ranges needs its own plugin (the converter does this per plugin layer).

``tactics(op_name, input_dtypes=None) -> dict[int, CompiledKernel]``
    Every tactic id of the op and its kernel (compiling if needed).

``prefetch(op_names)``
    Compile every registered op's kernels in one pool (the lowering pass calls it before the
    engine build), so the plugins do not compile one after another inside the build.

``define(name, plugin, input_metas, output_fn, *, dtypes=None, attributes=(), ...)``
    The same for any tta ``Plugin`` (what ``register`` uses; ``tta.custom_op`` reuses it):
    several input dtype combinations, and attributes (``Attribute(name, type)``: ``str``,
    ``bytes``, ``bool``, ``int``, ``float``, ``list`` of int/float; see ``Attribute`` for what
    each TensorRT version carries). Attribute values reach the descriptor and ``aot_impl``:
    ``output_fn`` and the kernels' launch functions get them as keywords (merged into each
    config), so output shapes and kernels are specialised per value; kernels are keyed by
    dtypes, attribute values and tactic.

``attribute_kwargs(name, values) -> dict``
    The keywords to call ``trtp.op.tta.<name>(*itensors, **kwargs)`` with for these attribute
    values (in registration order, encoded as the plugin carries them).

What TensorRT gets per (type combination, tactic): ``aot_impl`` returns the compiled kernel's
entry name and PTX from the compile cache, ``KernelLaunchParams`` (grid from the kernel's shape
expressions over the inputs' ``shape_expr``; block and dynamic shared memory as ints) and the
int32 extras as ``SymInt32``s, all built inside ``aot_impl`` from Python ``int``s. Tactic ids are
positive int32s hashed from (backend, launch function, config), the same in every process.

PTX only, by default: TensorRT documents nothing else for AOT plugins. cuTile compiles to a
CUBIN; its embedded PTX is turned into a plain kernel where that is possible
(``aot/cutile_ptx.py``), and otherwise the op is refused with the reason.
``allow_cubin=True`` ships CUBINs instead (unverified under TensorRT).
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, List, Sequence, Tuple, Union

from ..aot.base import CompiledKernel
from ..aot.session import Session, TensorType
from ..common import known_bugs
from ..common.dtypes import TENSORRT as TRT_DTYPES
from ..errors import PluginError
from ..runtime import ops
from . import mutation, qdp_shapes
from . import tactics as _tactics

NAMESPACE = "tta"

# "Leave this target option as it is" (a new plugin starts at sm 90, max_ptx 90, no CUBIN).
KEEP = type("Keep", (), {"__repr__": lambda self: "KEEP"})()

CUBIN_REFUSAL = (
    "its kernel is a CUBIN ({backend}) and TensorRT documents only PTX for AOT plugins; {why}. Use a kernel that "
    "compiles to PTX, or pass allow_cubin=True to ship the CUBIN (unverified: no TensorRT source or document shows "
    "a CUBIN being accepted)"
)


@dataclass(frozen=True)
class Attribute:
    """A plugin attribute: name and Python type (``item``: the element type of a ``list``).
    ``str``, ``bytes`` and ``bool`` work with every TensorRT 10.9-11.4. ``int`` and ``float``
    fail at plugin creation on TensorRT <= 11.1 with NumPy >= 2.4 (the package calls ``int()``
    on a 1-element array): there they are refused, or with ``str_fallback`` sent as their
    ``repr`` in a ``str`` attribute (exact for ints and floats) and decoded before use. Lists
    are NumPy array attributes, which only TensorRT >= 11.3 creates with current NumPy and
    Python; refused below. ``aot_impl`` receives every value, in registration order (TensorRT
    does not serialize AOT attributes)."""

    name: str
    type: type
    item: type | None = None
    str_fallback: bool = False


@dataclass
class _Entry:
    name: str  # op name (plugin name)
    plugin: Any  # tta Plugin
    output_fn: Callable  # fake outputs from fake inputs
    input_metas: list[TensorType]  # of the first type combination
    combos: list[tuple[tuple[str, ...], tuple[str, ...]]]  # (input dtypes, output dtypes)
    output_shapes: list[tuple[str | int, ...]]  # expressions over i{k}_{j} (no attributes)
    attributes: tuple["_Wire", ...]
    tactic_ids: list[int]
    tactic_labels: dict[int, str]
    n_outputs: int = 1
    # Whether attribute values reach the output function and the kernels (custom ops); else they
    # only reach aot_impl.
    by_values_enabled: bool = False
    sm: int = 90
    max_ptx: int | None = 90
    allow_cubin: bool = False
    allowed: list[int] | None = None  # the tactics of a restricted() plugin; None: all
    compiled: dict[tuple, dict[int, CompiledKernel]] = field(default_factory=dict)
    cubin_reasons: dict[int, str] = field(default_factory=dict)
    lock: threading.RLock = field(default_factory=threading.RLock)
    dtype_combos: list[tuple[str, ...]] = field(default_factory=list)  # input dtypes offered
    # attribute values -> (combos, output shapes), for plugins whose outputs depend on them
    by_values: dict[tuple, tuple[list, list]] = field(default_factory=dict)
    input_names: list[str] | None = None  # for messages (the op's argument names)

    @property
    def plugin_id(self) -> str:
        return f"{NAMESPACE}::{self.name}"

    def metas_for(self, input_dtypes: Sequence[str]) -> list[TensorType]:
        return [TensorType(d, m.shape) for d, m in zip(input_dtypes, self.input_metas)]

    def signature(self, values: dict | None = None) -> tuple[list, list]:
        """(dtype combinations, output shapes) for these attribute values: the output function
        run on symbolic inputs, once per values."""
        if not self.by_values_enabled:
            return self.combos, self.output_shapes
        key = _values_key(values or {})
        with self.lock:
            got = self.by_values.get(key)
            if got is None:
                got = _signature_of(self.plugin_id, self.input_metas, self.dtype_combos, self.output_fn, dict(values or {}))
                self.by_values[key] = got
            return got

    def kernels(self, input_dtypes: Sequence[str], values: dict | None = None) -> dict[int, CompiledKernel]:
        """tactic id -> kernel for these input dtypes (and attribute values, which the launch
        functions get as keywords) on the current target (compiled once, through the compile
        cache). cuTile CUBINs become PTX where they can (``cutile_ptx``); where not, the CUBIN
        stays and ``cubin_reasons`` says why."""
        values = dict(values or {}) if self.by_values_enabled else {}
        key = self.kernels_key(input_dtypes, values)
        with self.lock:
            got = self.compiled.get(key)
            if got is None:
                from ..aot.compile import compile_requests, compile_specs

                if values:
                    combos, shapes = self.signature(values)
                    outs = _combo_of(self.plugin_id, combos, tuple(input_dtypes))[1]
                    out_metas = [TensorType(d, tuple(sh)) for d, sh in zip(outs, shapes)]
                    specs = [with_arguments(s, values) for s in self.plugin.kernels]
                    ks = compile_specs(specs, self.metas_for(input_dtypes), out_metas, sm=self.sm, max_ptx=self.max_ptx)
                else:
                    (ks,) = compile_requests([self.request(input_dtypes)])
                got = self.compiled[key] = self.tactics_of(ks)
            return got

    def request(self, input_dtypes: Sequence[str]):
        """What compiles the kernels for these input dtypes (a plugin without attribute values)."""
        from ..aot.compile import plugin_request

        return plugin_request(self.plugin, self.metas_for(input_dtypes), self.output_fn, sm=self.sm, max_ptx=self.max_ptx)

    def kernels_key(self, input_dtypes: Sequence[str], values: dict) -> tuple:
        """What ``compiled`` keys a set of kernels on: dtypes, target, and attribute values."""
        return (tuple(input_dtypes), self.sm, self.max_ptx, self.allow_cubin) + ((_values_key(values),) if values else ())

    def tactics_of(self, ks: Sequence[CompiledKernel]) -> dict[int, CompiledKernel]:
        """tactic id -> kernel for the plugin's compiled kernels (in tactic order): cuTile CUBINs
        made PTX where they can be, and kernels that write an input refused."""
        got = {}
        for tid, k in zip(self.tactic_ids, ks):
            if k.backend == "cutile" and k.code_format == "cubin" and not self.allow_cubin:
                from ..aot.cutile.ptx import ptx_variant

                try:
                    k = ptx_variant(k, self.max_ptx, f"{self.plugin_id} tactic {tid}")
                except PluginError as e:
                    self.cubin_reasons[tid] = str(e)
            got[tid] = k
        names = self.input_names or [f"x{i}" for i in range(len(self.input_metas))]
        mutation.refuse_written_inputs(self.plugin_id, got, names, self.tactic_labels)
        return got

    def refuse_cubin(self, tactic: int, k: CompiledKernel) -> None:
        if k.code_format != "ptx" and not self.allow_cubin:
            why = self.cubin_reasons.get(tactic, f"{k.backend} gives no PTX")
            raise PluginError(f"{self.plugin_id}: cannot go into a TensorRT engine: " + CUBIN_REFUSAL.format(backend=k.backend, why=why))


_entries: dict[str, _Entry] = {}
_lock = threading.Lock()


def _trt():
    import tensorrt as trt
    import tensorrt.plugin as trtp

    return trt, trtp


@dataclass(frozen=True)
class _Wire:
    """An attribute as the plugin package carries it: the annotation it is registered with and
    the conversions to and from the value the descriptor, ``aot_impl`` and kernels see."""

    attr: Attribute
    annotation: Any
    as_str: bool = False  # an int/float sent as its repr

    @property
    def name(self) -> str:
        return self.attr.name

    @property
    def type(self) -> Any:
        return self.annotation

    def encode(self, value: Any) -> Any:
        a = self.attr
        if a.type is list:
            import numpy as np

            return np.asarray(list(value), dtype=np.int64 if a.item is int else np.float64)
        if self.as_str:
            return repr(a.type(value))
        return a.type(value) if a.type in (int, float) and not isinstance(value, bool) else value

    def decode(self, value: Any) -> Any:
        a = self.attr
        if a.type is list:
            return [a.item(v) for v in list(value)]
        if self.as_str:
            return int(value) if a.type is int else float(value)
        return value


def _versions() -> tuple[str, str]:
    """(TensorRT version, NumPy version): what the plugin package's known bugs depend on."""
    trt, _ = _trt()
    import numpy as np

    return trt.__version__, np.__version__


def refuse_broken_qdp(where: str) -> None:
    """TensorRT versions whose QDP plugins do not work (``tools/known_bugs.py``) get none."""
    trt, _ = _trt()
    reason = known_bugs.qdp_refusal(trt.__version__)
    if reason is not None:
        raise PluginError(f"{where}: cannot define a TensorRT plugin: {reason}")


def check_attributes(attributes: Sequence[Attribute], where: str) -> tuple[_Wire, ...]:
    out = []
    for a in attributes:
        if a.name in ("outputs", "stream", "tactic") or not a.name.isidentifier() or re.fullmatch(r"x\d+", a.name):
            raise PluginError(f"{where}: {a.name!r} cannot be a plugin attribute name")
        if a.type in (str, bytes, bool):
            out.append(_Wire(a, a.type))
            continue
        trt_s, np_s = _versions()
        if a.type in (int, float):
            if known_bugs.numpy_scalar_attrs_broken(trt_s, np_s):
                if a.str_fallback:
                    out.append(_Wire(a, str, as_str=True))
                    continue
                raise PluginError(
                    f"{where}: attribute {a.name!r} is {a.type.__name__}: tensorrt.plugin {trt_s} cannot create a "
                    f"plugin with int/float attributes under NumPy {np_s} (fixed in TensorRT 11.2); pass it as str"
                )
            out.append(_Wire(a, a.type))
            continue
        if a.type is list and a.item in (int, float):
            if known_bugs.list_attrs_broken(trt_s):
                raise PluginError(
                    f"{where}: attribute {a.name!r} is a list of {a.item.__name__}: tensorrt.plugin {trt_s} cannot "
                    f"carry list (NumPy array) attributes with NumPy {np_s} (TensorRT 11.3 can); pass the values "
                    "another way (separate scalar arguments)"
                )
            import numpy as np
            import numpy.typing as npt

            out.append(_Wire(a, npt.NDArray[np.int64 if a.item is int else np.float64]))
            continue
        raise PluginError(f"{where}: attribute {a.name!r} has type {a.type!r}; use str, bytes, bool, int, float or a list of int/float")
    return tuple(out)


def _values_key(values: dict) -> tuple:
    return tuple((k, tuple(v) if isinstance(v, (list, tuple)) else v) for k, v in sorted(values.items()))


def with_arguments(spec: Any, values: dict) -> Any:
    """``spec`` whose launch function also gets ``values`` (the op's non-tensor arguments) as
    keywords with every config, so each value set is its own compiled kernel (the values are
    part of the spec's identity, hence of the compile cache key)."""
    import dataclasses

    if not values:
        return spec
    frozen = tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in values.items()))
    shown = ",".join(f"{k}={v!r}" for k, v in frozen)
    return dataclasses.replace(spec, arguments=frozen, identity=f"{spec.identity}({shown})")


def _combo_of(where: str, combos, input_dtypes: tuple) -> tuple:
    for c in combos:
        if c[0] == input_dtypes:
            return c
    offered = ", ".join("/".join(c[0]) for c in combos)
    raise PluginError(f"{where}: inputs of types {'/'.join(input_dtypes)} were not compiled for (offered: {offered})")


def _signature_of(where: str, input_metas, combos_in, output_fn: Callable, values: dict) -> tuple[list, list]:
    """Output dtypes per input dtype combination and output shapes (expressions over the input
    symbols): ``output_fn`` on symbolic inputs, with the attribute values as keywords."""
    import functools

    fn = functools.partial(output_fn, **values) if values else output_fn
    combos = []
    shapes = None
    for ins in combos_in:
        if len(ins) != len(input_metas):
            raise PluginError(f"{where}: dtype combination {ins} has {len(ins)} entries for {len(input_metas)} inputs")
        session = Session([TensorType(d, m.shape) for d, m in zip(ins, input_metas)])
        _refuse_data_dependent(where, session.outputs_from_fn(fn, where))
        metas = session.output_metas()
        outs = tuple(m.dtype for m in metas)
        for d in (*ins, *outs):
            if d not in TRT_DTYPES:
                raise PluginError(f"{where}: dtype {d} has no TensorRT equivalent")
        these = [m.shape for m in metas]
        if shapes is not None and these != shapes:
            raise PluginError(f"{where}: output shapes differ between dtype combinations: {shapes} vs {these}")
        shapes = these
        combos.append((tuple(ins), outs))
    return combos, shapes or []


def _refuse_data_dependent(where: str, outputs) -> None:
    """A size the fake impl made up (``new_dynamic_size``, ``nonzero``) is known only once the
    kernel has run; an AOT plugin's output shapes must follow from its input shapes."""
    import torch
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

    for k, o in enumerate(outputs):
        for j, d in enumerate(o.shape):
            if isinstance(d, torch.SymInt) and free_unbacked_symbols(d):
                raise PluginError(
                    f"{where}: output {k} dim {j} is data-dependent ({d.node.expr}): it is known only after the kernel "
                    "runs, and a TensorRT AOT plugin's output shapes must be computed from its input shapes"
                )


def define(
    name: str,
    plugin: Any,
    input_metas: Sequence[TensorType],
    output_fn: Callable,
    *,
    dtypes: Sequence[Sequence[str]] | None = None,
    attributes: Sequence[Attribute] = (),
    n_outputs: int | None = None,
    input_names: Sequence[str] | None = None,
    sm: Any = KEEP,
    max_ptx: Any = KEEP,
    allow_cubin: Any = KEEP,
) -> str:
    """Define plugin ``tta::<name>`` for a tta ``Plugin`` whose kernels take ``input_metas``
    (a dim that is None is dynamic) and whose outputs ``output_fn`` computes from fake inputs.
    ``dtypes``: the input dtype combinations to offer (default: those of ``input_metas``);
    ``input_names``: what messages call the inputs (default ``x0``, ``x1``, ...).
    Idempotent per name; a later call only updates the target options it is given."""
    with _lock:
        entry = _entries.get(name)
        if entry is None:
            refuse_broken_qdp(f"{NAMESPACE}::{name}")
            entry = _new_entry(name, plugin, list(input_metas), output_fn, dtypes, attributes, n_outputs)
            entry.input_names = list(input_names) if input_names is not None else None
            _define_trtp(entry)
            _entries[name] = entry
        elif entry.plugin is not plugin and getattr(entry.plugin, "key", None) != getattr(plugin, "key", None):
            raise PluginError(f"plugin {entry.plugin_id} is already defined for {entry.plugin!r}, not {plugin!r}")
        with entry.lock:
            if sm is not KEEP:
                entry.sm = int(sm)
            if max_ptx is not KEEP:
                entry.max_ptx = None if max_ptx is None else int(max_ptx)
            if allow_cubin is not KEEP:
                entry.allow_cubin = bool(allow_cubin)
        return entry.plugin_id


def _new_entry(name, plugin, input_metas, output_fn, dtypes, attributes, n_outputs=None) -> _Entry:
    where = f"{NAMESPACE}::{name}"
    if "." in name or "::" in name:
        raise PluginError(f"{where}: a plugin name may not contain '.' or '::'")
    if not plugin.kernels:
        raise PluginError(f"{where}: the plugin {plugin.name!r} has no kernels to build a TensorRT plugin from")
    combos_in = [tuple(m.dtype for m in input_metas)] if dtypes is None else [tuple(d) for d in dtypes]
    wires = check_attributes(attributes, where)
    # With n_outputs given, outputs and kernels depend on the attribute values (computed per
    # values); without, the output function takes the inputs only.
    by_values = bool(wires) and n_outputs is not None
    combos, shapes = ([], []) if by_values else _signature_of(where, input_metas, combos_in, output_fn, {})
    specs = [(spec, cfg) for spec in plugin.kernels for cfg in spec.config_dicts()]
    ids = _tactics.tactic_ids([(s.backend, s.identity, c) for s, c in specs])
    labels = {t: f"{s.backend} {s.identity} {c}" for t, (s, c) in zip(ids, specs)}
    return _Entry(
        name=name,
        plugin=plugin,
        output_fn=output_fn,
        input_metas=list(input_metas),
        combos=combos,
        output_shapes=shapes,
        attributes=wires,
        tactic_ids=ids,
        tactic_labels=labels,
        dtype_combos=combos_in,
        n_outputs=int(n_outputs) if by_values else len(shapes),
        by_values_enabled=by_values,
    )


def _signature(params: list[tuple[str, Any]], ret: Any) -> inspect.Signature:
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    return inspect.Signature([inspect.Parameter(n, kind, annotation=a) for n, a in params], return_annotation=ret)


def _define_trtp(entry: _Entry) -> None:
    """``trtp.register`` + ``trtp.autotune`` + ``trtp.aot_impl``, with explicit signatures (the
    package validates parameter names, order and annotations through ``inspect.signature``)."""
    trt, trtp = _trt()
    n_in = len(entry.input_metas)
    n_out = entry.n_outputs
    ins = [(f"x{i}", trtp.TensorDesc) for i in range(n_in)]
    attrs = [(a.name, a.type) for a in entry.attributes]
    outs_ret = trtp.TensorDesc if n_out == 1 else Tuple[tuple([trtp.TensorDesc] * n_out)]

    def values_of(wire_values) -> dict:
        return {a.name: a.decode(v) for a, v in zip(entry.attributes, wire_values)}

    def desc(*args: Any, **kwargs: Any):
        # The package calls the descriptor with the attributes as keywords, and once (while
        # registering) with placeholder values for all of them.
        inputs = args[:n_in]
        wire = list(args[n_in:]) + [kwargs[a.name] for a in entry.attributes[len(args) - n_in :]]
        return _output_descs(entry, inputs, values_of(wire))

    desc.__signature__ = _signature(ins + attrs, outs_ret)
    desc.__name__ = desc.__qualname__ = f"{entry.name}_desc"

    def tune(*args: Any):
        return _autotune(entry, values_of(args[n_in : n_in + len(attrs)]))

    tune.__signature__ = _signature(ins + attrs + [("outputs", Tuple[trtp.TensorDesc])], List[trtp.AutoTuneCombination])
    tune.__name__ = tune.__qualname__ = f"{entry.name}_autotune"

    def aot(*args: Any):
        inputs, values, outputs, tactic = args[:n_in], args[n_in : n_in + len(attrs)], args[-2], args[-1]
        return _aot_impl(entry, inputs, values_of(values), outputs, tactic)

    aot_ret = Tuple[Union[str, bytes], Union[str, bytes], trtp.KernelLaunchParams, trtp.SymIntExprs]
    aot.__signature__ = _signature(ins + attrs + [("outputs", Tuple[trtp.TensorDesc]), ("tactic", int)], aot_ret)
    aot.__name__ = aot.__qualname__ = f"{entry.name}_aot_impl"

    from tensorrt.plugin._lib import QDP_REGISTRY

    if entry.plugin_id in QDP_REGISTRY:
        raise PluginError(f"{entry.plugin_id} is already registered with tensorrt.plugin by other code")
    trtp.register(entry.plugin_id)(desc)
    trtp.autotune(entry.plugin_id)(tune)
    trtp.aot_impl(entry.plugin_id)(aot)


def _dtype_names(descs: Sequence[Any]) -> tuple[str, ...]:
    reverse = {v: k for k, v in TRT_DTYPES.items()}
    return tuple(reverse.get(d.dtype.name, d.dtype.name) for d in descs)


def _combo(entry: _Entry, input_dtypes: tuple[str, ...], values: dict | None = None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    return _combo_of(entry.plugin_id, entry.signature(values)[0], input_dtypes)


def _output_descs(entry: _Entry, inputs: Sequence[Any], values: dict | None = None):
    trt, trtp = _trt()
    _, out_dtypes = _combo(entry, _dtype_names(inputs), values)
    scope = qdp_shapes.symbols(inputs)
    outs = []
    for k, (shape, dtype) in enumerate(zip(entry.signature(values)[1], out_dtypes)):
        dims = tuple(qdp_shapes.to_trtp(d, scope, trtp, f"{entry.plugin_id} output {k} dim {j}") for j, d in enumerate(shape))
        outs.append(trtp.from_shape_expr(dims, dtype=getattr(trt.DataType, TRT_DTYPES[dtype])))
    return outs[0] if len(outs) == 1 else tuple(outs)


def offered_tactics(entry: _Entry) -> list[int]:
    return list(entry.tactic_ids if entry.allowed is None else entry.allowed)


def _autotune(entry: _Entry, values: dict | None = None) -> list:
    _, trtp = _trt()
    offered = offered_tactics(entry)
    return [
        trtp.AutoTuneCombination(", ".join(TRT_DTYPES[d] for d in (*ins, *outs)), "LINEAR", offered)
        for ins, outs in entry.signature(values)[0]
    ]


def _aot_impl(entry: _Entry, inputs, attr_values: dict, outputs, tactic: int):
    trt, trtp = _trt()
    where = entry.plugin_id
    for d in (*inputs, *outputs):
        if d.format != trt.TensorFormat.LINEAR:
            raise PluginError(f"{where}: tensor format {d.format} requested; tta kernels take LINEAR (dense) tensors only")
    in_dtypes, out_dtypes = _combo(entry, _dtype_names(inputs), attr_values)
    if _dtype_names(outputs) != out_dtypes:
        raise PluginError(f"{where}: output types {_dtype_names(outputs)} requested, the kernels write {out_dtypes}")
    kernels = entry.kernels(in_dtypes, attr_values)
    tactic = int(tactic)
    if tactic == 0:  # TensorRT's default tactic: the first one offered
        tactic = offered_tactics(entry)[0]
    if tactic not in kernels or tactic not in offered_tactics(entry):
        raise PluginError(f"{where}: tactic {tactic} is not one of the offered tactics {offered_tactics(entry)}")
    k = kernels[tactic]
    entry.refuse_cubin(tactic, k)
    scope = qdp_shapes.symbols(inputs)

    def sym(text, what):
        return qdp_shapes.to_trtp(text, scope, trtp, f"{where} tactic {tactic} {what}")

    launch = trtp.KernelLaunchParams()
    launch.grid_x = sym(k.grid[0], "grid x")
    launch.grid_y = sym(k.grid[1], "grid y")
    launch.grid_z = sym(k.grid[2], "grid z")
    launch.block_x = int(k.block[0])
    launch.block_y = int(k.block[1])
    launch.block_z = int(k.block[2])
    launch.shared_mem = int(k.shared_mem)
    extras = trtp.SymIntExprs.from_tuple([trtp.SymInt32(sym(e, f"extra {i}")) for i, e in enumerate(k.extras)])
    return k.entry, k.code, launch, extras


# -- the op-level interface --------------------------------------------------------------------


def register(op_name: str, *, sm: Any = KEEP, max_ptx: Any = KEEP, allow_cubin: Any = KEEP) -> str:
    """See the module docstring."""
    entry = _entries.get(op_name)
    if entry is not None:
        return define(op_name, entry.plugin, entry.input_metas, entry.output_fn, sm=sm, max_ptx=max_ptx, allow_cubin=allow_cubin)
    sig = ops.signature_of(op_name)
    if sig is None:
        raise PluginError(f"tta::{op_name} is not a tta op of this process (created by tta.rewrite or the lowering pass)")
    inputs, _outputs, plugin = sig
    if plugin is None or not plugin.kernels:
        raise PluginError(f"tta::{op_name}: its plugin has no kernels, so it cannot become a TensorRT plugin")
    if not all(p.is_tensor for p in inputs):
        raise PluginError(f"tta::{op_name}: a TensorRT plugin takes tensors only; this region also reads integers")
    metas = [TensorType.make(p.dtype, [d if isinstance(d, int) else None for d in p.shape]) for p in inputs]
    output_fn = plugin.meta_impl or ops.body_of(op_name)
    return define(op_name, plugin, metas, output_fn, sm=sm, max_ptx=max_ptx, allow_cubin=allow_cubin)


def define_variant(name: str, base: _Entry, allowed: list[int]) -> _Entry:
    """The plugin ``name``: ``base``'s kernels and compile cache (shared dicts and lock), offering
    only the ``allowed`` tactics; defined once, its targets kept equal to ``base``'s."""
    with _lock:
        entry = _entries.get(name)
        if entry is None:
            entry = dataclasses.replace(base, name=name, allowed=allowed)
            _define_trtp(entry)
            _entries[name] = entry
        with base.lock:
            entry.sm, entry.max_ptx, entry.allow_cubin = base.sm, base.max_ptx, base.allow_cubin
    return entry


def prefetch(op_names: Iterable[str]) -> None:
    """Compile the kernels of every op's plugin, for each input dtype combination it offers, in
    one pool before Torch-TensorRT builds the engine: its converters, autotune and ``aot_impl``
    then find them compiled instead of compiling plugin by plugin. Plugins whose kernels depend
    on attribute values compile when their values are known (at conversion); when a compile
    fails, nothing is kept and each converter's own compile reports the error at its node."""
    from ..aot.compile import compile_requests

    todo = []
    for op in sorted(set(op_names)):
        entry = registered(op)
        if entry.by_values_enabled:
            continue
        for combo in entry.dtype_combos:
            key = entry.kernels_key(combo, {})
            if key not in entry.compiled:
                todo.append((entry, combo, key))
    if not todo:
        return
    try:
        compiled = compile_requests([entry.request(combo) for entry, combo, _ in todo])
    except PluginError:
        return  # each converter compiles its own plugin again and names its node in the error
    for (entry, _, key), ks in zip(todo, compiled):
        with entry.lock:
            if key not in entry.compiled:
                try:
                    entry.compiled[key] = entry.tactics_of(ks)
                except PluginError:
                    pass  # refused (e.g. it writes an input): the converter says so at its node


def registered(op_name: str) -> _Entry:
    """The plugin ``define`` registered for ``tta::<op_name>``."""
    entry = _entries.get(op_name)
    if entry is None:
        raise PluginError(f"tta::{op_name} has no TensorRT plugin yet: call tta.trt.qdp.register({op_name!r}) first")
    return entry


def tactics(op_name: str, input_dtypes: Sequence[str] | None = None, values: dict | None = None) -> dict[int, CompiledKernel]:
    """See the module docstring (``input_dtypes``: which combination, default the first;
    ``values``: the attribute values, for plugins that have attributes)."""
    entry = registered(op_name)
    return entry.kernels(tuple(input_dtypes) if input_dtypes else entry.dtype_combos[0], values)


def attribute_kwargs(op_name: str, values: dict) -> dict:
    """See the module docstring."""
    entry = registered(op_name)
    missing = [a.name for a in entry.attributes if a.name not in values]
    if missing:
        raise PluginError(f"{entry.plugin_id}: no value for attribute(s) {missing}")
    return {a.name: a.encode(values[a.name]) for a in entry.attributes}
