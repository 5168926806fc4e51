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
