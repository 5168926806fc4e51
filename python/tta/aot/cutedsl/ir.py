"""Reading a CuTeDSL kernel launch back out of the traced IR.

While ``cute.compile`` traces the host function, ``KernelLauncher.launch`` is hooked. Its
arguments, grid and block are DSL values backed by MLIR SSA values of the host function; each one
is followed back through integer arithmetic to the host function's block arguments, whose
meaning tta knows (a port's pointer, or an int with a shape expression), and rendered as a shape
expression. Only what TensorRT can evaluate is accepted: ``+ - * // % max min`` and casts; a
value built any other way (``cute.ceil_div``, layouts, loop variables) is refused with a hint to
compute it with plain integer arithmetic or in the launch function.
"""

from __future__ import annotations

import contextlib
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from ...common import bridge as core
from ...errors import PluginError
from ..record import patched

_BINARY = {
    "arith.addi": "({} + {})",
    "arith.subi": "({} - {})",
    "arith.muli": "({})*({})",
    # Sizes are non-negative, so truncating division is floor division.
    "arith.divsi": "FloorDiv({}, {})",
    "arith.divui": "FloorDiv({}, {})",
    "arith.floordivsi": "FloorDiv({}, {})",
    "arith.ceildivsi": "CeilDiv({}, {})",
    "arith.ceildivui": "CeilDiv({}, {})",
    "arith.remsi": "Mod({}, {})",
    "arith.remui": "Mod({}, {})",
    "arith.maxsi": "Max({}, {})",
    "arith.maxui": "Max({}, {})",
    "arith.minsi": "Min({}, {})",
    "arith.minui": "Min({}, {})",
}
# CuTe integer-tuple arithmetic on single (scalar) values, as the DSL emits it for ``cute.size``.
_CUTE_BINARY = {
    "cute.tuple_add": "({} + {})",
    "cute.tuple_sub": "({} - {})",
    "cute.tuple_mul": "({})*({})",
    "cute.tuple_div": "FloorDiv({}, {})",
    "cute.tuple_mod": "Mod({}, {})",
}
_CUTE_SCALAR = {"cute.get_scalars", "cute.get_leaves"}
# One dynamic integer (a "?" leaf, maybe with a divisibility, e.g. "?{div=1024}"), or a plain int.
_DYNAMIC_SCALAR = re.compile(r'!cute\.int_tuple<"\?[^,()"]*">|i32|i64|index')
_CASTS = {"arith.extsi", "arith.extui", "arith.trunci", "arith.index_cast", "arith.index_castui", "builtin.unrealized_conversion_cast"}
_HINT = "compute it with + - * // from the host function's Int32 arguments, or in the launch function and pass it as an Int32"


def _value(x: Any):
    """The MLIR value behind a DSL value (``Int32``, ``Pointer``) or an operand."""
    from cutlass._mlir import ir

    if isinstance(x, ir.Value):
        return x
    if isinstance(getattr(x, "value", None), ir.Value):
        return x.value
    if hasattr(x, "ir_value"):
        v = x.ir_value()
        if isinstance(v, ir.Value):
            return v
        if isinstance(getattr(v, "value", None), ir.Value):
            return v.value
    raise TypeError(f"{type(x).__name__} has no MLIR value")


def _host_func(block):
    """The ``func.func`` the launch is being emitted into (the host function)."""
    op = block.owner.operation if block.owner is not None else None
    while op is not None and op.name != "func.func":
        parent = op.parent
        op = parent.operation if parent is not None else None
    return op


