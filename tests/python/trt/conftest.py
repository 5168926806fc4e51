"""TensorRT tests run the real ``tensorrt.plugin`` package (and Torch-TensorRT) over the native
module stand-in of ``tests/trt_standin``. They need the Torch-TensorRT venv
(``.venv-torch2.14``); elsewhere they are skipped with the reason.

The plugin package version is ``TTA_TRT_PLUGIN`` (``11.1``, Torch-TensorRT 2.14's pin, by
default; ``11.4``). One version per process: the plugin registry is process-global."""

import os
import sys

import pytest

TESTS = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)

import trt_standin  # noqa: E402

PLUGIN_VERSION = os.environ.get("TTA_TRT_PLUGIN", "11.1")
try:
    trt = trt_standin.install(PLUGIN_VERSION)
    MISSING = None
except ModuleNotFoundError as e:
    trt = None
    MISSING = str(e)

HERE = os.path.dirname(os.path.abspath(__file__))


def pytest_collection_modifyitems(config, items):
    for item in items:
        if str(item.fspath).startswith(HERE):
            item.add_marker(pytest.mark.trt)
            if MISSING:
                item.add_marker(pytest.mark.skip(reason=MISSING))


def pytest_ignore_collect(collection_path, config):
    # Test modules import tensorrt.plugin at module level; without the package, don't import them.
    if MISSING and str(collection_path).startswith(HERE) and collection_path.name.startswith("test_"):
        return True
    return None


def pytest_report_header(config):
    if MISSING:
        return f"tests/python/trt not collected: {MISSING}"
    return f"tensorrt stand-in with the real tensorrt.plugin {trt.__version__}"


class StandinCompiles:
    """``torch_tensorrt.compile`` over the stand-in, and what it built: ``builds`` holds the
    engines (networks) of this test only."""

    SETTINGS = {"offload_module_to_cpu": True, "min_block_size": 1}

    def __init__(self, builds: list):
        self.builds = builds

    def compile(self, model, inputs, dynamic_shapes=None):
        """Export ``model`` and compile it with Torch-TensorRT, every op it can convert in an engine."""
        import torch
        import torch_tensorrt

        ep = torch.export.export(model, tuple(inputs), dynamic_shapes=dynamic_shapes)
        return torch_tensorrt.compile(ep, ir="dynamo", arg_inputs=list(inputs), **self.SETTINGS)

    def plugin_calls(self) -> list[dict]:
        """Each plugin layer the built networks added, in order."""
        return [c[1] for b in self.builds for c in b.network.calls if c[0] == "add_plugin"]


@pytest.fixture
def standin_trt():
    from trt_standin import network, torch_tensorrt_env

    torch_tensorrt_env.patch_runtime()
    network.BUILDS.clear()
    yield StandinCompiles(network.BUILDS)
    network.BUILDS.clear()
