"""Run a launch function once on fake tensors with symbolic shapes and capture what it launches.

Every AOT backend needs the same thing from the user's plain launch code
(``launch_fn(*inputs, *outputs, **config)``): which kernel it starts, with which arguments,
on which grid. We run it under ``FakeTensorMode`` with a ``ShapeEnv``, so every input dimension
is a symbol of its own (``i{k}_{j}``, see ``base.py``) and every size the launch code computes
(``x.numel()``, ``triton.cdiv(n, BLOCK)``, ``x.stride(0)``) comes out as an expression over those
symbols. The backend's interceptor replaces the DSL's launch call while the function runs and
hands each launch to the harness instead of a GPU.

Hints: each symbol gets its own prime as the value sympy and the ShapeEnv reason with. Distinct
primes keep the ShapeEnv from merging two dims that happen to have the same hint (duck sizing)
or specializing a dim to 0/1, and keep Python ints computed from shapes from accidentally
looking divisible by 16. Conditions the launch code branches on (``assert n <= BLOCK``) become
ShapeEnv guards; we report them, because the compiled kernel is valid only where they hold.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import inspect
import operator
import threading
from dataclasses import dataclass
from typing import Any, Callable, ContextManager, Iterable, Sequence

import sympy
import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv

from .. import core
from ..errors import PluginError
from .base import input_symbol

# Hints for the symbols: primes, distinct per dimension, larger than the small sizes kernels
# special-case (1, 2, 4, ...) and far from powers of two.
_PRIMES = (
    97, 89, 83, 79, 73, 71, 67, 61, 59, 53, 47, 43, 41, 37, 31, 29,
    101, 103, 107, 109, 113, 127, 131, 137, 139, 149, 151, 157, 163, 167, 173, 179,
)

_DTYPES = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float64": torch.float64,
    "int8": torch.int8,
    "uint8": torch.uint8,
    "int16": torch.int16,
    "int32": torch.int32,
    "int64": torch.int64,
    "bool": torch.bool,
    "float8_e4m3fn": torch.float8_e4m3fn,
    "float8_e5m2": torch.float8_e5m2,
}


def dtype_name(dtype: torch.dtype | str) -> str:
    """``torch.float16`` -> ``"float16"`` (the spelling CompiledKernel and manifests use)."""
    if isinstance(dtype, str):
        name = dtype.removeprefix("torch.")
        if name not in _DTYPES:
            raise PluginError(f"unsupported dtype {dtype!r}; tta kernels take {sorted(_DTYPES)}")
        return name
    return str(dtype).removeprefix("torch.")


def torch_dtype(dtype: torch.dtype | str) -> torch.dtype:
    return _DTYPES[dtype_name(dtype)] if isinstance(dtype, str) else dtype


@dataclass(frozen=True)
class TensorMeta:
    """A tensor port of a kernel: dtype and shape.

    For inputs, each dim is ``None`` (dynamic: gets its own symbol ``i{k}_{j}``) or an ``int``
    (static). For outputs, each dim is an ``int`` or an expression string over input symbols
    (e.g. ``"i0_0*i0_1"``).
    """

    dtype: str
    shape: tuple[int | str | None, ...]

    @staticmethod
    def make(dtype: torch.dtype | str, shape: Iterable[int | str | None]) -> "TensorMeta":
        return TensorMeta(dtype_name(dtype), tuple(shape))

    @staticmethod
    def dynamic(dtype: torch.dtype | str, rank: int) -> "TensorMeta":
        return TensorMeta(dtype_name(dtype), (None,) * rank)

    def key(self) -> list:
        return [self.dtype, list(self.shape)]


def canonical(text: str) -> str:
    """Canonical text of a shape expression (Rust's expression algebra)."""
    return core.canonical_expr(text)


class Session:
    """One fake world: a ShapeEnv, a FakeTensorMode, fake inputs and outputs."""

    def __init__(self, input_metas: Sequence[TensorMeta]):
        self.env = ShapeEnv(duck_shape=False)
        self.mode = FakeTensorMode(shape_env=self.env, allow_non_fake_inputs=False)
        self._names: dict[sympy.Symbol, sympy.Symbol] = {}  # ShapeEnv symbol -> i{k}_{j}
        self.hints: dict[str, int] = {}
        self.input_metas = tuple(input_metas)
        primes = iter(_PRIMES)
        self.inputs: list[torch.Tensor] = []
        with self.mode:
            for k, meta in enumerate(self.input_metas):
                dims = []
                for j, d in enumerate(meta.shape):
                    if d is None or isinstance(d, str):
                        try:
                            hint = next(primes)
                        except StopIteration:
                            raise PluginError(f"too many dynamic dimensions (more than {len(_PRIMES)})") from None
                        dims.append(self._symbol(input_symbol(k, j), hint))
                    elif isinstance(d, int) and d >= 0:
                        dims.append(d)
                    else:
                        raise PluginError(f"input {k} dim {j}: {d!r} is neither a static size nor None (dynamic)")
                self.inputs.append(torch.empty(dims, dtype=torch_dtype(meta.dtype)))
        self.outputs: list[torch.Tensor] = []
        self._guards_before = 0

    def _symbol(self, name: str, hint: int) -> torch.SymInt:
        from torch._dynamo.source import ConstantSource

        source = ConstantSource(name)
        s = self.env.create_symbol(hint, source, dynamic_dim=DimDynamic.DYNAMIC)
        self._names[s] = sympy.Symbol(name, integer=True, positive=True)
        self.hints[name] = hint
        return self.env.create_symintnode(s, hint=hint, source=source)

    # -- outputs ------------------------------------------------------------------------------

    def outputs_from_metas(self, metas: Sequence[TensorMeta]) -> list[torch.Tensor]:
        """Fake outputs whose dims are the given expressions over input symbols."""
        scope = {name: sym for name, sym in self._symints().items()}
        scope.update(_EXPR_FUNCS)
        outs = []
        with self.mode:
            for k, meta in enumerate(metas):
                dims = []
                for j, d in enumerate(meta.shape):
                    if isinstance(d, int):
                        dims.append(d)
                    elif isinstance(d, str):
                        try:
                            dims.append(eval_shape(canonical(d), scope))
                        except Exception as e:
                            raise PluginError(f"output {k} dim {j}: cannot evaluate shape expression {d!r}: {e}") from e
                    else:
                        raise PluginError(f"output {k} dim {j}: give an int or an expression over input symbols, not {d!r}")
                outs.append(torch.empty(dims, dtype=torch_dtype(meta.dtype)))
        self.outputs = outs
        return outs

    def outputs_from_fn(self, meta_fn: Callable, where: str) -> list[torch.Tensor]:
        """Fake outputs from ``meta_fn(*inputs)`` (a plugin's meta_impl or a region body)."""
        try:
            with self.mode:
                outs = meta_fn(*self.inputs)
        except Exception as e:
            raise PluginError(f"{where}: computing the outputs on symbolic shapes failed: {type(e).__name__}: {e}") from e
        outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
        for o in outs:
            if not isinstance(o, torch.Tensor):
                raise PluginError(f"{where}: the output function returned {type(o).__name__}, not tensors")
        # Kernels write dense buffers; TensorRT hands plugins contiguous (LINEAR) tensors.
        with self.mode:
            self.outputs = [o if o.is_contiguous() else torch.empty(o.shape, dtype=o.dtype) for o in outs]
        return self.outputs

    def output_metas(self) -> list[TensorMeta]:
        return [TensorMeta(dtype_name(o.dtype), tuple(self.expr_or_int(d) for d in o.shape)) for o in self.outputs]

    def _symints(self) -> dict[str, torch.SymInt]:
        out = {}
        for t, meta in zip(self.inputs, self.input_metas):
            for d in t.shape:
                if isinstance(d, torch.SymInt):
                    out[str(self.rename(d.node.expr))] = d
        return out

    # -- expressions --------------------------------------------------------------------------

    def rename(self, expr: sympy.Basic) -> sympy.Basic:
        return expr.xreplace(self._names)

    def expr(self, value: Any) -> str:
        """An int or SymInt as a canonical expression string over ``i{k}_{j}``."""
        if isinstance(value, bool):
            raise TypeError("a bool is not a size")
        if isinstance(value, int):
            return str(value)
        if isinstance(value, torch.SymInt):
            e = self.rename(value.node.expr)
            if e.free_symbols - set(self._names.values()):
                raise PluginError(f"size expression {e} mentions values that are not input dimensions")
            try:
                return canonical(str(e))
            except Exception as err:
                raise PluginError(f"size expression {e} cannot be expressed for TensorRT: {err}") from err
        raise TypeError(f"{type(value).__name__} is not an integer size")

    def expr_or_int(self, value: Any) -> int | str:
        c = constant_int(value)
        return c if c is not None else self.expr(value)

    def grid(self, grid: Any, here: str) -> tuple[str, str, str]:
        """A launch grid (an int, or 1 to 3 of them) as three expressions."""
        dims = tuple(grid) if isinstance(grid, (tuple, list)) else (grid,)
        if not 1 <= len(dims) <= 3:
            raise PluginError(f"{here}: the grid {grid!r} must have 1 to 3 dimensions")
        try:
            return tuple(self.expr(g) for g in dims) + ("1",) * (3 - len(dims))  # type: ignore[return-value]
        except TypeError as e:
            raise PluginError(f"{here}: grid {grid!r} is not made of integers: {e}") from None

    def ports(self) -> dict[str, Any]:
        """The recorded plan fields every backend shares: port dtypes, output shapes, guards."""
        return {
            "input_dtypes": tuple(dtype_name(t.dtype) for t in self.inputs),
            "output_dtypes": tuple(dtype_name(t.dtype) for t in self.outputs),
            "output_shapes": tuple(tuple(str(d) for d in m.shape) for m in self.output_metas()),
            "guards": self.guards(),
        }

    def guards(self) -> list[str]:
        """Conditions on input dims the launch code relied on (since ``mark()``)."""
        out = []
        for g in self.env.guards[self._guards_before :]:
            out.append(str(self.rename(g.expr)))
        return out

    def mark(self) -> None:
        self._guards_before = len(self.env.guards)

    # -- tensor roles -------------------------------------------------------------------------

    def tensor_role(self, t: torch.Tensor) -> tuple[str, int] | None:
        """``("input", k)`` / ``("output", k)`` when ``t`` is that port's buffer (the tensor itself,
        or a view starting at the same address, e.g. ``x.view(-1)``), else None."""
        for kind, ports in (("input", self.inputs), ("output", self.outputs)):
            for k, p in enumerate(ports):
                if t is p:
                    return kind, k
        for kind, ports in (("input", self.inputs), ("output", self.outputs)):
            for k, p in enumerate(ports):
                if _same_storage(t, p):
                    if constant_int(t.storage_offset()) != constant_int(p.storage_offset()):
                        raise PluginError(
                            f"a view of {kind} {k} at another offset ({t.storage_offset()}) is passed to the kernel; "
                            "TensorRT passes only the buffer's start: pass the tensor and add the offset in the kernel"
                        )
                    return kind, k
        return None


def _same_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    try:
        return a.untyped_storage()._cdata == b.untyped_storage()._cdata
    except Exception:
        return False


def constant_int(value: Any) -> int | None:
    """The value of an int, or of a SymInt whose expression is a number; None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, torch.SymInt):
        e = value.node.expr
        if e.is_number:
            return int(e)
    return None


def _floordiv(a, b):
    return a // b


def _ceildiv(a, b):
    return -((-a) // b)


# Functions an expression string may call when evaluated on SymInts (the canonical forms the
# Rust algebra prints).
_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}


def eval_shape(text: str, scope: dict) -> Any:
    """Evaluate a canonical shape expression (``src/lowering/expr.rs`` prints them) over
    ``scope``: symbols and the functions of ``_EXPR_FUNCS``. A tree walk over exactly that
    grammar, so no other Python can run."""

    def walk(n: ast.AST) -> Any:
        if isinstance(n, ast.Expression):
            return walk(n.body)
        if isinstance(n, ast.Constant) and type(n.value) is int:
            return n.value
        if isinstance(n, ast.Name) and n.id in scope:
            return scope[n.id]
        if isinstance(n, ast.BinOp) and type(n.op) in _BINOPS:
            return _BINOPS[type(n.op)](walk(n.left), walk(n.right))
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            return -walk(n.operand)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in _EXPR_FUNCS and not n.keywords:
            return scope[n.func.id](*(walk(a) for a in n.args))
        raise ValueError(f"unsupported element {ast.dump(n)[:60]} in shape expression {text!r}")

    return walk(ast.parse(text, mode="eval"))


_EXPR_FUNCS = {
    "FloorDiv": _floordiv,
    "CeilDiv": _ceildiv,
    "Mod": lambda a, b: a % b,
    "Max": lambda *xs: _fold(torch.sym_max, xs),
    "Min": lambda *xs: _fold(torch.sym_min, xs),
}


def _fold(f, xs):
    acc = xs[0]
    for x in xs[1:]:
        acc = f(acc, x)
    return acc


# -- the harness ------------------------------------------------------------------------------

Interceptor = Callable[[Callable[[Any], None]], ContextManager]


def source_identity(obj: Any, kernels_only: bool = False) -> str | None:
    """What identifies a kernel's or function's code: Triton's ``cache_key`` (which covers the
    @jit functions it calls), else the sha256 of the Python source. ``kernels_only``: None for
    plain functions and classes (used when scanning what a launch function refers to)."""
    key = getattr(obj, "cache_key", None)
    if isinstance(key, str) and not inspect.isclass(obj):
        return key
    fn = obj
    for attr in ("fn", "_pyfunc", "__wrapped__", "func"):
        inner = getattr(fn, attr, None)
        if inner is not None and (inspect.isfunction(inner) or callable(inner)) and not inspect.isclass(inner):
            fn = inner
            break
    if kernels_only and fn is obj:
        return None  # a plain function, class or object: the module digest covers same-module code
    if not (inspect.isfunction(fn) or inspect.ismethod(fn)):
        return None
    code = fn.__code__
    cached = _source_digests.get(code)
    if cached is None:
        try:
            text = inspect.getsource(fn)
        except (OSError, TypeError):
            text = f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', '?')}"
        # Keyed on the code object: the source of the code that is loaded, read once.
        cached = _source_digests[code] = hashlib.sha256(text.encode()).hexdigest()
    return cached


_source_digests: dict[Any, str] = {}


def launch_name(fn: Callable) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


def run_launch(
    launch_fn: Callable,
    config: dict,
    session: Session,
    interceptor: Interceptor,
    where: str | None = None,
) -> list[Any]:
    """Call ``launch_fn(*inputs, *outputs, **config)`` on the session's fakes with the backend's
    ``interceptor(sink)`` active; return what the interceptor passed to ``sink`` (one item per
    launch). The interceptor must not launch anything itself."""
    where = where or launch_name(launch_fn)
    captured: list[Any] = []
    session.mark()
    try:
        with session.mode, interceptor(captured.append):
            launch_fn(*session.inputs, *session.outputs, **config)
    except PluginError:
        raise
    except Exception as e:
        text = str(e).split("\nException raised from")[0].strip().splitlines()
        first = text[0] if text else type(e).__name__
        tb_names = {f.name for f in _frames(e)}
        hint = ""
        if "data_ptr" in tb_names or "data_ptr" in first or "numel() on tensor with symbolic" in first:
            hint = " (launch functions run on fake tensors here: pass tensors to the kernel, never data_ptr() or tensor values)"
        elif "data-dependent" in first.lower() or "GuardOnDataDependent" in type(e).__name__:
            hint = " (launch code may use shapes, never tensor values)"
        raise PluginError(
            f"{where}: running the launch function with symbolic shapes (config {config}) failed: "
            f"{type(e).__name__}: {first}{hint}"
        ) from e
    return captured


def _frames(e: BaseException):
    import traceback

    return traceback.extract_tb(e.__traceback__)


def one_launch(captured: list[Any], where: str, config: dict) -> Any:
    """A plugin tactic is one kernel launch; refuse zero or several."""
    if not captured:
        raise PluginError(f"{where}: the launch function launched no kernel (config {config})")
    if len(captured) > 1:
        raise PluginError(
            f"{where}: the launch function launched {len(captured)} kernels (config {config}); "
            "a TensorRT AOT plugin runs exactly one kernel: split it into several plugins"
        )
    return captured[0]


_patch_lock = threading.Lock()


@contextlib.contextmanager
def patched(owner: Any, attr: str, replacement_factory: Callable[[Any], Any], active: threading.local):
    """Replace ``owner.attr`` while any thread records, and route calls made by a recording
    thread to its sink (``active.sink``) while other threads keep the original behaviour.
    ``replacement_factory(original)`` builds the replacement."""
    with _patch_lock:
        count = getattr(owner, f"_tta_patch_count_{attr}", 0)
        if count == 0:
            original = getattr(owner, attr)
            setattr(owner, f"_tta_original_{attr}", original)
            setattr(owner, attr, replacement_factory(original))
        setattr(owner, f"_tta_patch_count_{attr}", count + 1)
    try:
        yield
    finally:
        with _patch_lock:
            count = getattr(owner, f"_tta_patch_count_{attr}") - 1
            setattr(owner, f"_tta_patch_count_{attr}", count)
            if count == 0:
                setattr(owner, attr, getattr(owner, f"_tta_original_{attr}"))
