"""Triton AOT compile for sm_90 of every example kernel and dtype, with the TensorRT QDP ABI
checked on the real PTX (parsed by the Rust PTX module)."""

from __future__ import annotations

import re

import pytest
import torch
import triton
import triton.language as tl

from tta.aot import ptxabi
from tta.aot.compile import compile_specs
from tta.aot.session import TensorType
from tta.aot.triton import backend as tb
from tta.common import bridge as core
from tta.common.bridge import QdpSlots
from tta.errors import PluginError
from tta.examples.kernels import by_name, examples

TRITON_EXAMPLES = examples(("triton",))


@triton.jit
def plain_copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # Unmasked (compiled, never run): only pointer alignment decides vectorization here.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))


def launch_plain_copy(x, out, *, BLOCK=1024):
    plain_copy_kernel[(triton.cdiv(out.numel(), BLOCK),)](x, out, out.numel(), BLOCK=BLOCK)


def plain_meta(x):
    return x.new_empty(x.shape)


CASES = [(ex.name, dt) for ex in TRITON_EXAMPLES for dt in ex.dtypes]


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    from tta.common.cache import Cache

    cache = Cache(tmp_path_factory.mktemp("cache"))
    out = {}
    for ex in TRITON_EXAMPLES:
        for dt in ex.dtypes:
            out[(ex.name, dt)] = compile_specs([ex.spec()], ex.input_metas(dt), ex.meta, sm=90, max_ptx=90, cache=cache, progress=False)
    return out


@pytest.mark.parametrize("name, dtype", CASES, ids=[f"{n}-{str(d)[6:]}" for n, d in CASES])
@pytest.mark.kernels
def test_qdp_abi_on_real_ptx(compiled, name, dtype):
    ex = by_name(name)
    kernels = compiled[(name, dtype)]
    assert len(kernels) == len(ex.spec().configs)
    n_in = len(ex.input_metas(dtype))
    for k in kernels:
        ptx = k.code.decode()
        module = core.ptx_parse(ptx)
        # Never newer than a CUDA 13.0 driver JITs: capped there, lower where Triton's ptxas is older.
        assert module.version == k.ptx_version
        assert tuple(map(int, k.ptx_version.split("."))) <= (9, 0), k.ptx_version
        # Nothing in these kernels is Hopper-specific, so the target carries no "a" suffix.
        assert module.target[0] == "sm_90" and k.meta["arch_specific"] is None
        (entry,) = [e for e in module.entries if e.name == k.entry]
        params = entry.params
        n_extra, n_out = len(k.extras), len(k.output_dtypes)
        # Exactly TensorRT's arguments: no trailing global/profile scratch pointers.
        assert len(params) == n_in + n_extra + n_out
        kinds = ["ptr" if p.ty == ".u64" and p.is_ptr else p.ty for p in params]
        assert kinds == ["ptr"] * n_in + [".u32"] * n_extra + ["ptr"] * n_out
        # The body still refers to the parameters by their original names: the declarations
        # were permuted, so the original index of each QDP slot is the recorded permutation.
        original = [int(re.search(r"_param_(\d+)$", p.name).group(1)) for p in params]
        runtime = [p for p in k.meta["params"] if p["role"] != "constexpr"]
        expected = sorted(
            range(len(runtime)), key=lambda i: ({"input": 0, "extra": 1, "output": 2}[runtime[i]["role"]], runtime[i]["index"])
        )
        assert original == expected
        assert max(original) == len(runtime) - 1  # the two scratch params (indices n, n+1) are gone
        for i in (len(runtime), len(runtime) + 1):
            assert f"{k.entry}_param_{i}" not in ptx
        # Launch parameters from the compiled metadata.
        assert entry.reqntid == (k.block[0],) and k.block[0] == 32 * k.meta["num_warps"]
        assert k.shared_mem >= 0 and k.backend == "triton" and k.code_format == "ptx"
        assert k.input_dtypes == tuple(str(dtype)[6:] for _ in range(n_in))
        ref = ex.reference(*ex.make_inputs(ex.test_shapes[0], dtype, "meta"))
        assert k.output_dtypes == tuple(str(r.dtype)[6:] for r in (ref if isinstance(ref, tuple) else (ref,)))


