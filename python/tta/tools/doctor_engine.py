"""``tta doctor``'s engine check: one TensorRT engine with one tta AOT plugin per installed kernel
DSL (each DSL's ``relu(x + y)`` example kernel), run at two input shapes, each output compared
with eager PyTorch, then TensorRT's engine inspector asked for the plugin layers and their
metadata (what the engine really holds).

The network is built with TensorRT's own API (no Torch-TensorRT), so this checks TensorRT and
tta's plugins alone. ``check`` decides whether the engine can be built here and turns the
outcome into rows; ``build_and_run`` does the work (tests replace it where no engine can run).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from .doctor_rows import PROBLEM, SKIP, Row, one_line

# The engine's optimization profile (min, opt, max) and the shapes it runs: the second differs
# from the first, the shape change NVIDIA/TensorRT #4849 is about.
PROFILE = ((1, 1), (64, 1024), (512, 8192))
RUN_SHAPES = ((7, 129), (333, 4097))
LAYER_PREFIX = "tta:doctor/"


@dataclass
class Case:
    dsl: str  # backend name
    plugin: str  # tta plugin name (tta::<plugin>)
    example: object  # tta.examples.kernels.Example


@dataclass
class EngineResult:
    compiled: dict[str, str] = field(default_factory=dict)  # dsl -> what its plugin compiled to
    failed: dict[str, str] = field(default_factory=dict)  # dsl -> one-line reason
    runs: list[tuple[str, tuple, float, bool]] = field(default_factory=list)  # (dsl, shape, max err, ok)
    layers: list[dict] = field(default_factory=list)  # the inspector's plugin layers: name, type, metadata
    error: str | None = None  # the engine was not built or did not run


def check(s) -> list[Row]:
    """Rows of the engine check, or one skipped row saying what is missing."""
    why = _cannot_build(s)
    if why:
        return [Row("engine", "not built", status=SKIP, note=why)]
    try:
        result = build_and_run(s.dsls, s.gpu[1], s.cap.option)
    except Exception as e:
        return [Row("engine", "build failed", status=PROBLEM, note=one_line(e))]
    return rows_of(result)


def _cannot_build(s) -> str | None:
    if s.trt is None:
        return "no TensorRT"
    if getattr(s.trt, "STANDIN", False):
        return "tensorrt is tta's test stand-in, which cannot run engines"
    if s.gpu is None:
        return "no GPU to run an engine on"
    if not s.aot:
        return "tensorrt.plugin has no AOT plugins"
    if s.qdp_refusal:
        return "this TensorRT's QDP plugins do not work (see TensorRT)"
    if not s.dsls:
        return "no kernel DSL (Triton, cuTile, CuTeDSL) installed"
    return None


def rows_of(r: EngineResult) -> list[Row]:
    rows = [Row(f"engine: {dsl}", "not in the engine", status=PROBLEM, note=why) for dsl, why in r.failed.items()]
    if r.error is not None:
        rows.append(Row("engine", f"{len(r.compiled)} plugin(s) compiled", status=PROBLEM, note=r.error))
        return rows
    for dsl, what in r.compiled.items():
        runs = [x for x in r.runs if x[0] == dsl]
        shown = ", ".join(f"{'x'.join(map(str, shape))}: err {err:.1e}" for _, shape, err, _ in runs)
        bad = [x for x in runs if not x[3]]
        row = Row(f"engine: {dsl}", what, f"ran at {shown}; matches eager" if not bad else f"ran at {shown}")
        if bad or not runs:
            row.status, row.note = PROBLEM, "differs from eager PyTorch" if bad else "did not run"
        rows.append(row)
    expected = {f"{LAYER_PREFIX}{d}" for d in r.compiled}
    seen = {l["name"]: l for l in r.layers}
    text = "; ".join(f"{l['name']} [{l['type']}] {l['metadata']}" for l in r.layers) or "none"
    row = Row("engine layers", text, "the engine inspector shows tta's plugin layers with their metadata")
    missing = sorted(n for n in expected if n not in seen or LAYER_PREFIX.rstrip("/") not in (seen[n]["metadata"] or ""))
    if missing:
        row.status, row.note = PROBLEM, f"inspector shows no plugin layer (or no tta metadata) for {', '.join(missing)}"
    rows.append(row)
    return rows


def cases(dsls, sm: int, max_ptx: int, result: EngineResult) -> list[Case]:
    """Define and compile one plugin per DSL; a DSL whose kernel does not compile is recorded
    in ``result.failed`` and left out."""
    import torch

    from ..examples.kernels import by_name
    from ..trt import qdp

    out = []
    for dsl in dsls:
        try:
            ex = by_name(f"{dsl}_add_relu")
            name = f"doctor_{dsl}"
            qdp.define(name, ex.plugin(), ex.input_metas(torch.float32), ex.meta, sm=sm, max_ptx=max_ptx)
            entry = qdp.registered(name)
            kernels = qdp.tactics(name)
            for tactic, k in kernels.items():
                entry.refuse_cubin(tactic, k)
            first = next(iter(kernels.values()))
            result.compiled[dsl] = f"{len(kernels)} tactic(s), {first.code_format} ISA {first.ptx_version or '?'}"
            out.append(Case(dsl, name, ex))
        except Exception as e:
            result.failed[dsl] = one_line(e)
    return out


def build_network(trt, trtp, builder, plugin_cases: list[Case]):
    """The network (inputs x, y of float32 [-1, -1]; one plugin layer per case, each output an
    engine output) and a builder config with the profile and detailed layer information."""
    net = builder.create_network(0)
    x = net.add_input("x", trt.float32, (-1, -1))
    y = net.add_input("y", trt.float32, (-1, -1))
    for c in plugin_cases:
        layer = net.add_plugin(getattr(trtp.op.tta, c.plugin)(x, y), aot=True)
        layer.name = f"{LAYER_PREFIX}{c.dsl}"
        layer.metadata = json.dumps({"op": f"tta::{c.plugin}", "dsl": c.dsl, "from": LAYER_PREFIX.rstrip("/")}, separators=(",", ":"))
        out = layer.get_output(0)
        out.name = f"out_{c.dsl}"
        net.mark_output(out)
    config = builder.create_builder_config()
    profile = builder.create_optimization_profile()
    for name in ("x", "y"):
        profile.set_shape(name, *PROFILE)
    config.add_optimization_profile(profile)
    config.profiling_verbosity = trt.ProfilingVerbosity.DETAILED  # layer metadata in the inspector
    return net, config


def inspector_layers(info: str | dict) -> list[dict]:
    """The plugin layers of the engine inspector's JSON (detailed verbosity gives a dict per layer;
    names only give strings): name, type, metadata."""
    doc = json.loads(info) if isinstance(info, str) else info
    out = []
    for layer in doc.get("Layers", []) if isinstance(doc, dict) else []:
        if isinstance(layer, str):
            if layer.startswith(LAYER_PREFIX):
                out.append({"name": layer, "type": "?", "metadata": None})
            continue
        name = str(layer.get("Name", ""))
        kind = str(layer.get("LayerType", layer.get("Type", "?")))
        if name.startswith(LAYER_PREFIX) or "plugin" in kind.lower():
            out.append({"name": name, "type": kind, "metadata": layer.get("Metadata")})
    return out


def build_and_run(dsls, sm: int, max_ptx: int) -> EngineResult:
    import tensorrt as trt
    import tensorrt.plugin as trtp
    import torch

    result = EngineResult()
    plugin_cases = cases(dsls, sm, max_ptx, result)
    if not plugin_cases:
        result.error = "no plugin compiled"
        return result
    logger = trt.Logger(trt.Logger.WARNING)
    builder = trt.Builder(logger)
    net, config = build_network(trt, trtp, builder, plugin_cases)
    plan = builder.build_serialized_network(net, config)
    if plan is None:
        result.error = "TensorRT built no engine (its log above says why)"
        return result
    engine = trt.Runtime(logger).deserialize_cuda_engine(plan)
    if engine is None:
        result.error = "TensorRT could not load the engine it built (its log above says why)"
        return result
    context = engine.create_execution_context()
    stream = torch.cuda.current_stream()
    for shape in RUN_SHAPES:
        x, y = plugin_cases[0].example.make_inputs(shape, torch.float32, "cuda")
        outs = {c.dsl: torch.empty(shape, dtype=torch.float32, device="cuda") for c in plugin_cases}
        for name, t in (("x", x), ("y", y)):
            context.set_input_shape(name, shape)
            context.set_tensor_address(name, t.data_ptr())
        for dsl, t in outs.items():
            context.set_tensor_address(f"out_{dsl}", t.data_ptr())
        if not context.execute_async_v3(stream.cuda_stream):
            result.error = f"execute_async_v3 failed at shape {shape} (TensorRT's log above says why)"
            return result
        stream.synchronize()
        for c in plugin_cases:
            err, ok = c.example.compare(outs[c.dsl], c.example.reference(x, y))
            result.runs.append((c.dsl, shape, err, ok))
    inspector = engine.create_engine_inspector()
    result.layers = inspector_layers(inspector.get_engine_information(trt.LayerInformationFormat.JSON))
    return result
