import importlib.util
import os
import sys

import compile_ledger
import pytest

# The compile ledger (TTA_COMPILE_LOG): what the run compiles, for scripts/compiled_kernels.py.
# It also tracks which test runs now (compile_ledger.running_test).
pytest_plugins = ["compile_ledger"]

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures")
if FIXTURES not in sys.path:
    sys.path.insert(0, FIXTURES)

# Test modules that import an optional package at the top, with the marker each package gives
# them. Every test of such a module carries the marker, so `-m "not transformers"` deselects it
# where the package is missing (the torch-version environments). A module whose package is
# missing is collected as one test that fails saying so: a run that selects it never passes
# without it, and never skips.
NEEDS = {
    "test_aot_cutile.py": {"cutile": "cuda.tile"},
    "test_cutile_ptx.py": {"cutile": "cuda.tile"},
    "test_aot_cutedsl.py": {"cutedsl": "cutlass"},
    "test_selectors_modules.py": {"transformers": "transformers", "torchvision": "torchvision"},
    "test_selectors_patterns.py": {"transformers": "transformers"},
    "test_patterns_generalize.py": {"transformers": "transformers"},
}


def _missing(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except (ImportError, ValueError):
        return True


class _Missing(pytest.Item):
    def __init__(self, *, missing: list[str], **kw):
        super().__init__(**kw)
        self.missing = missing

    def runtest(self):
        raise ImportError(f'{self.path.name} needs {", ".join(self.missing)}; deselect it with -m "not ..." where that is missing')

    def reportinfo(self):
        return self.path, None, f"{self.path.name} (needs {', '.join(self.missing)})"


class _Unimportable(pytest.File):
    """A test module whose optional package is missing: not imported, one failing test."""

    def collect(self):
        missing = [m for m in NEEDS[self.path.name].values() if _missing(m)]
        yield _Missing.from_parent(self, name="needs", missing=missing)


def pytest_pycollect_makemodule(module_path, parent):
    if any(_missing(m) for m in NEEDS.get(module_path.name, {}).values()):
        return _Unimportable.from_parent(parent, path=module_path)
    return None


def pytest_collection_modifyitems(items):
    for item in items:
        for marker in NEEDS.get(item.path.name, {}):
            item.add_marker(marker)


# With TTA_FORBID_KERNEL_COMPILE=1 (`scripts/test.sh --quick`, which deselects `kernels`), a test
# that compiles a kernel without the `kernels` marker fails, so the quick selection stays honest.
# The check wraps the compile entries for the whole session: fixtures of any scope that compile
# run inside some test's protocol and are charged to it.


def _refuse_unmarked(fn):
    def checked(*args, **kwargs):
        running = compile_ledger.running_test()
        if running is not None and running.get_closest_marker("kernels") is None:
            raise AssertionError(f"{running.nodeid} compiles a kernel: mark it `kernels` (pytest.mark.kernels)")
        return fn(*args, **kwargs)

    return checked


def pytest_configure(config):
    if os.environ.get("TTA_FORBID_KERNEL_COMPILE") != "1":
        return
    import dataclasses
    import functools

    import tta.aot.compile as aot_compile
    import tta.aot.driver as driver

    # A compile request through tta.aot.compile, cached or not.
    aot_compile.task_key = _refuse_unmarked(aot_compile.task_key)
    # Every build of every DSL's backend (driver.compile_spec, however it is reached).
    real_backend = driver.backend

    @functools.cache
    def checked_backend(name):
        b = real_backend(name)
        return dataclasses.replace(b, build=_refuse_unmarked(b.build))

    driver.backend = checked_backend
    try:
        import triton
    except ImportError:
        return
    triton.compile = _refuse_unmarked(triton.compile)  # Triton's own compile, as tests call it


def pytest_runtest_logstart(nodeid, location):
    # scripts/test.sh names the test that was running when a step passes its time limit.
    current = os.environ.get("TTA_TEST_CURRENT")
    if current:
        with open(current, "w") as f:
            f.write(nodeid + "\n")
