"""The layout of a plugin op's outputs: contiguous, as its kernel writes them.

A region output may have had any strides (SDPA's output is a transposed view of its buffer),
and the nodes after the region were traced with them: a ``transpose`` that made it contiguous
again, then a ``reshape`` that export recorded as a ``view``. The op's kernel, its eager impl and
TensorRT all hand out dense row-major buffers. So after the pass (which plans the graph with the
region outputs' vals) has checked the edit, ``densify`` gives the op's outputs contiguous vals
and traces the nodes that read them again on the program's fake tensors, as far as their layout
changes: every val then says what running the graph gives, and a ``view`` that no longer
applies reads a contiguous copy instead (what ``reshape`` does).
"""

from __future__ import annotations

import contextlib
import operator
from typing import Any, Callable, ContextManager, Sequence

import torch
import torch.fx

# Ops that only reinterpret a buffer: on a layout they cannot view, they get a contiguous copy.
_VIEWS = (torch.ops.aten.view.default, torch.ops.aten._unsafe_view.default)
# Ops whose result depends on the input's strides themselves: on a new layout, other values.
_STRIDED = (torch.ops.aten.as_strided.default, torch.ops.aten.as_strided_copy.default, torch.ops.aten.as_strided_scatter.default)
# Node meta the inserted copy takes from the view it feeds (the reader and reports read these).
_CARRIED = ("nn_module_stack", "stack_trace", "source_fn_stack", "torch_fn")


def _is_op(node: torch.fx.Node, namespace: str) -> bool:
    return isinstance(node.target, torch._ops.OpOverload) and node.target.namespace == namespace


def _expr(d: Any) -> Any:
    return d.node.expr if isinstance(d, torch.SymInt) else d


def _same(a: Any, b: Any) -> bool:
    """Two vals with the same shapes and strides (by expression, adding no guard)."""
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.layout != torch.strided or b.layout != torch.strided:
            return a.layout == b.layout and list(map(_expr, a.shape)) == list(map(_expr, b.shape))
        return all(list(map(_expr, x)) == list(map(_expr, y)) for x, y in ((a.shape, b.shape), (a.stride(), b.stride())))
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return not isinstance(a, torch.Tensor) and not isinstance(b, torch.Tensor)


def _same_shapes(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.dtype == b.dtype and list(map(_expr, a.shape)) == list(map(_expr, b.shape))
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_same_shapes(x, y) for x, y in zip(a, b))
    return type(a) is type(b)


def _contiguous(v: torch.Tensor) -> bool:
    """Whether ``v``'s strides are row-major ones, without a guard (by expression)."""
    shape, stride = v.shape, v.stride()
    if all(type(d) is int for d in (*shape, *stride)):
        want = 1
        for size, st in zip(reversed(shape), reversed(stride)):
            if st != want:
                return False
            want *= max(size, 1)
        return True
    from torch._prims_common import make_contiguous_strides_for

    return list(map(_expr, stride)) == list(map(_expr, make_contiguous_strides_for(shape)))


def _dense(v: Any) -> Any:
    """``v`` with contiguous strides (the same object where it has them already)."""
    if isinstance(v, torch.Tensor) and v.layout == torch.strided:
        return v if _contiguous(v) else v.new_empty(v.shape)
    if isinstance(v, (tuple, list)):
        dense = type(v)(_dense(x) for x in v)
        return v if all(a is b for a, b in zip(dense, v)) else dense
    return v


def _dense_already(v: Any) -> bool:
    if isinstance(v, torch.Tensor):
        return v.layout != torch.strided or _contiguous(v)
    if isinstance(v, (tuple, list)):
        return all(_dense_already(x) for x in v)
    return True


def _fake_mode(vals: Sequence[Any]):
    return torch._guards.detect_fake_mode(list(vals))