class Resolver:
    """Renders host-function values as shape expressions or ports."""

    def __init__(self, host_op, host_args: list, here: str, tensors: Any = None):
        self.tensors = tensors  # cutedsl_tensors.TensorPlan: layouts of rebuilt cute.Tensors
        self.entry = host_op.regions[0].blocks[0]
        self.dynamic = [h for h in host_args if h.kind != "constexpr"]
        self.here = here
        if len(self.entry.arguments) != len(self.dynamic):
            raise PluginError(
                f"{here}: the traced host function has {len(self.entry.arguments)} runtime arguments, but tta counted "
                f"{len(self.dynamic)} ({', '.join(h.name for h in self.dynamic)})"
            )

    def _host_arg(self, v, what: str):
        from cutlass._mlir import ir

        if not isinstance(v.owner, ir.Block):
            return None
        if v.owner != self.entry:
            raise PluginError(f"{self.here}: {what} depends on a loop or branch variable of the host function; {_HINT}")
        return self.dynamic[ir.BlockArgument(v).arg_number]

    def port(self, x: Any, what: str) -> tuple[str, int]:
        v = _value(x)
        while True:
            h = self._host_arg(v, what)
            if h is not None:
                if h.kind != "pointer":
                    raise PluginError(f"{self.here}: {what} is host argument {h.name!r}, which is not a pointer")
                return h.port
            op = v.owner.operation
            if op.name != "builtin.unrealized_conversion_cast" or len(op.operands) != 1:
                raise PluginError(
                    f"{self.here}: {what} is computed by {op.name}; TensorRT passes each buffer's start, so pass the "
                    "host function's pointer argument unchanged (offset it in the kernel)"
                )
            v = _value(op.operands[0])

    def expr(self, x: Any, what: str) -> str:
        if isinstance(x, bool):
            raise PluginError(f"{self.here}: {what} is a bool")
        if isinstance(x, int):
            return str(x)
        text = self._expr(_value(x), what, 0)
        try:
            return core.canonical_expr(text)
        except Exception as e:
            raise PluginError(f"{self.here}: {what} = {text} cannot be expressed for TensorRT: {e}") from None

    def _size(self, op, what: str) -> str:
        """``cute.size`` of a tensor the generated host rebuilt: the product of its shape."""
        from cutlass._mlir import ir

        view = _value(op.operands[0]).owner
        view = getattr(view, "operation", None)
        h = self._host_arg(_value(view.operands[0]), what) if view is not None and view.name == "cute.make_view" else None
        if h is None or h.name not in self.tensors.tensors:
            raise PluginError(f"{self.here}: {what} is the size of a tensor that is not a host argument; {_HINT}")
        shape = self.tensors.tensors[h.name].shape
        modes = list(ir.DenseI32ArrayAttr(op.attributes["mode"])) if "mode" in op.attributes else []
        if len(modes) > 1:
            raise PluginError(f"{self.here}: {what} is the size of a nested mode {modes}; {_HINT}")
        leaves = [shape[modes[0]]] if modes else shape
        return "*".join(str(x) if isinstance(x, int) else f"({self.tensors.extras[x[1]]})" for x in leaves) or "1"

    def _expr(self, v, what: str, depth: int) -> str:
        from cutlass._mlir import ir

        if depth > 200:
            raise PluginError(f"{self.here}: {what} is computed by too deep a chain of operations")
        h = self._host_arg(v, what)
        if h is not None:
            if h.kind != "int":
                raise PluginError(f"{self.here}: {what} is host argument {h.name!r}, which is not an integer")
            return f"({h.expr})"
        static = re.fullmatch(r'!cute\.int_tuple<"(-?\d+)">', str(v.type))
        if static:  # a static CuTe integer
            return static.group(1)
        op = v.owner.operation
        if op.name == "arith.constant":
            return str(ir.IntegerAttr(op.attributes["value"]).value)
        if op.name in _CUTE_SCALAR and len(op.operands) == 1 and _DYNAMIC_SCALAR.fullmatch(str(v.type)):
            return self._expr(_value(op.operands[0]), what, depth + 1)
        if op.name == "cute.size" and self.tensors is not None:
            return self._size(op, what)
        args = [self._expr(_value(o), what, depth + 1) for o in op.operands]
        if op.name in _BINARY and len(args) == 2:
            return _BINARY[op.name].format(*args)
        if op.name in _CUTE_BINARY and len(args) == 2:
            return _CUTE_BINARY[op.name].format(*args)
        if op.name in _CASTS and len(args) == 1:
            return args[0]
        raise PluginError(f"{self.here}: {what} is computed by {op.name}, which tta cannot turn into a TensorRT expression; {_HINT}")


