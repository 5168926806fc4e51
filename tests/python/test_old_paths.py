"""Old module paths (``tta/_aliases.py``): ``python -m <old path>`` runs like ``python -m <new
path>`` (same output, same exit status, the new module as ``__main__`` inside its own package),
after one DeprecationWarning line on stderr that names the new path; ``import <old path>`` gives
the new module object itself."""

import importlib.util
import os
import pkgutil
import subprocess
import sys

import pytest

import tta
from tta._aliases import _PREFIXES, OLD_PATHS, new_path

pytestmark = pytest.mark.torch_independent

PYTHON_DIR = os.path.dirname(os.path.dirname(tta.__file__))
FIXTURE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "loop12.json")


def run_python(*argv: str) -> subprocess.CompletedProcess:
    # A fresh interpreter with Python's default warning filters, as a user's shell starts it.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    env["PYTHONPATH"] = PYTHON_DIR
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True, env=env, timeout=240)


def _old_paths() -> list[str]:
    """Every old path: those listed, and the modules of each moved package (_PREFIXES)."""
    paths = set(OLD_PATHS)
    for prefix, to in _PREFIXES.items():
        package = importlib.util.find_spec(to.rstrip("."))
        paths.update(prefix + m.name for m in pkgutil.iter_modules(package.submodule_search_locations))
    return sorted(paths)


def _runnable(old: str) -> bool:
    """Whether ``python -m <new path of old>`` runs something: a module with a __main__ block,
    or a package with a __main__ module."""
    spec = importlib.util.find_spec(new_path(old))
    if spec.submodule_search_locations is not None:
        return any(os.path.exists(os.path.join(d, "__main__.py")) for d in spec.submodule_search_locations)
    with open(spec.origin, encoding="utf-8") as f:
        source = f.read()
    return '__name__ == "__main__"' in source or "__name__ == '__main__'" in source


RUNNABLE = [old for old in _old_paths() if _runnable(old)]


def assert_runs_like_new(old: str, *argv: str) -> subprocess.CompletedProcess:
    new = new_path(old)
    was, now = run_python("-m", old, *argv), run_python("-m", new, *argv)
    first, *rest = was.stderr.splitlines(keepends=True)
    assert "DeprecationWarning" in first and f"{old} moved to {new}; run python -m {new}" in first, was.stderr
    assert (was.returncode, was.stdout, "".join(rest)) == (now.returncode, now.stdout, now.stderr)
    return now


def test_runnable_old_paths_found():
    assert {"tta.cli", "tta.gpu.conformance"} <= set(RUNNABLE)


@pytest.mark.parametrize("old", RUNNABLE)
def test_old_path_runs_like_new_under_dash_m(old):
    now = assert_runs_like_new(old, "--help")
    assert now.returncode == 0, now.stderr
    assert "usage:" in now.stdout


@pytest.mark.parametrize("argv, status", [(("report", FIXTURE), 0), (("report", FIXTURE + ".missing"), 2)])
def test_old_cli_path_reports_like_new(argv, status):
    now = assert_runs_like_new("tta.cli", *argv)
    assert now.returncode == status, now.stderr
    assert ("region " in now.stdout) if status == 0 else ("no such file" in now.stderr)


def test_old_conformance_path_refuses_like_new():
    # No manifest: argparse's usage error (exit 2), which needs no GPU.
    now = assert_runs_like_new("tta.gpu.conformance")
    assert now.returncode == 2 and "python -m tta.tools.gpu.conformance" in now.stderr


def test_import_old_path_is_new_module():
    code = (
        "import tta.cli, tta.tools.cli, tta.gpu.conformance as a, tta.tools.gpu.conformance as b\nprint(tta.cli is tta.tools.cli, a is b)"
    )
    out = run_python("-W", "always::DeprecationWarning", "-c", code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True"]
    assert "tta.cli moved to tta.tools.cli; import it from there" in out.stderr
    assert "tta.gpu.conformance moved to tta.tools.gpu.conformance; import it from there" in out.stderr
