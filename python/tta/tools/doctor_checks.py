"""The checks ``tta doctor`` makes, in table order: each takes the shared ``State`` (what earlier
checks found) and returns its rows. docs/doctor.md says what each one means."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from ..common import known_bugs, packages
from ..common.cuda_driver import driver_ptx_cap
from .doctor_rows import OK, PROBLEM, SKIP, WARN, Row, one_line

DSLS = (
    ("triton", "Triton", "triton", ("triton",)),
    ("cutile", "cuTile", "cuda.tile", ("cuda-tile",)),
    ("cutedsl", "CuTeDSL", "cutlass", ("nvidia-cutlass-dsl",)),
)


class State:
    """What the checks found, for the checks after them."""

    def __init__(self) -> None:
        self.torch = None  # the module, once it imported
        self.gpu: tuple[str, int] | None = None  # (name, sm)
        self.driver: str | None = None
        self.cap = None  # cuda_driver.PtxCap
        self.dsls: list[str] = []  # installed kernel DSLs (backend names)
        self.trt = None  # the tensorrt module, once it imported
        self.trtp = None  # tensorrt.plugin, once it imported
        self.aot = False  # tensorrt.plugin can build AOT plugins
        self.qdp_refusal: str | None = None


def check_tta(s: State) -> list[Row]:
    import tta

    from ..common import bridge as core

    where = os.path.dirname(os.path.abspath(tta.__file__))
    v = packages.version_of("tta")
    core.max_isa_for_driver("13.0")  # the Rust extension answers
    py = f"Python {sys.version.split()[0]}"
    return [Row("tta", f"{v[1] if v else 'source'} at {where}", f"Rust core loaded; {py}")]


def check_torch(s: State) -> list[Row]:
    v = packages.version_of("torch")
    if v is None:
        return [Row("torch", "not installed", status=PROBLEM, note="tta needs torch >= 2.9 (pip install torch)")]
    try:
        import torch
    except Exception as e:
        return [Row("torch", v[1], status=PROBLEM, note=f"torch {v[1]} does not import: {one_line(e)}")]
    s.torch = torch
    plan = "exports models and runs regions eagerly"
    if tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]) < (2, 9):
        return [Row("torch", torch.__version__, plan, PROBLEM, "tta needs torch >= 2.9")]
    return [Row("torch", torch.__version__, plan)]


def check_gpu(s: State) -> list[Row]:
    if s.torch is None:
        return [Row("GPU", "?", status=SKIP, note="torch did not import")]
    torch = s.torch
    if not torch.cuda.is_available():
        why = "torch is a CPU-only build" if torch.version.cuda is None else "torch sees no CUDA device"
        return [Row("GPU", "none", "compile for the sm= you pass (tta.compile needs a GPU or sm=)", SKIP, why)]
    name = torch.cuda.get_device_name(0)
    major, minor = torch.cuda.get_device_capability(0)
    s.gpu = (name, 10 * major + minor)
    more = f" (+{torch.cuda.device_count() - 1} more)" if torch.cuda.device_count() > 1 else ""
    return [Row("GPU", f"{name}, SM {major}.{minor}{more}", f"compiles kernels for sm_{10 * major + minor}")]


def check_driver(s: State) -> list[Row]:
    # The function tta.compile's default max_ptx comes from: the row shows what tta will use.
    s.cap = driver_ptx_cap()
    s.driver = s.cap.driver
    rows = []
    if s.driver is None:
        rows.append(
            Row("CUDA driver", "none (libcuda not found)", status=SKIP, note="no NVIDIA driver here: kernels are compiled, not run")
        )
    else:
        rows.append(Row("CUDA driver", f"CUDA {s.driver}", "loads the PTX of AOT plugins (JIT to the GPU)"))
    status = PROBLEM if s.cap.problem else OK
    rows.append(Row("PTX ISA cap", f"ISA {s.cap.isa}", f"tta.compile(max_ptx='driver') caps PTX at {s.cap.option}", status, s.cap.why))
    return rows


def check_cuda(s: State) -> list[Row]:
    if s.torch is None:
        return [Row("CUDA (torch)", "?", status=SKIP, note="torch did not import")]
    cuda = s.torch.version.cuda
    if cuda is None:
        return [Row("CUDA (torch)", "none (CPU-only torch)", status=SKIP, note="no CUDA runtime in torch")]
    row = Row("CUDA (torch)", f"CUDA {cuda} runtime", "runs eager regions and the engine check")
    if s.driver is not None and int(cuda.split(".")[0]) > int(s.driver.split(".")[0]):
        row.status, row.note = (
            PROBLEM,
            f"torch is built for CUDA {cuda}, which a CUDA {s.driver} driver cannot run (needs a CUDA {cuda.split('.')[0]} driver)",
        )
    return [row]


def check_ptxas(s: State) -> list[Row]:
    from ..aot.cuda_tools import find_ptxas, tool_version

    isa = s.cap.isa if s.cap is not None else "9.0"
    path = find_ptxas(isa)
    if path is None:
        needs = [n for b, n, *_ in DSLS if b in ("cutile", "cutedsl") and packages.module_present(DSLS_MODULE[b])]
        status = WARN if needs else SKIP
        note = f"no ptxas reads PTX ISA {isa} (set TTA_PTXAS)" + (
            f": {', '.join(needs)} kernels keep their arch-specific target" if needs else ""
        )
        return [Row("ptxas", "none", status=status, note=note)]
    return [Row("ptxas", f"CUDA {tool_version(path)} at {path}", "checks plain sm targets of cuTile/CuTeDSL PTX")]


DSLS_MODULE = {b: m for b, _, m, _ in DSLS}


def check_dsls(s: State) -> list[Row]:
    rows = []
    torch_triton = packages.pins("torch", "triton", "pytorch-triton")
    for backend, label, module, dists in DSLS:
        v = packages.version_of(*dists)
        if v is None or not packages.module_present(module):
            rows.append(Row(label, "not installed", status=SKIP, note=f"no {label} kernels here"))
            continue
        s.dsls.append(backend)
        row = Row(label, v[1], "compiles its kernels ahead of time into plugins")
        if backend == "triton" and torch_triton:
            fit = packages.fits(v[1], torch_triton[0])
            if fit is False:
                row.status, row.note = WARN, f"torch pins {torch_triton[0]}: torch.compile may break; tta compiles with this Triton"
            elif fit:
                row.plan += f" (fits torch's {torch_triton[0]})"
        if backend == "cutile" and s.gpu is not None:
            from ..aot.cuda_tools import tileiras
            from ..errors import PluginError

            try:
                row.plan += f"; tileiras {tileiras(s.gpu[1])}"
            except PluginError as e:
                row.status, row.note = PROBLEM, one_line(e, 400)
        rows.append(row)
    return rows


def check_numpy(s: State) -> list[Row]:
    v = packages.version_of("numpy")
    return [
        Row(
            "NumPy",
            v[1] if v else "not installed",
            "decodes plugin attributes" if v else "",
            OK if v else PROBLEM,
            "" if v else "tta needs numpy",
        )
    ]


def check_tensorrt(s: State) -> list[Row]:
    dists = [
        d
        for d in ("tensorrt", "tensorrt-cu13", "tensorrt-cu12", "tensorrt-cu13-bindings", "tensorrt-cu12-bindings")
        if packages.version_of(d)
    ]
    if not dists and not packages.module_present("tensorrt"):
        return [Row("TensorRT", "not installed", status=SKIP, note="no TensorRT: no engines (pip install tensorrt-cu13)")]
    try:
        import tensorrt as trt
    except Exception as e:
        return [Row("TensorRT", ", ".join(dists) or "?", status=PROBLEM, note=f"tensorrt does not import: {one_line(e)}")]
    s.trt = trt
    found = trt.__version__ + (" (tta's test stand-in, tests/trt_standin)" if getattr(trt, "STANDIN", False) else "")
    flavour = next((d.split("-")[1] for d in dists if d.startswith("tensorrt-cu")), None)
    row = Row("TensorRT", found + (f", {flavour}" if flavour else ""), "builds engines with tta's AOT plugins")
    s.qdp_refusal = known_bugs.qdp_refusal(trt.__version__)
    torch_cuda = getattr(getattr(s.torch, "version", None), "cuda", None)
    if s.qdp_refusal:
        row.status, row.note = PROBLEM, s.qdp_refusal
    elif flavour and torch_cuda and flavour != f"cu{torch_cuda.split('.')[0]}":
        row.status, row.note = PROBLEM, f"TensorRT is the {flavour} build and torch uses CUDA {torch_cuda}: one process loads both"
    return [row]


def check_plugin_package(s: State) -> list[Row]:
    if s.trt is None:
        return [Row("tensorrt.plugin", "-", status=SKIP, note="TensorRT absent or broken")]
    try:
        import tensorrt.plugin as trtp
    except Exception as e:
        return [Row("tensorrt.plugin", "missing", status=PROBLEM, note=f"tensorrt.plugin does not import: {one_line(e)}")]
    s.trtp = trtp
    missing = [
        n
        for n, ok in (
            ("tensorrt.QuickPluginCreationRequest", hasattr(s.trt, "QuickPluginCreationRequest")),
            ("tensorrt.plugin.aot_impl", hasattr(trtp, "aot_impl")),
        )
        if not ok
    ]
    if missing:
        return [
            Row(
                "tensorrt.plugin",
                f"{s.trt.__version__}, no AOT",
                status=PROBLEM,
                note=f"no {' / '.join(missing)}: tta's plugins are ahead-of-time; use TensorRT >= 10.10",
            )
        ]
    s.aot = True
    import numpy as np

    plan = "defines tta::<op> plugins with aot_impl"
    if known_bugs.numpy_scalar_attrs_broken(s.trt.__version__, np.__version__):
        plan += f"; int/float attributes go as strings (NumPy {np.__version__} bug, fixed in 11.2)"
    if known_bugs.list_attrs_broken(s.trt.__version__):
        plan += "; list attributes refused (need 11.3)"
    return [Row("tensorrt.plugin", "AOT (QuickPluginCreationRequest)", plan)]


def check_torch_tensorrt(s: State) -> list[Row]:
    v = packages.version_of("torch-tensorrt", "torch_tensorrt")
    if v is None:
        return [Row("Torch-TensorRT", "not installed", status=SKIP, note="no tta.compile (pip install torch-tensorrt)")]
    rows = []
    row = Row("Torch-TensorRT", v[1], "tta.compile / torch_tensorrt.compile outline regions into plugins")
    bad = []
    torch_pin = packages.pins(v[0], "torch")
    if torch_pin and s.torch is not None:
        fit = packages.fits(s.torch.__version__, torch_pin[0])
        if fit is False:
            bad.append(f"it pins {torch_pin[0]}, torch is {s.torch.__version__}")
        row.plan += f"; pins {torch_pin[0]}"
    trt_pins = packages.pins(v[0], "tensorrt", prefix=True)
    if trt_pins and s.trt is not None:
        wrong = [p for p in trt_pins if packages.fits(s.trt.__version__, p) is False]
        if wrong:
            bad.append(f"it pins {wrong[0]}, TensorRT is {s.trt.__version__}")
    if not bad:
        try:
            import torch_tensorrt  # noqa: F401
        except Exception as e:
            bad.append(f"does not import: {one_line(e)}")
    if bad:
        row.status, row.note = PROBLEM, "; ".join(bad)
    rows.append(row)
    return rows


def check_known_bugs(s: State) -> list[Row]:
    if s.trt is None:
        return [Row("TensorRT bugs", "-", status=SKIP, note="TensorRT absent or broken")]
    leak = known_bugs.aot_module_leak(s.trt.__version__)
    if leak:
        return [Row("TensorRT bugs", known_bugs.AOT_MODULE_LEAK, "warns once per engine it builds", WARN, leak)]
    if s.qdp_refusal:
        return [Row("TensorRT bugs", "QDP broken", "refuses to define plugins", PROBLEM, s.qdp_refusal)]
    note = (
        f"{known_bugs.AOT_MODULE_LEAK} (11.1-11.2.1) not confirmed either way on {s.trt.__version__}"
        if known_bugs.parse(s.trt.__version__) > (11, 2, 1)
        else ""
    )
    return [Row("TensorRT bugs", "none known for this version", "", OK, note)]


def check_cache(s: State) -> list[Row]:
    from ..common.cache import VERSION, Cache

    root = Cache().root
    entries = list((root / f"v{VERSION}").glob("*/*.entry")) if root.is_dir() else []
    size = sum(p.stat().st_size for p in entries if p.is_file())
    found = f"{root}: {len(entries)} entries, {_size(size)}" if root.exists() else f"{root} (not created yet)"
    problem = _not_writable(root)
    if problem:
        return [Row("tta cache", found, "", PROBLEM, f"{problem}; set TTA_CACHE_DIR to a writable directory")]
    return [Row("tta cache", found, "keeps compiled kernels (writable)")]


def _not_writable(root: Path) -> str | None:
    if root.exists() and not root.is_dir():
        return f"{root} is not a directory"
    if not root.exists():
        parent = next((p for p in root.parents if p.exists()), None)
        if parent is None or not parent.is_dir():
            return f"{root} cannot be created ({parent} is not a directory)"
        if not os.access(parent, os.W_OK | os.X_OK):
            return f"{root} cannot be created ({parent} is not writable)"
        return None
    try:
        fd, tmp = tempfile.mkstemp(prefix=".tta-doctor-", dir=root)
        os.close(fd)
        os.unlink(tmp)
    except OSError as e:
        return f"{root} is not writable ({e.strerror or e})"
    return None


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def check_engine(s: State) -> list[Row]:
    from . import doctor_engine

    return doctor_engine.check(s)


CHECKS = [
    ("tta", check_tta),
    ("torch", check_torch),
    ("GPU", check_gpu),
    ("CUDA driver", check_driver),
    ("CUDA (torch)", check_cuda),
    ("ptxas", check_ptxas),
    ("kernel DSLs", check_dsls),
    ("NumPy", check_numpy),
    ("TensorRT", check_tensorrt),
    ("tensorrt.plugin", check_plugin_package),
    ("Torch-TensorRT", check_torch_tensorrt),
    ("TensorRT bugs", check_known_bugs),
    ("tta cache", check_cache),
    ("engine", check_engine),
]
