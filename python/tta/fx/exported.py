"""The ExportedProgram ``tta.rewrite`` returns: the original program over the rewritten graph.

It is what ExportedProgram's constructor builds, except that the module's Python code is
generated when first used (a lazy GraphModule, as inductor's passes use): generating it for a
model-sized graph costs more than the whole rewrite, and a program handed to a compiler is
often never run as Python. The verifier still runs. What the new program may change of the
old one's metadata is copied, and only that: the output specs (renamed nodes) and the module
call signatures (getitem elimination edits them).

Given the nodes the rewrite added, the verifier checks those nodes (on a graph of their own)
and the whole program's signature and module call graph: every other node is the original
program's, which its own verifiers passed when it was built. Checking all of them again cost
more than the rest of the rewrite on a Llama-sized model.
"""

from __future__ import annotations

import copy
from types import SimpleNamespace
from typing import Sequence

import torch
import torch.fx
import torch.utils._pytree as pytree
from torch._export import verifier as _verifier
from torch._subclasses.fake_tensor import FakeTensor
from torch.export import ExportedProgram
from torch.export import exported_program as _exported
from torch.export.graph_signature import ExportGraphSignature
from torch.fx._lazy_graph_module import _LazyGraphModule

# What ExportedProgram.__init__ sets. `with_new_graph` builds a program field by field only
# when the given one has exactly these (the constructor's own path otherwise).
_PROGRAM_FIELDS = frozenset(
    (
        "_graph_module",
        "_graph_signature",
        "_state_dict",
        "_range_constraints",
        "_module_call_graph",
        "_example_inputs",
        "_constants",
        "_verifiers",
        "_guards_code",
    )
)


def with_new_graph(
    ep: ExportedProgram, g: torch.fx.Graph, added: Sequence[torch.fx.Node] | None = None, same_guards: bool = False
) -> ExportedProgram:
    """A new ExportedProgram over the rewritten graph (the original module is the root its
    attributes come from), with output specs following renamed nodes. ``added``: the nodes
    of ``g`` that ``ep``'s graph does not have, when every other node is one of ``ep``'s,
    unchanged but for its inputs; without it the whole graph is verified. ``same_guards``:
    the caller did not use the shape environment (no meta_impl ran under the fake mode), so
    ``ep``'s guards code is the new program's; otherwise it is generated again, with the
    guards the meta_impls added."""
    sig = _copy_signature(ep.graph_signature)
    out_node = next(n for n in reversed(g.nodes) if n.op == "output")
    for spec, arg in zip(sig.output_specs, out_node.args[0]):
        if isinstance(arg, torch.fx.Node) and hasattr(spec.arg, "name"):
            spec.arg.name = arg.name
    # Symbols and ValueRanges (a frozen dataclass) are immutable: a new dict is a copy.
    range_constraints = dict(ep.range_constraints)
    module_call_graph = _copy_call_graph(ep._module_call_graph)
    if set(vars(ep)) != _PROGRAM_FIELDS:
        return ExportedProgram(
            root=ep.graph_module,
            graph=g,
            graph_signature=sig,
            state_dict=ep.state_dict,
            range_constraints=range_constraints,
            module_call_graph=module_call_graph,
            example_inputs=ep.example_inputs,
            constants=ep.constants,
            verifiers=ep.verifiers,
        )
    g._codegen = torch.fx.graph.CodeGen()  # a flat graph, as the constructor makes it
    gm = _LazyGraphModule(ep.graph_module, g)
    gm.meta.update(ep.graph_module.meta)
    _exported._common_getitem_elimination_pass(gm, sig, module_call_graph)
    new = _shallow(ep)
    new._graph_module = gm
    new._graph_signature = sig
    new._range_constraints = range_constraints
    new._module_call_graph = module_call_graph
    _validate(new, g, added)
    new._guards_code = list(ep._guards_code) if same_guards else _guards_code(gm)
    return new


# What `Verifier.check` runs, reached one by one (a torch without them verifies everything).
_DELTA_CHECKS = ("_verify_exported_program_module_call_graph", "_verify_exported_program_signature")


