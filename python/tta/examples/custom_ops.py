"""``torch.library`` ops with Triton kernels, made TensorRT plugins with ``tta.custom_op``: the
cases Torch-TensorRT's own generator gets wrong (tensors after scalars, keyword-only and
keyword arguments, int/float/bool/str attributes, optional tensors, dtype-changing ops,
broadcasting and reshapes in the fake impl, shape checks that unify dims, several outputs, a
``triton_op``), and the seed RFC's own example (``torchtrt_ex::triton_circular_pad``, its kernel
as the RFC wrote it). Used by the tests and by the via-QDP GPU manifest (``CASES``: example inputs,
attribute values and an eager reference per op, so the conformance runner checks the PTX the
plugin hands TensorRT).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import torch
import triton
import triton.language as tl

NS = "tta_examples"


# -- kernels -----------------------------------------------------------------------------------


@triton.jit
def axpb_kernel(x_ptr, y_ptr, out_ptr, n, C, A: tl.constexpr, N: tl.constexpr, RELU: tl.constexpr, SUB: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    y = tl.load(y_ptr + offs % C, mask=mask).to(tl.float32)  # y broadcast over x's rows
    out = A * x - N * y if SUB else A * x + N * y
    if RELU:
        out = tl.maximum(out, 0.0)
    tl.store(out_ptr + offs, out.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def bias_kernel(x_ptr, b_ptr, out_ptr, n, C, HAS_BIAS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    if HAS_BIAS:
        x = x + tl.load(b_ptr + offs % C, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, x.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def split_kernel(x_ptr, half_ptr, sign_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(half_ptr + offs, x.to(tl.float16), mask=mask)
    tl.store(sign_ptr + offs, (x > 0).to(tl.int32), mask=mask)


@triton.jit
def pair_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    out = tl.load(x_ptr + offs, mask=mask) * tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, out, mask=mask)


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, K: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * K, mask=mask)


@triton.jit
def tiled_kernel(x_ptr, y_ptr, out_ptr, n, xn, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    out = tl.load(y_ptr + offs, mask=mask) + tl.load(x_ptr + offs % xn, mask=mask)
    tl.store(out_ptr + offs, out, mask=mask)


# -- launch functions: (*input tensors in schema order, *outputs, **config, **op arguments) ----


def launch_axpb(x, y, out, *, a, n, relu, mode, BLOCK=256):
    axpb_kernel[(triton.cdiv(out.numel(), BLOCK),)](
        x, y, out, out.numel(), y.shape[-1], A=a, N=n, RELU=relu, SUB=mode == "sub", BLOCK=BLOCK
    )


def launch_bias(x, bias, out, *, BLOCK=256):
    # An absent bias is None: a constexpr, so the kernel takes no pointer TensorRT would not pass.
    bias_kernel[(triton.cdiv(out.numel(), BLOCK),)](x, bias, out, out.numel(), x.shape[-1], HAS_BIAS=bias is not None, BLOCK=BLOCK)


def launch_tiled(x, y, out, *, BLOCK=256):
    tiled_kernel[(triton.cdiv(out.numel(), BLOCK),)](x, y, out, out.numel(), x.numel(), BLOCK=BLOCK)


def launch_split(x, half, sign, *, BLOCK=256):
    split_kernel[(triton.cdiv(x.numel(), BLOCK),)](x, half, sign, x.numel(), BLOCK=BLOCK)


def launch_pair(x, y, out, *, BLOCK=256):
    pair_kernel[(triton.cdiv(out.numel(), BLOCK),)](x, y, out, out.numel(), BLOCK=BLOCK)


def launch_flatten_scale(x, out, *, k, BLOCK=256):
    scale_kernel[(triton.cdiv(out.numel(), BLOCK),)](x, out, out.numel(), K=k, BLOCK=BLOCK)


# -- the ops -------------------------------------------------------------------------------------


@torch.library.custom_op(f"{NS}::axpb", mutates_args=())
def axpb(a: float, x: torch.Tensor, y: torch.Tensor, *, n: int = 1, relu: bool = False, mode: str = "add") -> torch.Tensor:
    """``a*x ± n*y`` (then relu): the tensors come after a scalar, y broadcasts over x."""
    out = a * x - n * y if mode == "sub" else a * x + n * y
    return torch.relu(out) if relu else out


@axpb.register_fake
def _(a, x, y, *, n=1, relu=False, mode="add"):
    return x.new_empty(torch.broadcast_shapes(x.shape, y.shape))


@torch.library.custom_op(f"{NS}::add_bias", mutates_args=())
def add_bias(x: torch.Tensor, bias: Optional[torch.Tensor] = None) -> torch.Tensor:
    return x + bias if bias is not None else x.clone()


@add_bias.register_fake
def _(x, bias=None):
    return torch.empty_like(x)


@torch.library.custom_op(f"{NS}::split_sign", mutates_args=())
def split_sign(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Two outputs, neither of x's dtype: x as float16, and its sign bit as int32."""
    return x.half(), (x > 0).to(torch.int32)