@dataclass
class Launch:
    """The kernel launch the host function makes, in shape expressions."""

    kernel_name: str
    kernel_fn: Any = None  # the @cute.kernel function (undecorated)
    params: list[tuple[str, int]] = field(default_factory=list)  # per runtime kernel param
    extras: list[str] = field(default_factory=list)
    grid: tuple[str, str, str] = ("1", "1", "1")
    block: tuple[int, int, int] = (1, 1, 1)
    smem: int | None = None  # None: sized by the DSL's allocator (read from the host IR later)


_hooks = threading.local()


class LaunchHook:
    """Hooks ``KernelLauncher.launch`` (in this thread) while ``cute.compile`` traces."""

    def __init__(self, host_args: list, here: str, tensors: Any = None):
        self.host_args, self.here, self.tensors = host_args, here, tensors
        self.launches: list[Launch] = []

    def swap(self, launcher):
        """For a kernel launched with the generated host's rebuilt ``cute.Tensor``s: the launcher
        of the pointer-ABI entry kernel standing in for it (``cutedsl_tensors.py``), else None."""
        import cutlass.cute as cute

        from . import tensors as cutedsl_tensors
        from .params import is_constexpr, signature

        if self.tensors is None:
            return None
        sig = signature(launcher.funcBody)
        bound = sig.bind(*launcher.func_args, **launcher.func_kwargs)
        bound.apply_defaults()
        params = [(n, bound.arguments[n], is_constexpr(p.annotation)) for n, p in sig.parameters.items()]
        if not any(isinstance(v, cute.Tensor) for _, v, _ in params):
            return None
        name = getattr(launcher.funcBody, "__qualname__", "kernel")
        try:
            entry, how = cutedsl_tensors.entry_kernel(launcher.funcBody, params, self.tensors)
        except PluginError as e:
            raise PluginError(f"{self.here}: launch of {name}: {e}") from None
        values = cutedsl_tensors.host_values()
        args = []
        for kind, ref in how:
            if kind == "pointer":
                args.append(values[ref])
            elif kind == "extra":
                args.append(values[f"_e{ref}"])
            else:
                args.append(bound.arguments[ref])
        return entry(*args)

    @contextlib.contextmanager
    def active(self):
        from cutlass.cutlass_dsl.cutlass import KernelLauncher

        prev, _hooks.sink = getattr(_hooks, "sink", None), self
        try:
            with patched(KernelLauncher, "launch", _hooked_launch, _hooks):
                yield
        finally:
            _hooks.sink = prev

    def result(self) -> Launch:
        if len(self.launches) != 1:
            raise PluginError(
                f"{self.here}: the host function launched {len(self.launches)} kernels; a TensorRT AOT plugin runs exactly one kernel"
            )
        return self.launches[0]

    def record(self, launcher, args: tuple, kwargs: dict) -> None:
        from cutlass._mlir import ir

        kwargs = dict(kwargs)
        launcher.dsl._preprocess_launch_config_args(args, kwargs)
        cfg = launcher.dsl.LaunchConfig(*args, **kwargs)
        name = getattr(launcher.funcBody, "__qualname__", "kernel")
        here = f"{self.here}: launch of {name}"
        unsupported = [
            what
            for what, on in (
                ("clusters", cfg.has_cluster or cfg.has_fallback_cluster),
                ("a cooperative launch", cfg.cooperative),
                ("programmatic dependent launch", cfg.use_pdl),
            )
            if on
        ]
        if unsupported:
            raise PluginError(f"{here} uses {', '.join(unsupported)}, which the TensorRT AOT plugin launch cannot provide")
        r = Resolver(_host_func(ir.InsertionPoint.current.block), self.host_args, here, self.tensors)
        launch = Launch(kernel_name=name, kernel_fn=launcher.funcBody)
        launch.grid = tuple(r.expr(g, f"grid[{i}]") for i, g in enumerate(cfg.grid))
        for i, b in enumerate(cfg.block):
            if not isinstance(b, int):
                raise PluginError(f"{here}: block[{i}] must be a Python int (the kernel's .reqntid), not {b!r}")
        launch.block = tuple(cfg.block)
        if cfg.smem is not None:
            smem = r.expr(cfg.smem, "smem")
            if not smem.lstrip("-").isdigit():
                raise PluginError(f"{here}: the dynamic shared memory {smem} depends on shapes; give a constant")
            launch.smem = int(smem)
        self._params(launcher, r, launch, here)
        self.launches.append(launch)

    def _params(self, launcher, r: Resolver, launch: Launch, here: str) -> None:
        import cutlass
        import cutlass.cute as cute

        from .params import is_constexpr, signature

        sig = signature(launcher.funcBody)
        bound = sig.bind(*launcher.func_args, **launcher.func_kwargs)
        bound.apply_defaults()
        for pname, p in sig.parameters.items():
            v = bound.arguments[pname]
            if is_constexpr(p.annotation):
                continue
            what = f"kernel parameter {pname!r}"
            if isinstance(v, cute.Tensor):
                raise PluginError(
                    f"{here}: {what} is a cute.Tensor, a by-value struct (pointer, shape, strides) that TensorRT cannot "
                    "pass; take a cute.Pointer and Int32 sizes and build the tensor in the kernel with cute.make_tensor"
                )
            if isinstance(v, cute.Pointer):
                launch.params.append(r.port(v, what))
            elif isinstance(v, (cutlass.Int32, cutlass.Uint32)) or (isinstance(v, int) and not isinstance(v, bool)):
                launch.params.append(("extra", len(launch.extras)))
                launch.extras.append(r.expr(v, what))
            elif isinstance(v, cutlass.Integer):
                raise PluginError(f"{here}: {what} is a {type(v).__name__}; TensorRT passes only 32-bit int extras")
            else:
                raise PluginError(
                    f"{here}: {what} gets {type(v).__name__} {v!r} at run time; TensorRT AOT kernels take pointers and "
                    f"int32 scalars only: declare it `{pname}: cutlass.Constexpr` to compile the value in"
                )


