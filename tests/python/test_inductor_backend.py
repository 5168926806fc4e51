"""The Inductor backends on the CPU: what Inductor receives (the user's Triton kernel, not an
opaque op), the triton_op run eagerly under Triton's interpreter, the region-body fallback for
plugins without a Triton kernel through ``torch.compile`` and an AOTInductor package loaded in a
fresh process, and the errors. The GPU runs are in test_gpu_backends.py."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import warnings
import zipfile

import pytest
import torch
from torch._dynamo.backends.common import aot_autograd

import tta
from tta.errors import PluginError
from tta.inductor import compile as inductor_compile
from tta.inductor import package_check
from tta.inductor import program as lowering
from tta.inductor.compile import _lowered

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYTHON = os.path.join(ROOT, "python")

BODY_ONLY = tta.custom_plugin(meta_impl=lambda x, y: x.new_empty(x.shape), name="add_relu_body_only")


class BodyOnlyBlock(torch.nn.Module):
    def forward(self, x, y):
        with tta.lower_as(impl=BODY_ONLY):
            s = torch.relu(x + y)
        return s * 2


def _dyn(n: int = 2, max_batch: int = 64):
    return ({0: torch.export.Dim("batch", min=1, max=max_batch)},) * n


class _Captured(Exception):
    pass


def _graph_inductor_receives(module, *args):
    """The graph AOTAutograd hands the backend compiler (Inductor's input), without compiling
    it: Triton kernels cannot be compiled without a GPU here."""
    graphs = []

    def capture(gm, _example):
        graphs.append(gm)
        raise _Captured()

    compiled = torch.compile(module, backend=aot_autograd(fw_compiler=capture), dynamic=True)
    with torch.no_grad(), pytest.raises(Exception) as info:
        compiled(*args)
    assert graphs, f"no graph reached the compiler: {info.value}"
    return graphs[0]


def _user_kernels(gm) -> list[str]:
    from torch._higher_order_ops.triton_kernel_wrap import kernel_side_table

    names = []
    for n in gm.graph.nodes:
        if n.op == "call_function" and "triton_kernel_wrapper" in str(n.target):
            kernel = kernel_side_table.get_kernel(n.kwargs["kernel_idx"])
            names.append(getattr(kernel, "fn", kernel).__name__)
    return names


@pytest.mark.parametrize(
    "name,kernels", [("residual", ["add_relu_kernel"]), ("llama", ["rmsnorm_kernel", "rmsnorm_kernel", "swiglu_kernel"])]
)
@pytest.mark.kernels
def test_inductor_receives_the_user_kernels(name, kernels):
    from tta.tools.gpu import models

    case = models.by_name(name)
    model = case.model(torch.bfloat16, "cpu")
    example = case.inputs(2, torch.bfloat16, "cpu")
    program, report = _lowered(model, example, case.dynamic_shapes(), None, False, "inductor", triton_on_cpu=True)
    assert [r.runs for r in report.regions] == [lowering.USER_KERNEL] * case.n_regions, str(report)
    targets = {str(n.target) for n in program.graph.nodes if n.op == "call_function"}
    assert not any(t.startswith("tta.") for t in targets) and sum(t.startswith("tta_triton.") for t in targets) >= 1
    gm = _graph_inductor_receives(program.module(), *case.inputs(3, torch.bfloat16, "cpu"))
    assert sorted(_user_kernels(gm)) == sorted(kernels), gm.code
    if name == "residual":
        # The region body (add, relu) is gone: only the kernel computes the output.
        assert not any("relu" in str(n.target) for n in gm.graph.nodes), gm.code


_INTERPRETED = textwrap.dedent(
    """
    import torch, tta
    from tta.gpu import models
    from tta.inductor.compile import _lowered
    from tta.examples.kernels import add_relu
    launches = []
    real = add_relu.add_relu_kernel.run
    def counting(*a, **k):
        launches.append(1)
        return real(*a, **k)
    add_relu.add_relu_kernel.run = counting
    for name in ("residual", "llama"):
        case = models.by_name(name)
        model = case.model(torch.bfloat16, "cpu")
        program, report = _lowered(model, case.inputs(2, torch.bfloat16, "cpu"), case.dynamic_shapes(), None, False, "inductor",
                                   triton_on_cpu=True)
        run = program.module()
        for b in (1, 3, 5):
            x = case.inputs(b, torch.bfloat16, "cpu")
            atol, rtol = case.tol["bfloat16"]
            torch.testing.assert_close(run(*x), model(*x), atol=atol, rtol=rtol)
    print("LAUNCHES", len(launches))
    """
)


def test_triton_ops_run_the_kernel_eagerly_under_the_interpreter():
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=PYTHON)
    r = subprocess.run([sys.executable, "-c", _INTERPRETED], env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-4000:]
    assert "LAUNCHES 3" in r.stdout, r.stdout  # the residual block's kernel, once per batch size


@pytest.mark.kernels
def test_plugin_without_triton_kernel_runs_its_region_body_under_inductor():
    x, y = torch.randn(4, 33), torch.randn(4, 33)
    compiled = tta.compile(BodyOnlyBlock(), (x, y), _dyn(), backend="inductor")
    report = compiled.tta_report
    assert [(r.runs, r.reason) for r in report.regions] == [(lowering.REGION_BODY, "no Triton kernel (kernels: none)")]
    assert "region body (no Triton kernel" in str(report)
    for b in (1, 3, 7):
        a, c = torch.randn(b, 33), torch.randn(b, 33)
        torch.testing.assert_close(compiled(a, c), torch.relu(a + c) * 2)


def _never_launched(x, y, out, *, TILE: int = 1024):
    raise AssertionError("a cuTile launch function must not run in the Inductor backends")


@pytest.mark.kernels
def test_cutile_plugin_falls_back_to_its_region_body(monkeypatch):
    import tta.declare.specs

    # The fallback is decided from the spec's backend alone, so the DSL need not be installed.
    monkeypatch.setattr(tta.declare.specs, "installed", lambda backend: True)
    plugin = tta.custom_plugin(
        kernel=tta.cutile(_never_launched, configs=[{"TILE": 1024}]),
        meta_impl=lambda x, y: x.new_empty(x.shape),
        name="cutile_add_relu_e2e",
    )
    monkeypatch.undo()

    class Block(torch.nn.Module):
        def forward(self, x, y):
            with tta.lower_as(impl=plugin):
                return torch.relu(x + y)

    x, y = torch.randn(4, 33), torch.randn(4, 33)
    program, report = _lowered(Block(), (x, y), _dyn(), None, False, "inductor")
    # No CUDA here, so its compiled kernel cannot be launched (on a GPU: tta_cubin::<op>, test_gpu_backends.py).
    assert [(r.runs, r.reason) for r in report.regions] == [
        (lowering.REGION_BODY, "no Triton kernel (kernels: cutile); its compiled kernel cannot run here: no CUDA device")
    ]
    assert not any(str(n.target).startswith(("tta.", "tta_triton.", "tta_cubin.")) for n in program.graph.nodes)
    program, report = _lowered(Block(), (x, y), _dyn(), None, False, "aot_inductor")
    assert "an AOTInductor package loads without tta" in report.regions[0].reason
    torch.testing.assert_close(program.module()(x, y), torch.relu(x + y))


def _kernel(dtypes, guards=(), entry="k"):
    from tta.aot.base import CompiledKernel

    return CompiledKernel(
        backend="cutile",
        entry=entry,
        code=b"",
        code_format="cubin",
        grid=("1", "1", "1"),
        block=(1, 1, 1),
        shared_mem=0,
        extras=(),
        input_dtypes=dtypes,
        output_dtypes=dtypes[:1],
        output_shapes=(("i0_0",),),
        config=(),
        sm=90,
        meta={"guards": list(guards)},
    )


@pytest.mark.torch_independent
def test_compiled_kernel_choice_is_by_dtype_then_guards_and_remembered():
    from tta.inductor.cubin_ops import Launcher

    kernels = [
        _kernel(("float16", "float16"), ["i0_1 <= 1024"], "small"),
        _kernel(("float16", "float16"), [], "any"),
        _kernel(("bfloat16", "bfloat16"), [], "bf16"),
    ]
    launcher = Launcher("op", kernels, 1)
    h, b = torch.float16, torch.bfloat16
    assert launcher.pick([torch.empty(2, 1000, dtype=h)] * 2) == 0
    assert launcher.pick([torch.empty(2, 4000, dtype=h)] * 2) == 1  # the first one's guard fails
    assert launcher.pick([torch.empty(2, 4000, dtype=b)] * 2) == 2
    assert len(launcher._choice) == 3
    with pytest.raises(PluginError, match=r"no compiled kernel takes inputs \['float32', 'float32'\]"):
        launcher.pick([torch.empty(2, 8)] * 2)


@pytest.mark.torch_independent
def test_kernel_bundle_round_trip_and_errors(tmp_path):
    from tta.aot.base import write_manifest
    from tta.inductor.kernel_bundle import as_bundle, load_bundle, save_bundle

    bundle = {"a": [_kernel(("float16",), entry="a0"), _kernel(("bfloat16",), entry="a1")], "b": [_kernel(("float32",), entry="b0")]}
    save_bundle(tmp_path / "k.json", bundle)
    got = load_bundle(tmp_path / "k.json")
    assert {n: [k.entry for k in ks] for n, ks in got.items()} == {"a": ["a0", "a1"], "b": ["b0"]}
    assert as_bundle(str(tmp_path / "k.json")).keys() == {"a", "b"} and as_bundle(None) == {}
    write_manifest(str(tmp_path / "m.json"), [_kernel(("float16",))])
    with pytest.raises(PluginError, match="without a plugin index"):
        load_bundle(tmp_path / "m.json")
    with pytest.raises(PluginError, match="kernels= takes"):
        as_bundle(3)


_LOAD = textwrap.dedent(
    """
    import sys, torch
    model = torch._inductor.aoti_load_package(sys.argv[1])
    for b in (1, 3, 7):
        g = torch.Generator().manual_seed(b)
        x, y = torch.randn(b, 33, generator=g), torch.randn(b, 33, generator=g)
        torch.testing.assert_close(model(x, y), torch.relu(x + y) * 2)
    assert not any(m == "tta" or m.startswith("tta.") for m in sys.modules)
    print("OK")
    """
)


@pytest.mark.kernels
def test_aot_compile_package_loads_in_a_fresh_process_without_tta(tmp_path):
    x, y = torch.randn(4, 33), torch.randn(4, 33)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        package = tta.aot_compile(BodyOnlyBlock(), (x, y), tmp_path / "block.pt2", _dyn())
    # A package built by this machine's compiler needs the shared libstdc++, like torch.
    assert not [w for w in caught if issubclass(w.category, tta.PackageRuntimeWarning)]
    assert os.path.isfile(package.path) and package.tta_report.backend == "aot_inductor"
    assert [r.runs for r in package.tta_report.regions] == [lowering.REGION_BODY]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run([sys.executable, "-c", _LOAD, package.path], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and "OK" in r.stdout, r.stderr[-4000:]


# Built on the GPU machine, whose g++ linked libstdc++ into it; aoti_load_package crashed on it there.
_PRIVATE_LIBSTDCXX_PACKAGE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "gpu", "relu_cpu.pt2")


@pytest.mark.torch_independent
def test_package_check_finds_a_private_libstdcxx_and_nothing_else():
    flagged = package_check.libraries_with_private_libstdcxx(_PRIVATE_LIBSTDCXX_PACKAGE)
    assert len(flagged) == 1 and flagged[0].endswith(".wrapper.so")
    with zipfile.ZipFile(_PRIVATE_LIBSTDCXX_PACKAGE) as z:
        so = package_check.read_shared_object(z.read(flagged[0]))
    assert so.defines_libstdcxx and "libtorch.so" in so.needed and not any("stdc++" in n for n in so.needed)
    with open(os.path.join(os.path.dirname(tta.__file__), "_core.abi3.so"), "rb") as f:
        data = f.read()
    ours = package_check.read_shared_object(data)
    assert "libc.so.6" in ours.needed and not ours.private_libstdcxx
    for broken in (b"", b"not an ELF file", data[:100]):
        assert package_check.read_shared_object(broken) is None


@pytest.mark.kernels
def test_aot_compile_warns_when_its_package_keeps_its_own_libstdcxx(monkeypatch, tmp_path):
    compilers = []

    def package_like_the_gpu_machine(program, package_path, inductor_configs=None):
        compilers.append(torch._inductor.config.cpp.cxx)
        shutil.copyfile(_PRIVATE_LIBSTDCXX_PACKAGE, package_path)
        return package_path

    monkeypatch.setattr(torch._inductor, "aoti_compile_and_package", package_like_the_gpu_machine)
    x, y = torch.randn(4, 33), torch.randn(4, 33)
    with pytest.warns(tta.PackageRuntimeWarning, match=r"wrapper\.so with its own copy of libstdc\+\+"):
        package = tta.aot_compile(BodyOnlyBlock(), (x, y), tmp_path / "block.pt2", _dyn())
    assert os.path.isfile(package.path)
    # Packaged a second time with tta's compiler script before giving up.
    assert len(compilers) == 2 and compilers[1] != compilers[0]
    assert open(compilers[1][0]).read().startswith("#!/bin/sh\n# Written by tta.aot_compile")


_STATIC_LIBSTDCXX_GXX = """#!/bin/sh
# g++ that copies libstdc++ into every shared object, as the GPU machine's toolchain did.
for a in "$@"; do
  if [ "$a" = -shared ]; then exec g++ "$@" -static-libstdc++; fi
done
exec g++ "$@"
"""


@pytest.mark.kernels
def test_aot_compile_links_a_package_again_when_the_toolchain_copies_libstdcxx_into_it(monkeypatch, tmp_path, request):
    gxx = tmp_path / "static-g++"
    gxx.write_text(_STATIC_LIBSTDCXX_GXX)
    gxx.chmod(0o755)
    # Inductor's own patch: monkeypatch's undo of a sub-config attribute deletes the option
    # (later CPU compiles in the process then fail with "config.cpp.cxx does not exist").
    patch = torch._inductor.config.patch({"cpp.cxx": (str(gxx),)})
    patch.__enter__()
    request.addfinalizer(lambda: patch.__exit__(None, None, None))
    private_after_each = []
    real_package = inductor_compile._package

    def package_and_check(program, path, inductor_configs):
        out = real_package(program, path, inductor_configs)
        private_after_each.append(bool(package_check.libraries_with_private_libstdcxx(out)))
        return out

    monkeypatch.setattr(inductor_compile, "_package", package_and_check)
    x, y = torch.randn(4, 33), torch.randn(4, 33)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        package = tta.aot_compile(BodyOnlyBlock(), (x, y), tmp_path / "block.pt2", _dyn())
    assert not [w for w in caught if issubclass(w.category, tta.PackageRuntimeWarning)]
    # The toolchain really made a private copy; the second link uses the process's libstdc++.so.6.
    assert private_after_each == [True, False] and package.relinked_libstdcxx
    with zipfile.ZipFile(package.path) as z:
        libraries = [n for n in z.namelist() if n.endswith(".so")]
        needed = [package_check.read_shared_object(z.read(n)).needed for n in libraries]
    assert needed and all("libstdc++.so.6" in n for n in needed)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run([sys.executable, "-c", _LOAD, package.path], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and "OK" in r.stdout, r.stderr[-4000:]


@pytest.mark.torch_independent
def test_unknown_backend_and_bad_package_path_are_errors(tmp_path):
    x, y = torch.randn(2, 8), torch.randn(2, 8)
    with pytest.raises(PluginError, match="unknown backend 'tvm'"):
        tta.compile(BodyOnlyBlock(), (x, y), backend="tvm")
    with pytest.raises(PluginError, match="must end in .pt2"):
        tta.aot_compile(BodyOnlyBlock(), (x, y), tmp_path / "block.zip")


@pytest.mark.kernels
def test_a_refused_region_is_an_error_not_a_fallback():
    wrong = tta.custom_plugin(meta_impl=lambda x: x.new_empty(x.shape), name="one_input_only")

    class Wrong(torch.nn.Module):
        def forward(self, x, y):
            with tta.lower_as(impl=wrong):
                return torch.relu(x + y)

    with pytest.raises(PluginError, match="refused"):
        tta.compile(Wrong(), (torch.randn(2, 8), torch.randn(2, 8)), backend="inductor")


@pytest.mark.parametrize("cols,block", [(256, 1024), (2048, 2048), (3000, 4096)])
def test_each_call_gets_the_first_config_its_sizes_fit(cols, block):
    """The Llama block's RMSNorm configs are BLOCK=1024, 2048, then 4096; a row longer than a
    config's BLOCK fails its assertion (its guard), so the graph Inductor compiles launches the
    first config that holds the row."""
    from torch._higher_order_ops.triton_kernel_wrap import kernel_side_table

    from tta.tools.gpu.models import RMSNorm

    class Norm(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = RMSNorm(cols)

        def forward(self, x):
            return self.norm(x)

    model = Norm().to(torch.bfloat16)
    x = torch.randn(2, 5, cols, dtype=torch.bfloat16)
    program, _ = _lowered(model, (x,), ({0: torch.export.Dim("batch", min=1, max=64)},), None, False, "inductor", triton_on_cpu=True)
    gm = _graph_inductor_receives(program.module(), torch.randn(3, 5, cols, dtype=torch.bfloat16))
    calls = [n for n in gm.graph.nodes if "triton_kernel_wrapper" in str(n.target)]
    assert len(calls) == 1
    args = {**kernel_side_table.get_constant_args(calls[0].kwargs["constant_args_idx"]), **calls[0].kwargs["kwargs"]}
    assert args["BLOCK"] == block, args


_NO_TRT = textwrap.dedent(
    """
    import sys, torch, tta
    plugin = tta.custom_plugin(meta_impl=lambda x, y: x.new_empty(x.shape), name="add_relu_no_trt")
    class Block(torch.nn.Module):
        def forward(self, x, y):
            with tta.lower_as(impl=plugin):
                return torch.relu(x + y)
    x, y = torch.randn(2, 8), torch.randn(2, 8)
    torch.testing.assert_close(tta.compile(Block(), (x, y), backend="inductor")(x, y), torch.relu(x + y))
    assert not any(m.startswith(("torch_tensorrt", "tensorrt", "tta.trt")) for m in sys.modules), sorted(sys.modules)
    print("OK")
    """
)


@pytest.mark.kernels
def test_the_inductor_backend_never_imports_tensorrt():
    env = dict(os.environ, PYTHONPATH=PYTHON)
    r = subprocess.run([sys.executable, "-c", _NO_TRT], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and "OK" in r.stdout, r.stderr[-4000:]


def test_the_module_dynamo_compiles_has_no_export_wrapper_where_the_signature_is_flat():
    """What torch.compile sees of the exported module: no forward hooks (they would run in
    Python every call), and for positional tensors in and a tensor out, no pytree flattening
    or export guard call either (they become per-call guards). Same outputs."""
    from tta.inductor.compile import _for_dynamo

    class Two(torch.nn.Module):
        def forward(self, x, y):
            return torch.relu(x + y), x * 2

    class Kw(torch.nn.Module):
        def forward(self, x, *, scale):
            return x * scale

    x, y = torch.randn(3, 4), torch.randn(3, 4)
    for model, args, kwargs, flat in [(BodyOnlyBlock(), (x, y), {}, True), (Two(), (x, y), {}, True), (Kw(), (x,), {"scale": y}, False)]:
        ep = torch.export.export(model, args, kwargs, dynamic_shapes=None)
        gm = _for_dynamo(ep.module())
        assert not gm._forward_pre_hooks and not gm._forward_hooks
        assert ("tree_flatten_spec" not in gm.code and "_guards_fn" not in gm.code) == flat, gm.code
        torch.testing.assert_close(gm(*args, **kwargs), model(*args, **kwargs))
