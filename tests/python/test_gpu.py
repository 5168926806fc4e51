"""GPU tests (``-m gpu``; skipped where there is no CUDA device): the example kernels compiled
with this machine's Triton and launched the QDP way, tta's eager path, and a kernel whose
shared memory needs the >48 KB opt-in."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU"),
]


@pytest.fixture(scope="module")
def max_ptx():
    from tta.aot import ptxabi
    from tta.runtime.launcher import driver_version

    return ptxabi.max_ptx_for_driver(driver_version())


def _triton_examples():
    from tta.examples.kernels import examples

    # Library kernels (Liger-Kernel) need their package to compile; the manifest carries them here.
    return [ex for ex in examples(("triton",)) if ex.buildable()]


@pytest.mark.parametrize("name", [ex.name for ex in _triton_examples()])
def test_fresh_compile_launched_the_qdp_way(name, max_ptx, tmp_path):
    from tta.aot.base import guards_hold, symbol_values
    from tta.aot.compile import compile_specs
    from tta.common.cache import Cache
    from tta.examples.kernels import by_name
    from tta.runtime.launcher import Loaded

    ex = by_name(name)
    for dtype in ex.dtypes:
        for k in compile_specs([ex.spec()], ex.input_metas(dtype), ex.meta, max_ptx=max_ptx, cache=Cache(tmp_path), progress=False):
            loaded = Loaded(k)
            for shape in ex.test_shapes:
                inputs = ex.make_inputs(shape, dtype, "cuda")
                if not guards_hold(k.meta["guards"], symbol_values([t.shape for t in inputs])):
                    continue
                outs = loaded(inputs)
                ref = ex.reference(*inputs)
                for out, r in zip(outs, ref if isinstance(ref, tuple) else (ref,), strict=True):
                    err, ok = ex.compare(out, r)
                    assert ok, (name, dtype, shape, k.config, err)


@pytest.mark.parametrize("name", [ex.name for ex in _triton_examples()])
def test_eager_launch_uses_the_kernel_on_cuda(name, monkeypatch):
    from tta.examples.kernels import by_name
    from tta.runtime import eager

    ex = by_name(name)
    calls = []
    spec = ex.spec()
    original = spec.launch_fn

    def counting(*a, **k):
        calls.append(k)
        return original(*a, **k)

    object.__setattr__(spec, "launch_fn", counting)
    import tta

    plugin = tta.custom_plugin(kernel=[spec], meta_impl=ex.meta, name=f"{name}_eager")
    inputs = ex.make_inputs(ex.test_shapes[-1], torch.float16, "cuda")
    outs = eager.launch(plugin, inputs)
    assert outs is not None and calls
    ref = ex.reference(*inputs)
    for out, r in zip(outs, ref if isinstance(ref, tuple) else (ref,), strict=True):
        err, ok = ex.compare(out, r)
        assert ok, err


def test_rmsnorm_rows_at_every_alignment_the_qdp_way(max_ptx, tmp_path):
    """Ragged rows (misaligned heads), rows shorter than a vector, and views whose input and
    output are misaligned differently (the element-wise path), launched as TensorRT would."""
    from tta.aot.compile import compile_specs
    from tta.common.cache import Cache
    from tta.examples.kernels import by_name
    from tta.runtime.launcher import Loaded

    ex = by_name("triton_rmsnorm")
    checked = 0
    for dtype in ex.dtypes:
        for k in compile_specs([ex.spec()], ex.input_metas(dtype), ex.meta, max_ptx=max_ptx, cache=Cache(tmp_path), progress=False):
            loaded = Loaded(k)
            for n in (5, 9, 1001, 4001):
                if n > dict(k.config)["BLOCK"]:
                    continue
                for xo, oo in ((0, 0), (1, 1), (0, 1)):
                    m = 37  # x is [batch, tokens, hidden], as the kernel was compiled for
                    x = torch.randn(m * n + xo, device="cuda").to(dtype)[xo:].view(1, m, n)
                    w = (1 + 0.1 * torch.randn(n, device="cuda")).to(dtype)
                    out = torch.full((m * n + oo,), float("nan"), device="cuda", dtype=dtype)[oo:].view(1, m, n)
                    grid, extras, _ = loaded.plan([x, w])
                    loaded.launch([x, w], [out], grid, extras)
                    err, ok = ex.compare(out, ex.reference(x, w))
                    assert ok, (dtype, n, xo, oo, k.config, err)
                    checked += 1
    assert checked > 0


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        ka = k0 + rk
        a = tl.load(a_ptr + rm[:, None].to(tl.int64) * K + ka[None, :], mask=(rm[:, None] < M) & (ka[None, :] < K), other=0.0)
        b = tl.load(b_ptr + ka[:, None].to(tl.int64) * N + rn[None, :], mask=(ka[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None].to(tl.int64) * N + rn[None, :], acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


def launch_matmul(a, b, c, *, BM=128, BN=256, BK=128, num_warps=8):
    M, K = a.shape
    N = b.shape[1]
    matmul_kernel[(triton.cdiv(M, BM), triton.cdiv(N, BN))](a, b, c, M, N, K, BM=BM, BN=BN, BK=BK, num_warps=num_warps)


def test_kernel_with_more_than_48kb_shared_memory(max_ptx):
    from tta.aot.compile import compile_specs
    from tta.aot.session import TensorType
    from tta.declare.specs import triton as triton_spec
    from tta.runtime.launcher import Loaded

    (k,) = compile_specs(
        [triton_spec(launch_matmul, [{}])],
        [TensorType.dynamic(torch.float16, 2)] * 2,
        lambda a, b: a.new_empty(a.shape[0], b.shape[1]),
        max_ptx=max_ptx,
        cache=False,
        progress=False,
    )
    assert k.shared_mem > 48 * 1024
    loaded = Loaded(k)
    for M, K, N in ((300, 200, 500), (1024, 512, 768)):
        a = torch.randn(M, K, device="cuda", dtype=torch.float16)
        b = torch.randn(K, N, device="cuda", dtype=torch.float16)
        (c,) = loaded([a, b])
        torch.testing.assert_close(c.float(), (a.float() @ b.float()), atol=0.5, rtol=2e-2)


def test_conformance_runner_on_a_small_manifest(tmp_path, max_ptx):
    from tta.aot.base import write_manifest
    from tta.aot.compile import compile_specs
    from tta.examples.kernels import by_name
    from tta.tools.gpu import conformance

    ex = by_name("triton_softmax")
    ks = compile_specs([ex.spec()], ex.input_metas(torch.float32), ex.meta, max_ptx=max_ptx, cache=False, progress=False)
    for k in ks:
        k.meta.update(example=ex.name, dtype="float32", test_shapes=[list(s) for s in ex.test_shapes])
    write_manifest(str(tmp_path / "m.json"), ks)
    rows = conformance.run(str(tmp_path / "m.json"))
    assert len(rows) == 2 * len(ex.test_shapes) and all(r.status == "pass" for r in rows)