@pytest.mark.kernels
def test_each_config_is_its_own_specialization(compiled):
    k1, k2 = compiled[("triton_softmax", torch.float16)]
    assert k1.meta["constexprs"]["BLOCK"] == 1024 and k2.meta["constexprs"]["BLOCK"] == 2048
    assert (k1.block, k2.block) == ((128, 1, 1), (256, 1, 1))
    assert k1.meta["guards"] == ["i0_1 <= 1024"] and k2.meta["guards"] == ["i0_1 <= 2048"]
    assert k1.code != k2.code


@pytest.mark.kernels
def test_no_divisibility_hints_unless_asked():
    """The AOT signature carries no tt.divisibility: a kernel whose only fast path would come from
    such hints stays scalar; the explicit opt-in turns it on (so the attrs do reach Triton)."""
    from tta.declare.specs import triton as triton_spec

    metas = [TensorType.dynamic(torch.float16, 1)]
    spec = triton_spec(launch_plain_copy, [{"BLOCK": 1024}])
    plain = compile_specs([spec], metas, plain_meta, cache=False, progress=False)[0].code.decode()
    hinted = compile_specs([spec], metas, plain_meta, cache=False, progress=False, pointer_divisibility=16)[0].code.decode()
    assert "ld.global.v4" not in plain and "ld.global.b16" in plain
    assert "ld.global.v4" in hinted


@pytest.mark.kernels
def test_runtime_alignment_check_gives_a_vector_path_without_hints(compiled):
    """The examples check alignment at run time; their aligned branch is vectorized."""
    for name in ("triton_add_relu", "triton_rmsnorm", "triton_softmax"):
        ptx = compiled[(name, torch.float16)][0].code.decode()
        assert "ld.global.v4" in ptx and re.search(r"ld\.global(\.[a-z]+)*\.b16", ptx), name


@pytest.mark.kernels
def test_ptx_version_cap():
    ex = by_name("triton_add_relu")
    metas = ex.input_metas(torch.float32)
    default = tb._default_ptx_version(90)
    assert default is not None and default >= 87
    uncapped = compile_specs([ex.spec()], metas, ex.meta, max_ptx=None, cache=False, progress=False)[0]
    assert uncapped.ptx_version == f"{default // 10}.{default % 10}"
    capped = compile_specs([ex.spec()], metas, ex.meta, max_ptx=87, cache=False, progress=False)[0]
    assert capped.ptx_version == "8.7"
    assert tb.ptx_version_option(90, 200) is None  # never raise the ISA above what ptxas emits


@pytest.mark.kernels
def test_too_new_ptx_is_refused_by_the_rust_check():
    ex = by_name("triton_add_relu")
    k = compile_specs([ex.spec()], ex.input_metas(torch.float32), ex.meta, max_ptx=None, cache=False, progress=False)[0]
    if k.ptx_version <= "8.0":
        pytest.skip("Triton emits an old ISA here")
    with pytest.raises(PluginError, match="needs a CUDA .* driver"):
        ptxabi.to_qdp_abi(k.code.decode(), entry=k.entry, slots=QdpSlots(2, 1, 1), max_ptx=80)


@pytest.mark.torch_independent
def test_scratch_kernels_are_refused():
    class MD:
        num_ctas = 1
        global_scratch_size = 128
        profile_scratch_size = 0

    with pytest.raises(PluginError, match="global_scratch_size=128"):
        tb._check_launchable(MD(), "k")


@pytest.mark.torch_independent
def test_max_ptx_for_driver():
    assert ptxabi.max_ptx_for_driver("13.0") == 90
    assert ptxabi.max_ptx_for_driver("12.8") == 87
