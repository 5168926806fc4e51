"""The README's quickstart runs as written: its code block is parsed from README.md, run in a
fresh interpreter, and must equal examples/quickstart.py, so neither can drift.

On CPU the rewritten program runs each region's own ops (the kernels run on CUDA), so the user's
Triton kernel is checked separately under Triton's interpreter; on a GPU (``-m gpu``) the block's
own ``assert_close`` compares the kernel's output with the model's.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
import torch

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYTHON_DIR = os.path.join(REPO, "python")
README = os.path.join(REPO, "README.md")
EXAMPLE = os.path.join(REPO, "examples", "quickstart.py")


def quickstart_block() -> str:
    """The first ```python block after the ``## Quickstart`` heading."""
    with open(README, encoding="utf-8") as f:
        text = f.read()
    section = re.search(r"^## Quickstart\n(.*?)(?=^## )", text, re.DOTALL | re.MULTILINE)
    assert section, "README.md has no '## Quickstart' section"
    block = re.search(r"^```python\n(.*?)^```", section.group(1), re.DOTALL | re.MULTILINE)
    assert block, "the README's Quickstart section has no ```python block"
    return block.group(1)


def run(code: str, tmp_path, **env: str) -> subprocess.CompletedProcess:
    script = tmp_path / "quickstart.py"
    script.write_text(code, encoding="utf-8")
    # TRITON_INTERPRET is dropped unless asked for: ahead-of-time compiles refuse kernels defined under it.
    base = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    full_env = {**base, "PYTHONPATH": PYTHON_DIR, **env}
    out = subprocess.run(
        [sys.executable, str(script)],
        check=False,
        capture_output=True,
        text=True,
        env=full_env,
        cwd=tmp_path,
        timeout=600,
    )
    assert out.returncode == 0, f"the quickstart failed:\n{out.stdout}\n{out.stderr}"
    return out


@pytest.mark.torch_independent
def test_example_file_is_the_readme_block():
    with open(EXAMPLE, encoding="utf-8") as f:
        example = f.read()
    assert example.endswith(quickstart_block()), "examples/quickstart.py must end with the README's quickstart block, verbatim"


@pytest.mark.kernels
def test_readme_quickstart_runs_on_cpu(tmp_path):
    out = run(quickstart_block(), tmp_path, CUDA_VISIBLE_DEVICES="")
    assert "1 region(s) outlined, 0 refused" in out.stdout, out.stdout
    # one compiled kernel per config, in PTX, with the shape-derived size as an int32 extra
    compiled = [line for line in out.stdout.splitlines() if " ptx grid " in line]
    assert len(compiled) == 2, out.stdout
    assert "{'BLOCK': 1024}" in compiled[0] and "{'BLOCK': 2048}" in compiled[1], out.stdout


def test_readme_kernel_is_right_under_the_interpreter(tmp_path):
    # The block's definitions (kernel, launch function, plugin, model), then the kernel itself
    # on CPU tensors under TRITON_INTERPRET=1, at sizes that leave a ragged last block.
    block = quickstart_block()
    definitions = block.split("\ndevice = ", 1)[0]
    assert "def launch_add_relu" in definitions
    check = (
        "\nfor n in (1, 1000, 4097):\n"
        "    x, y = torch.randn(n), torch.randn(n)\n"
        "    for cfg in ({'BLOCK': 1024}, {'BLOCK': 2048}):\n"
        "        out = torch.full_like(x, float('nan'))\n"
        "        launch_add_relu(x, y, out, **cfg)\n"
        "        torch.testing.assert_close(out, torch.relu(x + y))\n"
        "print('kernel ok')\n"
    )
    out = run(definitions + check, tmp_path, TRITON_INTERPRET="1", CUDA_VISIBLE_DEVICES="")
    assert "kernel ok" in out.stdout


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")
def test_readme_quickstart_runs_the_kernel_on_cuda(tmp_path):
    # On CUDA the eager op runs the user's kernel, and the block's assert_close checks it.
    code = quickstart_block() + "\nprint('paths', tta.eager_paths())\n"
    out = run(code, tmp_path)
    paths = out.stdout.split("paths ", 1)[1]
    assert "'kernel'" in paths and "region body" not in paths, out.stdout
