"""STAND-IN for what TensorRT's builder does with a Quickly Deployable Plugin (QDP) built ahead
of time, not TensorRT: the build-time call order of ``INetworkDefinition.add_plugin(f, aot=True)``
and of the engine build, recorded instead of compiled.

1. ``f(QuickPluginCreationRequest.STRICT_AOT)`` -> ``(inputs, shape_inputs, plugin)``
   (the real package's ``create_plugin``);
2. ``get_capability_interface``, ``get_num_outputs``;
3. ``get_output_data_types(input_types, ranks)`` (fake shapes);
4. ``get_output_shapes(input DimsExprs, [], IExprBuilder)``;
5. ``get_supported_format_combinations(DynamicPluginTensorDescs, n_in)`` (calls ``autotune``);
6. for each combination whose input types are the network's (networks are strongly typed):
   ``configure_plugin`` -> ``get_valid_tactics`` (``[]`` means the default tactic 0), then per tactic
   ``set_tactic`` -> ``get_launch_params`` (calls ``aot_impl``) -> ``get_kernel``.

``add_plugin_aot`` does steps 1-4 (what the network needs: output dtypes and shape expressions);
``build_plugin`` does 5-6 for an optimization profile and returns every kernel TensorRT would
time, each with its launch values as expression trees (``exprs.evaluate`` gives numbers).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from . import core
from .exprs import DimsExprs, IDimensionExpr, IExprBuilder, evaluate, input_dims


@dataclass
class AddedPlugin:
    """What ``add_plugin(f, aot=True)`` learned about a plugin layer."""

    plugin: Any
    inputs: list  # the ITensors the op was called with
    input_types: list
    output_types: list
    output_shapes: list[DimsExprs]  # over the inputs' dimension leaves
    calls: list[str] = field(default_factory=list)


@dataclass
class AOTKernel:
    """One (type/format combination, tactic) as ``get_launch_params`` and ``get_kernel`` gave it."""

    types: tuple
    formats: tuple
    tactic: int
    kernel_name: bytes | str
    code: bytes
    launch: dict[str, IDimensionExpr]  # grid_x .. shared_mem
    extras: list[IDimensionExpr]

    def launch_values(self, input_shapes: Sequence[Sequence[int]]) -> dict[str, int]:
        return {k: evaluate(v, input_shapes) for k, v in self.launch.items()}

    def extra_values(self, input_shapes: Sequence[Sequence[int]]) -> list[int]:
        return [evaluate(e, input_shapes) for e in self.extras]


def add_plugin_aot(create: Callable, input_types: Sequence[core.DataType] | None = None, ranks: Sequence[int] | None = None) -> AddedPlugin:
    """Steps 1-4. ``create`` is what ``trtp.op.<ns>.<name>(*itensors, **attrs)`` returned; input
    types and ranks default to the ITensors' own."""
    calls = ["create_plugin(STRICT_AOT)"]
    result = create(core.QuickPluginCreationRequest.STRICT_AOT)
    inputs, shape_inputs, plugin = result
    if shape_inputs:
        raise ValueError("shape inputs are not supported for QDPs")
    if input_types is None:
        input_types = [t.dtype for t in inputs]
    if ranks is None:
        ranks = [len(t.shape) for t in inputs]
    for cap in (core.PluginCapabilityType.CORE, core.PluginCapabilityType.BUILD):
        if plugin.get_capability_interface(cap) is None:
            raise TypeError(f"plugin has no {cap.name} capability")
    calls.append("get_capability_interface")
    n_out = plugin.get_num_outputs()
    calls.append("get_num_outputs")
    out_types = list(plugin.get_output_data_types(list(input_types), list(ranks)))
    calls.append("get_output_data_types")
    if len(out_types) != n_out:
        raise ValueError(f"get_output_data_types gave {len(out_types)} types for {n_out} outputs")
    builder = IExprBuilder()
    out_shapes = plugin.get_output_shapes(input_dims(list(ranks)), [], builder)
    calls.append("get_output_shapes")
    if len(out_shapes) != n_out:
        raise ValueError(f"get_output_shapes gave {len(out_shapes)} shapes for {n_out} outputs")
    for k, dims in enumerate(out_shapes):
        for j, e in enumerate(dims):
            if not isinstance(e, IDimensionExpr):
                raise TypeError(f"output {k} dim {j}: null shape expression {e!r}")
    return AddedPlugin(plugin, list(inputs), list(input_types), out_types, list(out_shapes), calls)