def _hooked_launch(original):
    def launch(self, *args, **kwargs):
        hook = getattr(_hooks, "sink", None)
        if hook is not None:
            swapped = hook.swap(self)
            if swapped is not None:
                self._launched = True  # launched, through the entry kernel standing in for it
                return swapped.launch(*args, **kwargs)
            hook.record(self, args, kwargs)
        return original(self, *args, **kwargs)

    return launch


# The DSL's launch configuration struct in the lowered host code:
# {grid[3], block[3], i64 dynamic smem, stream, attributes, attribute count}.
_CFG = r"!llvm\.struct<\(array<3 x i32>, array<3 x i32>, i64, ptr, ptr, i32\)>"


def dynamic_smem_from_host_ir(module, here: str) -> int:
    """The dynamic shared memory the DSL's allocator sized for the kernel (``cute.kernel_smem_size``
    becomes a constant only in a late pass): the constant the lowered host code stores into
    field 2 of its launch configuration."""
    text = "\n".join(line for line in str(module).splitlines() if len(line) < 4000)  # skip the embedded binary
    found = []
    for func in re.split(r"\n  llvm\.func ", text):
        for gep in re.findall(rf"(%\w+) = llvm\.getelementptr %\w+\[0, 2\] : \(!llvm\.ptr\) -> !llvm\.ptr, {_CFG}", func):
            for val in re.findall(rf"llvm\.store (%\w+), {re.escape(gep)} : i64", func):
                const = re.search(rf"{re.escape(val)} = llvm\.mlir\.constant\((\d+) : i64\)", func)
                found.append(int(const.group(1)) if const else None)
    if len(found) != 1 or found[0] is None:
        raise PluginError(
            f"{here}: could not read the kernel's dynamic shared memory from the compiled host code (found {found}); "
            "pass smem=<bytes> to .launch(...)"
        )
    return found[0]
