//! A short run of each fuzz target (the long runs: `cargo run --release --example fuzz`).
//! Any panic, or a run slower than the hang limit, fails the test with the input saved.

mod fuzz;

use std::time::Duration;

fn smoke(target: fuzz::Target, executions: u64) {
    let cfg = fuzz::Config {
        executions,
        seed: 7,
        // Generous: debug build, shared machine. Hangs proper take seconds to minutes.
        hang: Duration::from_secs(10),
        out: Some(fuzz::root().join("target/fuzz-findings")),
        max_findings: 5,
    };
    fuzz::quiet_panics();
    let report = fuzz::run(target, &cfg);
    eprintln!("{report}");
    assert!(report.executions == executions, "{report}");
    assert!(report.crashes.is_empty() && report.hangs.is_empty(), "{report}");
    assert!(report.outcomes > 3, "the mutations reach several outcomes: {report}");
}

#[test]
fn fuzz_graph_and_pass() {
    smoke(fuzz::Target::Graph, 300);
}

#[test]
fn fuzz_expr() {
    smoke(fuzz::Target::Expr, 5_000);
}

#[test]
fn fuzz_ptx() {
    smoke(fuzz::Target::Ptx, 500);
}

#[test]
fn fuzz_cubin() {
    smoke(fuzz::Target::Cubin, 1_000);
}
