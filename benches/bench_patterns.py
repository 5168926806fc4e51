"""Benchmark pattern matching: tta's matcher vs torch.fx's SubgraphMatcher (prints numbers).

    python benches/bench_patterns.py [--layers 32] [--nodes 30000] [--sweep 3750,7500,15000,30000,60000,120000]
                                     [--fx-max 30000] [--repeat 3]

Both matchers get the same target graph and the same pattern graph (exported and decomposed
like the target), and must return the same occurrences (asserted). tta's time is end to end
from Python (`tta.find_regions`): serialize the fx graph to JSON, encode the selector, parse +
verify + match + validate (contained, convex) in Rust, and read the occurrences back. fx's time is
SubgraphMatcher(...) plus .match(graph), which checks the same two things. The full
`tta.rewrite` (outlining and editing the fx graph too) is timed once for reference. Cases:
1. a transformers Llama decoder with --layers layers (hidden size 32), the rotary-embedding
   pattern `q * cos + rotate_half(q) * sin` (two occurrences per layer);
2. a synthetic chain of --nodes nodes, pattern `relu(x + y) * 2.0`, with near misses (another
   literal, a leaked inner value) that neither matcher may take;
3. a size sweep of case 2 showing how each grows.

Targets, printed with whether this run met them: tta >= 150x faster than fx end to end at
--nodes nodes, and flat time per node over the sweep (the largest size's us/node at most 1.5x
the smallest's).
"""

from __future__ import annotations

import argparse
import gc

TARGET_SPEEDUP = 150
TARGET_FLAT = 1.5
import time

import torch
import torch.fx
from torch.fx.passes.utils.matcher_utils import SubgraphMatcher

import tta
from tta.fx import patterns, selectors


def ours(gm: torch.fx.GraphModule, sel: selectors.PatternSelector) -> tuple[set[frozenset[str]], float]:
    """Occurrences found by tta (``tta.find_regions``: serialize, match and validate in Rust,
    read back), and the end-to-end time."""
    t0 = time.perf_counter()
    regions = tta.find_regions(gm, [sel])
    elapsed = time.perf_counter() - t0
    # Valid occurrences: contained (only outputs read outside) and convex, as fx requires too.
    found = {frozenset(r.nodes) for r in regions if r.reason is None}
    return found, elapsed


def select_ms(gm: torch.fx.GraphModule, sel: selectors.PatternSelector) -> float:
    """The Rust matcher alone (building regions from the pattern, before validation)."""
    from tta.common import bridge as core
    from tta.declare.plugin import declarations
    from tta.fx import serialize as graph

    graph_json = graph.to_json(gm.graph)
    sel_doc, keys = selectors.encode([sel], gm)
    outcome = core.analyze(graph_json, declarations(keys), sel_doc).outline()
    return outcome.timings()["select_ms"]


def fx(gm: torch.fx.GraphModule, pattern: torch.fx.Graph) -> tuple[set[frozenset[str]], float]:
    t0 = time.perf_counter()
    matches = SubgraphMatcher(pattern, match_output=False, match_placeholder=False, remove_overlapping_matches=True).match(gm.graph)
    elapsed = time.perf_counter() - t0
    found = {frozenset(g.name for p, g in m.nodes_map.items() if p.op not in ("placeholder", "output")) for m in matches}
    return found, elapsed


def pattern_graph(fn, example_inputs) -> torch.fx.Graph:
    """The pattern as fx's matcher gets it: the same export + decomposition tta uses."""
    ep = torch.export.export(patterns._Call(fn), tuple(example_inputs), strict=False).run_decompositions()
    return ep.graph_module.graph


def best(fn, repeat: int):
    """Fastest of `repeat` runs, each from a collected heap (garbage left by earlier cases would
    otherwise slow down whichever side runs the garbage collector)."""
    results = []
    for _ in range(repeat):
        gc.collect()
        results.append(fn())
    return results[0][0], min(t for _, t in results)


def compare(label: str, gm: torch.fx.GraphModule, fn, example_inputs, impl, repeat: int, run_fx: bool = True) -> tuple[float, float | None]:
    sel = tta.lower_pattern(fn, impl, example_inputs, decompose=True)
    sel.graph_doc(True)  # export the pattern once, outside the timings (fx gets it ready-made too)
    n = len(gm.graph.nodes)
    mine, t_ours = best(lambda: ours(gm, sel), repeat)
    line = f"{label:<22} {n:>7} nodes {len(mine):>6} matches  tta {t_ours * 1e3:7.1f} ms (matcher {select_ms(gm, sel):5.1f} ms)"
    if not run_fx:
        print(line)
        return t_ours, None
    theirs, t_fx = best(lambda: fx(gm, pattern_graph(fn, example_inputs)), 1)
    assert mine == theirs, f"{label}: tta found {len(mine)} occurrences, fx {len(theirs)}; differ: {sorted(map(sorted, mine ^ theirs))[:3]}"
    print(f"{line}  fx {t_fx * 1e3:9.1f} ms  end-to-end speedup {t_fx / t_ours:6.1f}x  (same matches)")
    return t_ours, t_fx


