//! Time each step of the Rust pass on a graph JSON file, without Python:
//!
//!     cargo run --release --example pass_timing -- GRAPH.json IMPLS.json
//!
//! (benches/bench_rewrite.py measures the same through the Python bindings.)

use std::collections::HashMap;
use std::time::Instant;
use tta::pass;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (graph_path, impls_path) = (&args[1], &args[2]);
    let text = std::fs::read_to_string(graph_path).expect("graph file");
    let impls: pass::Impls =
        serde_json::from_str(&std::fs::read_to_string(impls_path).expect("impls file")).expect("impls");
    for round in 0..3 {
        let t = Instant::now();
        let analysis = pass::analyze_json(&text, impls.clone(), &Default::default()).expect("analyze");
        let outcome = analysis.outline(&HashMap::new()).expect("outline");
        let t_outline = t.elapsed();
        let json = tta::graph::to_json(&outcome.graph);
        let t_total = t.elapsed();
        let tm = &outcome.timings;
        println!(
            "round {round}: parse {:.1} verify {:.1} analyze {:.1} outline {:.1} serialize {:.1} ms; total {:.1} ms ({} regions, {} MB out)",
            tm.parse_ms,
            tm.verify_ms,
            tm.analyze_ms,
            tm.outline_ms,
            (t_total - t_outline).as_secs_f64() * 1e3,
            t_total.as_secs_f64() * 1e3,
            outcome.report.len(),
            json.len() / 1_000_000
        );
    }
}
