"""cuTile kernels as PTX for TensorRT: the PTX embedded in tileiras' CUBIN, relabelled from a
tile kernel to a plain one (``tta.aot.cutile.ptx``)."""

import dataclasses

import pytest
import torch

from tta.aot.compile import compile_specs
from tta.aot.cutile.ptx import ptx_variant
from tta.common import bridge as core
from tta.errors import PluginError
from tta.examples.kernels import by_name


@pytest.mark.parametrize("name", ["cutile_add_relu", "cutile_rmsnorm"])
@pytest.mark.kernels
def test_cubin_becomes_a_plain_ptx_kernel_in_qdp_order(name):
    ex = by_name(name)
    for k in compile_specs([ex.spec()], ex.input_metas(torch.float16), ex.meta):
        assert k.code_format == "cubin"
        p = ptx_variant(k, 90)
        text = p.code.decode()
        module = core.ptx_parse(text)
        assert p.code_format == "ptx" and module.version == p.ptx_version == "9.0"
        assert module.target == ("sm_90",) and ".language" not in text and ".nv_intermediate_source_section" not in text
        e = module.entry(k.entry)
        kinds = ["ptr" if q.ty == ".u64" and q.is_ptr else q.ty for q in e.params]
        n_in, n_extra, n_out = len(k.input_dtypes), len(k.extras), len(k.output_dtypes)
        assert kinds == ["ptr"] * n_in + [".u32"] * n_extra + ["ptr"] * n_out
        assert p.block == (e.reqntid[0], 1, 1) and p.grid == k.grid and p.extras == k.extras


@pytest.mark.kernels
def test_a_cubin_without_ptx_is_refused():
    ex = by_name("cutile_add_relu")
    (k, *_) = compile_specs([ex.spec()], ex.input_metas(torch.float32), ex.meta)
    with pytest.raises(PluginError, match="carries no PTX"):
        ptx_variant(dataclasses.replace(k, code=b"\x7fELF not a cubin"), 90)
