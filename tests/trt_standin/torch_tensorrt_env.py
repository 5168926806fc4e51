"""Run Torch-TensorRT's real Python code on a machine without a GPU or TensorRT, over the
stand-in: the few places where it would touch CUDA or TensorRT's runtime are replaced here, each
for the reason given. ``trt_standin.install()`` calls ``prepare()`` (needed before anything
imports ``torch_tensorrt``); call ``patch_runtime()`` once it is imported.

What still needs the caller's help: compile settings must include ``offload_module_to_cpu=True``
(else Torch-TensorRT reads ``torch.cuda.mem_get_info()``), and programs are given to it as CPU
``ExportedProgram``s (``torch_tensorrt.compile(nn.Module)`` traces on CUDA).
"""

from __future__ import annotations

import types
from unittest import mock

import torch

SM = (9, 0)  # the device the tests compile for: an H100/H200


def prepare() -> None:
    if torch.cuda.is_available():
        return  # a real GPU answers these itself
    # Read at import: is_thor() in _features and is_tegra_platform() in the lowering passes.
    torch.cuda.get_device_capability = lambda *a, **k: SM
    # A CompilationSettings() default argument calls it at import.
    torch.cuda.current_device = lambda: 0
    # Read after an engine is built (TorchTensorRTModule's target platform).
    torch.cuda.get_device_properties = lambda *a, **k: types.SimpleNamespace(
        major=SM[0], minor=SM[1], name="stand-in GPU", total_memory=80 << 30, multi_processor_count=132
    )


def patch_runtime() -> None:
    from torch_tensorrt.dynamo import _compiler
    from torch_tensorrt.dynamo.runtime import _TorchTensorRTModule

    # Loading an engine needs TensorRT's runtime and CUDA streams; the module only has to exist.
    def setup_engine(self) -> None:
        self.engine = mock.MagicMock(requires_native_multidevice=False)

    _TorchTensorRTModule.TorchTensorRTModule.setup_engine = setup_engine
    # PyTorch-fallback submodules with parameters are moved to CUDA; keep them on the CPU.
    _compiler.to_torch_device = lambda device: torch.device("cpu")