@split_sign.register_fake
def _(x):
    return x.new_empty(x.shape, dtype=torch.float16), x.new_empty(x.shape, dtype=torch.int32)


@torch.library.custom_op(f"{NS}::pair_mul", mutates_args=())
def pair_mul(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return x * y


@pair_mul.register_fake
def _(x, y):
    torch._check(x.shape == y.shape, lambda: "pair_mul takes two tensors of one shape")
    return torch.empty_like(x)


@torch.library.custom_op(f"{NS}::add_tiled", mutates_args=())
def add_tiled(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``y + cat([x, x])``: y has twice x's rows, which the fake impl checks."""
    return y + torch.cat([x, x])


@add_tiled.register_fake
def _(x, y):
    torch._check(y.shape[0] == 2 * x.shape[0])
    torch._check(y.shape[1] == x.shape[1])
    return torch.empty_like(y)


@torch.library.custom_op(f"{NS}::flatten_scale", mutates_args=())
def flatten_scale(x: torch.Tensor, k: int) -> torch.Tensor:
    return x.reshape(x.shape[0], -1) * k


@flatten_scale.register_fake
def _(x, k):
    return x.new_empty(x.shape[0], x.shape[1] * x.shape[2])


@torch.library.triton_op(f"{NS}::tri_scale", mutates_args=())
def tri_scale(x: torch.Tensor, k: int) -> torch.Tensor:
    """A ``triton_op``: its fake impl is the function itself, traced."""
    out = torch.empty_like(x)
    n = x.numel()
    torch.library.wrap_triton(scale_kernel)[(triton.cdiv(n, 256),)](x, out, n, K=k, BLOCK=256)
    return out


def launch_tri_scale(x, out, *, k, BLOCK=256):
    scale_kernel[(triton.cdiv(out.numel(), BLOCK),)](x, out, out.numel(), K=k, BLOCK=BLOCK)


# -- the seed RFC's example: its kernel and op as written there, its launch code on tensor sizes --


@triton.jit  # type: ignore
def circ_pad_kernel(
    X: torch.Tensor,
    all_pads_0: tl.int32,
    all_pads_2: tl.int32,
    all_pads_4: tl.int32,
    all_pads_6: tl.int32,
    orig_dims_0: tl.int32,
    orig_dims_1: tl.int32,
    orig_dims_2: tl.int32,
    orig_dims_3: tl.int32,
    Y: torch.Tensor,
    Y_shape_1: tl.int32,
    Y_shape_2: tl.int32,
    Y_shape_3: tl.int32,
    X_len: tl.int32,
    Y_len: tl.int32,
    BLOCK_SIZE: tl.constexpr,
) -> None:
    pid = tl.program_id(0)
    i = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)

    mask_y = i < Y_len

    i3 = i % Y_shape_3
    i2 = (i // Y_shape_3) % Y_shape_2
    i1 = (i // Y_shape_3 // Y_shape_2) % Y_shape_1
    i0 = i // Y_shape_3 // Y_shape_2 // Y_shape_1

    j0 = (i0 - all_pads_0 + orig_dims_0) % orig_dims_0
    j1 = (i1 - all_pads_2 + orig_dims_1) % orig_dims_1
    j2 = (i2 - all_pads_4 + orig_dims_2) % orig_dims_2
    j3 = (i3 - all_pads_6 + orig_dims_3) % orig_dims_3

    load_idx = orig_dims_3 * orig_dims_2 * orig_dims_1 * j0 + orig_dims_3 * orig_dims_2 * j1 + orig_dims_3 * j2 + j3
    mask_x = load_idx < X_len

    x = tl.load(X + load_idx, mask=mask_x)

    tl.store(Y + i, x, mask=mask_y)


@torch.library.custom_op("torchtrt_ex::triton_circular_pad", mutates_args=())  # type: ignore[misc]
def triton_circular_pad(x: torch.Tensor, padding: Sequence[int]) -> torch.Tensor:
    return torch.nn.functional.pad(x, padding, "circular")


@torch.library.register_fake("torchtrt_ex::triton_circular_pad")  # type: ignore[misc]
def _(x: torch.Tensor, padding: Sequence[int]) -> torch.Tensor:
    return torch.nn.functional.pad(x, padding, "circular")


def launch_circular_pad(x, y, *, padding, BLOCK_SIZE=256):
    """The RFC's launch code, with sizes from the tensors (symbolic when compiled) instead of
    NumPy arrays of them."""
    n = len(x.shape)
    all_pads = [0] * (n * 2)
    for i in range(len(padding) // 2):
        all_pads[n * 2 - 2 * i - 2] = padding[i * 2]
        all_pads[n * 2 - 2 * i - 1] = padding[i * 2 + 1]
    grid = (triton.cdiv(y.numel(), BLOCK_SIZE),)
    circ_pad_kernel[grid](
        x,
        all_pads[0],
        all_pads[2],
        all_pads[4],
        all_pads[6],
        *x.shape,
        y,
        y.shape[1],
        y.shape[2],
        y.shape[3],
        x.numel(),
        y.numel(),
        BLOCK_SIZE=BLOCK_SIZE,
    )


# -- what each case is, for tests and the GPU manifest -------------------------------------------


@dataclass(frozen=True)
class Case:
    """One op call: the spec's launch function and configs, inputs by shape, the op's non-tensor
    arguments, and the eager reference."""

    name: str
    op: str
    launch: Callable
    configs: tuple
    make_inputs: Callable  # (shape, dtype, device) -> tensors in schema order (None for absent)
    values: dict
    reference: Callable  # (*plugin inputs) -> outputs
    test_shapes: tuple
    dtypes: tuple = (torch.float32,)
    # The oldest tensorrt.plugin that carries the op's attributes (list attributes need 11.3).
    min_plugin: tuple = (0, 0)


def randn(*shapes, dtype, device, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=g).to(device=device, dtype=dtype) for s in shapes]


CASES = (
    Case(
        "custom_axpb",
        f"{NS}::axpb",
        launch_axpb,
        ({"BLOCK": 256},),
        lambda s, dt, dev: randn(s, s[-1:], dtype=dt, device=dev),
        {"a": 0.5, "n": 3, "relu": True, "mode": "sub"},
        lambda x, y: torch.relu(0.5 * x - 3 * y),
        ((7, 33), (64, 128)),
    ),
    Case(
        "custom_add_bias",
        f"{NS}::add_bias",
        launch_bias,
        ({"BLOCK": 256},),
        lambda s, dt, dev: randn(s, s[-1:], dtype=dt, device=dev),
        {},
        lambda x, b: x + b,
        ((5, 40), (64, 128)),
    ),
    Case(
        "custom_split_sign",
        f"{NS}::split_sign",
        launch_split,
        ({"BLOCK": 256},),
        lambda s, dt, dev: randn(s, dtype=dt, device=dev),
        {},
        lambda x: (x.half(), (x > 0).to(torch.int32)),
        ((9, 17), (128, 64)),
    ),
    Case(
        "custom_flatten_scale",
        f"{NS}::flatten_scale",
        launch_flatten_scale,
        ({"BLOCK": 128},),
        lambda s, dt, dev: randn(s, dtype=dt, device=dev),
        {"k": 3},
        lambda x: x.reshape(x.shape[0], -1) * 3,
        ((3, 5, 7), (16, 8, 32)),
    ),
    Case(
        "custom_circular_pad",
        "torchtrt_ex::triton_circular_pad",
        launch_circular_pad,
        ({"BLOCK_SIZE": 256},),
        lambda s, dt, dev: randn(s, dtype=dt, device=dev),
        {"padding": [1, 1, 2, 0]},
        lambda x: torch.nn.functional.pad(x, [1, 1, 2, 0], "circular"),
        ((2, 3, 8, 8), (4, 5, 6, 7), (1, 2, 9, 5)),
        min_plugin=(11, 3),
    ),
)