def _dynamic_desc(dtype, fmt, lo: Sequence[int], opt: Sequence[int], hi: Sequence[int]) -> core.DynamicPluginTensorDesc:
    d = core.DynamicPluginTensorDesc()
    d.desc.type = dtype
    d.desc.format = fmt
    d.desc.dims = core.Dims([a if a == b else -1 for a, b in zip(lo, hi)])
    d.min, d.opt, d.max = core.Dims(lo), core.Dims(opt), core.Dims(hi)
    return d


def _profile_of_outputs(added: AddedPlugin, profile: Sequence[tuple]) -> list[tuple]:
    """(min, opt, max) of each output: its shape expressions at the inputs' min/opt/max."""
    out = []
    for dims in added.output_shapes:
        out.append(tuple(tuple(evaluate(e, [p[i] for p in profile]) for e in dims) for i in range(3)))
    return out


def build_plugin(added: AddedPlugin, profile: Sequence[tuple[Sequence[int], Sequence[int], Sequence[int]]]) -> list[AOTKernel]:
    """Steps 5-6 for one optimization profile: ``profile[k] = (min, opt, max)`` of input k.
    Returns every kernel the builder would time (the stand-in does not choose among them)."""
    plugin = added.plugin
    n_in = len(added.input_types)
    if len(profile) != n_in:
        raise ValueError(f"profile has {len(profile)} inputs, the plugin {n_in}")
    out_profile = _profile_of_outputs(added, profile)
    types = list(added.input_types) + list(added.output_types)
    ranges = list(profile) + out_profile
    linear = core.TensorFormat.LINEAR
    in_out = [_dynamic_desc(t, linear, *r) for t, r in zip(types, ranges)]
    flat = plugin.get_supported_format_combinations(in_out, n_in)
    n_io = len(in_out)
    if len(flat) % n_io:
        raise ValueError(f"{len(flat)} descriptors is not a whole number of {n_io}-port combinations")
    combos = [flat[i : i + n_io] for i in range(0, len(flat), n_io)]
    kernels: list[AOTKernel] = []
    for combo in combos:
        ctypes_ = tuple(d.type for d in combo)
        if list(ctypes_[:n_in]) != list(added.input_types):
            continue  # strongly typed network: the inputs' types are fixed by their producers
        descs = [_dynamic_desc(d.type, d.format, *r) for d, r in zip(combo, ranges)]
        plugin.configure_plugin(descs[:n_in], descs[n_in:])
        tactics = plugin.get_valid_tactics() or [0]
        for tactic in tactics:
            plugin.set_tactic(tactic)
            launch = core.IKernelLaunchParams()
            extras = core.ISymExprs()
            builder = IExprBuilder()
            in_dims = input_dims([len(r[0]) for r in profile])
            plugin.get_launch_params(in_dims, descs, n_in, launch, extras, builder)
            plain = []
            for d in descs:
                p = core.PluginTensorDesc()
                p.type, p.format, p.dims = d.desc.type, d.desc.format, d.desc.dims
                plain.append(p)
            name, code = plugin.get_kernel(plain[:n_in], plain[n_in:])
            missing = [f for f in core.IKernelLaunchParams.FIELDS if getattr(launch, f) is None]
            if missing:
                raise ValueError(f"get_launch_params left {missing} unset")
            kernels.append(
                AOTKernel(
                    types=ctypes_,
                    formats=tuple(d.format for d in combo),
                    tactic=tactic,
                    kernel_name=name,
                    code=code,
                    launch={f: getattr(launch, f).expr for f in core.IKernelLaunchParams.FIELDS},
                    extras=[extras[i].expr for i in range(len(extras))],
                )
            )
    return kernels