def densify(g: torch.fx.Graph, added: list[torch.fx.Node], lock_of: Callable[[Any], ContextManager]) -> bool:
    """Contiguous vals on the ``tta`` op nodes among ``added`` (and their getitems), the nodes
    after them traced again where their inputs' layout changed, a copy before each view that no
    longer applies (appended to ``added``). Whether it traced anything under the program's fake
    mode (which may add guards to its shape environment)."""
    ops = [n for n in added if _is_op(n, "tta")]
    vals = [n.meta.get("val") for n in ops]
    # Most region outputs are contiguous already: nothing to do, no fake mode entered.
    if all(_dense_already(v) for v in vals):
        return False
    fake_mode = _fake_mode(vals)
    changed: set[torch.fx.Node] = set()
    with lock_of(fake_mode) if fake_mode is not None else contextlib.nullcontext(), fake_mode or contextlib.nullcontext():
        for n, v in zip(ops, vals):
            dense = _dense(v)
            if dense is v:
                continue
            _set(n, dense)
            changed.add(n)
            for gi in n.users:
                if gi.target is operator.getitem and isinstance(gi.args[1], int):
                    _set(gi, dense[gi.args[1]])
                    changed.add(gi)
        if not changed or fake_mode is None:
            return False
        first = min(changed, key=_position(g))
        node = first.next
        while node.op not in ("output", "root"):
            nxt = node.next
            if node not in changed and any(i in changed for i in node.all_input_nodes):
                _retrace(g, node, changed, added)
            node = nxt
    return True


def _position(g: torch.fx.Graph) -> Callable[[torch.fx.Node], int]:
    order = {n: i for i, n in enumerate(g.nodes)}
    return order.__getitem__


def _run(node: torch.fx.Node) -> Any:
    args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), lambda a: a.meta["val"])
    return node.target(*args, **kwargs)


def _retrace(g: torch.fx.Graph, node: torch.fx.Node, changed: set[torch.fx.Node], added: list[torch.fx.Node]) -> None:
    """``node``'s val from its inputs' new ones; unchanged (and its readers not traced again)
    where it cannot be traced here (not a function call, a data-dependent size)."""
    if node.op != "call_function" or "val" not in node.meta:
        return
    if node.target in _STRIDED:
        from ..errors import GraphError
        from .serialize import first_user_frame

        raise GraphError(
            f"`{node.name}` ({node.target}) reads a plugin op's output through strides export recorded for the "
            "region's own output layout; the op's kernel writes a contiguous buffer, so these strides would read "
            "other values. Make the region's output contiguous inside the region (`.contiguous()`)",
            kind="mismatch",
            node=node.name,
            source=first_user_frame(node.meta.get("stack_trace")),
        )
    try:
        new = _run(node)
    except Exception:
        if node.target not in _VIEWS or not isinstance(node.args[0], torch.fx.Node):
            return
        src = node.args[0]
        with g.inserting_before(node):
            copy = g.call_function(torch.ops.aten.clone.default, (src,), {"memory_format": torch.contiguous_format})
        copy.meta["val"] = src.meta["val"].clone(memory_format=torch.contiguous_format)
        copy.meta.update({k: node.meta[k] for k in _CARRIED if k in node.meta})
        node.replace_input_with(src, copy)
        added.append(copy)
        changed.add(copy)
        try:
            new = _run(node)
        except Exception:
            return
    old = node.meta["val"]
    # Only the layout may change: a new size (a fresh data-dependent symbol) keeps the old val.
    if not _same_shapes(new, old) or _same(new, old):
        return
    _set(node, new)
    changed.add(node)


def _set(node: torch.fx.Node, val: Any) -> None:
    node.meta["val"] = val
    if "tensor_meta" in node.meta:  # what fx's ShapeProp records; some passes read it
        from torch.fx.passes.shape_prop import _extract_tensor_metadata

        node.meta["tensor_meta"] = _extract_tensor_metadata(val) if isinstance(val, torch.Tensor) else None