def llama_decoder(layers: int) -> torch.fx.GraphModule:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    model = LlamaForCausalLM(cfg).eval()
    ids = torch.randint(0, 64, (1, 8))
    ep = torch.export.export(model, (ids,), kwargs={"use_cache": False}, strict=False).run_decompositions()
    return ep.graph_module


def rope(q, cos, sin):
    from transformers.models.llama.modeling_llama import rotate_half

    return q * cos + rotate_half(q) * sin


def add_relu_scale(x, y):
    return torch.relu(x + y) * 2.0


def synthetic(n_nodes: int, block: int = 3) -> torch.fx.GraphModule:
    """A chain of blocks `h = relu(h + y) * s` (plus `block - 3` filler ops): s = 2.0 makes an
    occurrence, except in one block of 25 (s = 3.0: a literal near miss) and another one of 25
    (its inner sum is also read by the next block: a leaked value). Every other block matches,
    so occurrences grow with the graph, as in a model made of repeated layers."""
    aten = torch.ops.aten
    val = torch.empty(16, 16, device="meta")
    g = torch.fx.Graph()
    x, y = g.placeholder("x"), g.placeholder("y")
    x.meta["val"] = y.meta["val"] = val
    h, leaked = x, None

    def node(target, args):
        n = g.call_function(target, args)
        n.meta["val"] = val
        return n

    count, k = 2, 0
    while count + block <= n_nodes:
        s = node(aten.add.Tensor, (h, y))
        r = node(aten.relu.default, (s,))
        m = node(aten.mul.Tensor, (r, 3.0 if k % 25 == 12 else 2.0))
        h = m
        for i in range(block - 3):
            h = node((aten.sin.default, aten.cos.default, aten.exp.default)[i % 3], (h,))
        if leaked is not None:
            h = node(aten.add.Tensor, (h, leaked))
            count += 1
        leaked = s if k % 25 == 24 else None
        count, k = count + block, k + 1
    if leaked is not None:
        h = node(aten.add.Tensor, (h, leaked))
    g.output((h,))
    return torch.fx.GraphModule(torch.nn.Module(), g)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--nodes", type=int, default=30000)
    ap.add_argument("--sweep", default="3750,7500,15000,30000,60000,120000")
    ap.add_argument("--fx-max", type=int, default=30000, help="largest sweep size fx runs on")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-llama", action="store_true")
    args = ap.parse_args()
    impl = tta.custom_plugin(name="bench_pattern")
    torch.set_num_threads(1)

    if not args.skip_llama:
        print(f"1. Llama decoder, {args.layers} layers, rotary-embedding pattern")
        t0 = time.perf_counter()
        gm = llama_decoder(args.layers)
        print(f"   (export + run_decompositions: {time.perf_counter() - t0:.1f} s)")
        q, cs = torch.randn(1, 4, 8, 8), torch.randn(1, 1, 8, 8)
        compare(f"llama-{args.layers}L rope", gm, rope, (q, cs, cs.clone()), impl, args.repeat)
        del gm

    print("2. synthetic chain, pattern relu(x + y) * 2.0")
    ex = (torch.randn(16, 16), torch.randn(16, 16))
    t_ours, t_fx = compare(f"synthetic-{args.nodes}", synthetic(args.nodes), add_relu_scale, ex, impl, args.repeat)
    speedup = t_fx / t_ours
    print(
        f"   speedup at {args.nodes} nodes: {speedup:.0f}x (target >= {TARGET_SPEEDUP}x: {'met' if speedup >= TARGET_SPEEDUP else 'NOT met'})"
    )
    res = tta.lower_pattern(add_relu_scale, impl, ex).apply(synthetic(args.nodes), on_refused="keep")
    t = res.timings
    print(
        f"   full tta.rewrite: {t['total_s'] * 1e3:.0f} ms for {len(res.outlined)} outlined regions "
        f"(read {t['read_s'] * 1e3:.0f} ms, pass {t['pass_s'] * 1e3:.0f} ms, apply {t['apply_s'] * 1e3:.0f} ms)"
    )
    del res

    print("3. size sweep (time per node should stay flat for a linear matcher)")
    rows = []
    for n in [int(s) for s in args.sweep.split(",") if s]:
        t_ours, t_fx = compare(f"synthetic-{n}", synthetic(n), add_relu_scale, ex, impl, args.repeat, run_fx=n <= args.fx_max)
        rows.append((n, t_ours, t_fx))
    print(f"   {'nodes':>7}  {'tta us/node':>12}  {'fx us/node':>11}")
    for n, t_ours, t_fx in rows:
        fx_txt = f"{t_fx / n * 1e6:11.2f}" if t_fx is not None else f"{'-':>11}"
        print(f"   {n:>7}  {t_ours / n * 1e6:12.3f}  {fx_txt}")
    if len(rows) > 1:
        growth = (rows[-1][1] / rows[-1][0]) / (rows[0][1] / rows[0][0])
        print(
            f"   us/node at {rows[-1][0]} vs {rows[0][0]} nodes: {growth:.2f}x "
            f"(flat: target <= {TARGET_FLAT}x: {'met' if growth <= TARGET_FLAT else 'NOT met'})"
        )


if __name__ == "__main__":
    main()