def _validate(ep: ExportedProgram, g: torch.fx.Graph, added: Sequence[torch.fx.Node] | None) -> None:
    """``ep.validate()``, with the per-node checks on ``added`` only (the module docstring says why)."""
    verifiers = ep.verifiers
    # A graph of its own costs about what checking twenty nodes does: on small graphs all of
    # them are checked.
    delta = (
        added is not None
        and len(g.nodes) > 64 + 3 * len(added)
        and verifiers
        and all(hasattr(_verifier, f) for f in _DELTA_CHECKS)
        and all(hasattr(v, "_check_graph_module") for v in verifiers)
    )
    if not delta:
        ep.validate()
        return
    view = _graph_module_of(g, added)
    for v in verifiers:
        v()._check_graph_module(view)
        _verifier._verify_exported_program_module_call_graph(ep)
        _verifier._verify_exported_program_signature(ep)


def _graph_module_of(g: torch.fx.Graph, added: Sequence[torch.fx.Node]) -> torch.fx.GraphModule:
    """A graph of ``added`` (in ``g``'s order) reading placeholders for whatever else they read."""
    wanted = set(added)
    part = torch.fx.Graph()
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    for n in g.nodes:
        if n not in wanted:
            continue
        for i in n.all_input_nodes:
            if i not in env:
                env[i] = part.placeholder(i.name)
                env[i].meta.update(i.meta)
        env[n] = part.node_copy(n, env.__getitem__)
    part.output(tuple(env[n] for n in added))
    return _LazyGraphModule(torch.nn.Module(), part)


def _shallow(obj):
    """``copy.copy`` of a plain object (a dataclass instance, the program) without the
    ``__reduce_ex__`` round trip (a program's signature holds one spec per parameter)."""
    cls = type(obj)
    plain = _PLAIN.get(cls)
    if plain is None:
        plain = _PLAIN[cls] = (
            hasattr(obj, "__dict__")
            and not hasattr(cls, "__slots__")
            and not hasattr(cls, "__copy__")
            and cls.__reduce_ex__ is object.__reduce_ex__
            and cls.__reduce__ is object.__reduce__
        )
    if not plain:
        return copy.copy(obj)
    new = object.__new__(cls)
    new.__dict__.update(obj.__dict__)
    return new


# Per class: whether `_shallow` may copy its instances' __dict__ (no __slots__, no __copy__,
# no custom reduce), which is what copy.copy does for them.
_PLAIN: dict[type, bool] = {}


def _copy_spec(spec):
    spec = _shallow(spec)
    spec.arg = _shallow(spec.arg)
    return spec


def _copy_signature(sig: ExportGraphSignature) -> ExportGraphSignature:
    """A copy whose specs and their arguments (name and the like, all that gets renamed) are
    new objects; a program's signature lists every parameter, which deepcopy walks in depth."""
    return ExportGraphSignature(
        input_specs=[_copy_spec(s) for s in sig.input_specs], output_specs=[_copy_spec(s) for s in sig.output_specs]
    )


def _copy_call_graph(entries: list) -> list:
    """Entries are copied, and of each signature (the root's, preserved modules') what can be
    renamed: its argument specs. Its pytree specs are frozen dataclasses and are shared; a
    signature with other fields than these is copied in depth."""
    out = []
    for e in entries:
        e = _shallow(e)
        sig = e.signature
        if sig is not None:
            e.signature = _copy_module_signature(sig) if _shares_specs(sig) else copy.deepcopy(sig)
        out.append(e)
    return out


_SIGNATURE_FIELDS = ("inputs", "outputs", "in_spec", "out_spec", "forward_arg_names")


def _shares_specs(sig) -> bool:
    return tuple(vars(sig)) == _SIGNATURE_FIELDS and _frozen_spec(sig.in_spec) and _frozen_spec(sig.out_spec)


def _frozen_spec(spec) -> bool:
    params = getattr(type(spec), "__dataclass_params__", None)
    return isinstance(spec, pytree.TreeSpec) and params is not None and params.frozen


def _copy_module_signature(sig):
    sig = _shallow(sig)
    sig.inputs = [_shallow(a) for a in sig.inputs]
    sig.outputs = [_shallow(a) for a in sig.outputs]
    if sig.forward_arg_names is not None:
        sig.forward_arg_names = list(sig.forward_arg_names)
    return sig


def _guards_code(gm: torch.fx.GraphModule) -> list[str]:
    """The program's guards as code. torch finds the shape environment by checking every
    node's value for their one fake mode; a graph's first fake tensor names it."""
    first = next((n for n in gm.graph.nodes if isinstance(n.meta.get("val"), FakeTensor)), None)
    view = gm if first is None else SimpleNamespace(graph=SimpleNamespace(nodes=[first]))
    return _exported._convert_guards_to_code(view)
