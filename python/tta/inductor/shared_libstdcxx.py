"""A C++ compiler that links the process's ``libstdc++.so.6`` into every shared object it links.

Where the toolchain copies a private, static libstdc++ into each AOTInductor package (why that
crashes ``aoti_load_package``: ``package_check.py``), ``tta.aot_compile`` packages again with this
compiler: a small script around the user's compiler that names the ``libstdc++.so.6`` torch has
loaded on the link line, ahead of the driver's own ``-lstdc++``. The linker then resolves the C++
runtime from that library, and the package records it as needed, like any package built where
the toolchain links libstdc++ dynamically. Compiling is left untouched.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import tempfile


def loaded_libstdcxx() -> str | None:
    """The ``libstdc++.so.6`` mapped into this process (torch loads it), None where there is none
    or ``/proc`` cannot tell."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.rstrip("\n").split(maxsplit=5)[-1]
                if os.path.basename(path).startswith("libstdc++.so") and os.path.isfile(path):
                    return path
    except OSError:
        return None
    return None


def _script(cxx: str, libstdcxx: str) -> str:
    cxx, lib = shlex.quote(cxx), shlex.quote(libstdcxx)
    return (
        "#!/bin/sh\n"
        f"# Written by tta.aot_compile: {cxx}, linking {lib} into each shared object it links.\n"
        'for a in "$@"; do\n'
        f'  if [ "$a" = -shared ]; then exec {cxx} "$@" -Wl,--no-as-needed {lib}; fi\n'
        "done\n"
        f'exec {cxx} "$@"\n'
    )


def compiler_linking(cxx: str, libstdcxx: str) -> str:
    """The path of a compiler script that runs ``cxx`` and links ``libstdc++`` into every shared
    object. Written once per (compiler, library) into the temporary directory; concurrent callers
    write the same bytes and rename atomically."""
    resolved = shutil.which(cxx) or cxx  # the script must not find itself through PATH
    text = _script(os.path.abspath(resolved) if os.sep in resolved else resolved, libstdcxx)
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    folder = os.path.join(tempfile.gettempdir(), f"tta-cxx-{os.getuid()}", digest)
    path = os.path.join(folder, "g++")  # torch tells gcc from clang by the compiler's --version
    if not os.path.exists(path):
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, 0o755)
        os.replace(tmp, path)
    return path
