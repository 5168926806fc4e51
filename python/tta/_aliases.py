"""Old module paths of tta, from before its modules moved into layer folders: ``import
tta.markers``, ``python -m tta.gpu.conformance`` and ``from tta.core import Port`` still work,
with a DeprecationWarning naming the new path. The old name becomes a second name of the new
module object (never a second copy of it)."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings

# old path -> new path. tta.rewrite and tta.explain are absent on purpose: they are names of
# public functions, which an imported module of the same name would replace on the package.
OLD_PATHS = {
    "tta.core": "tta.common.bridge",
    "tta.dtypes": "tta.common.dtypes",
    "tta.identity": "tta.common.identity",
    "tta.cache": "tta.common.cache",
    "tta.eager_stats": "tta.runtime.eager_stats",
    "tta.ops": "tta.runtime.ops",
    "tta.aot.eager": "tta.runtime.eager",
    "tta.annotate": "tta.declare.annotate",
    "tta.markers": "tta.declare.markers",
    "tta.plugin": "tta.declare.plugin",
    "tta.specs": "tta.declare.specs",
    "tta.selectors": "tta.fx.selectors",
    "tta.patterns": "tta.fx.patterns",
    "tta.aot.triton_tuning": "tta.declare.autotune",
    "tta.graph": "tta.fx.serialize",
    "tta.graph_copy": "tta.fx.graph_copy",
    "tta.exported": "tta.fx.exported",
    "tta.refusals": "tta.fx.refusals",
    "tta.graph_file": "tta.tools.graph_file",
    "tta.cli": "tta.tools.cli",
    "tta.aot.triton_specialize": "tta.aot.triton.specialize",
    "tta.aot.cutile_build": "tta.aot.cutile.build",
    "tta.aot.cutile_ptx": "tta.aot.cutile.ptx",
    "tta.aot.cutedsl_ir": "tta.aot.cutedsl.ir",
    "tta.aot.cutedsl_tensors": "tta.aot.cutedsl.tensors",
    "tta.gpu": "tta.tools.gpu",
    "tta.gpu.driver": "tta.runtime.launcher",
}
_PREFIXES = {"tta.gpu.": "tta.tools.gpu."}


def new_path(old: str) -> str | None:
    """Where module ``old`` lives now, or None if it never moved."""
    if old in OLD_PATHS:
        return OLD_PATHS[old]
    for prefix, to in _PREFIXES.items():
        if old.startswith(prefix):
            return to + old[len(prefix) :]
    return None


class _Alias(importlib.abc.Loader):
    def __init__(self, old: str, new: str):
        self.old, self.new = old, new

    def create_module(self, spec):
        warnings.warn(f"{self.old} moved to {self.new}; import it from there", DeprecationWarning, stacklevel=3)
        return importlib.import_module(self.new)

    def exec_module(self, module) -> None:
        pass  # the new module ran when it was imported

    def get_code(self, fullname: str):
        # python -m <old path>: runpy runs this code as __main__ with __spec__ and __package__
        # of the old name, so the new module's own code would resolve its relative imports
        # against the wrong package. This code instead says where the module went, then runs
        # the new module as __main__ inside its real package, as python -m <new path> does:
        # run_module points sys.argv[0] at the new file and sys.modules["__main__"] at the
        # module it runs, and its SystemExit (the exit status) passes through.
        return compile(_RUN_NEW.format(old=self.old, new=self.new), f"<python -m {self.old}>", "exec")


# Run as __main__, so the DeprecationWarning is shown under Python's default warning filters
# (which show DeprecationWarning only when __main__ triggers it), once, on stderr; -W still rules.
_RUN_NEW = """\
import runpy, warnings; warnings.warn("{old} moved to {new}; run python -m {new}", DeprecationWarning)
runpy.run_module("{new}", run_name="__main__", alter_sys=True)
"""


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path=None, target=None):
        new = new_path(fullname) if fullname.startswith("tta.") else None
        if new is None:
            return None
        found = importlib.util.find_spec(new)
        if found is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Alias(fullname, new), is_package=found.submodule_search_locations is not None)


def install() -> None:
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
