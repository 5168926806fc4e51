//! Mutation fuzzing on stable Rust (see tests/fuzz/mod.rs for how it works):
//!
//!     cargo run --release --example fuzz -- [TARGET|all] [--runs N] [--seed S] [--hang-ms T] [--out DIR]
//!
//! Targets: graph (loader + whole pass), expr (parser + evaluator), ptx (parser + rewriters),
//! cubin (ELF reader). Exits 1 when any target found a crash or a hang; crashing inputs are
//! written to DIR (default target/fuzz-findings).

#[path = "../tests/fuzz/mod.rs"]
mod fuzz;

use std::time::Duration;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut targets = fuzz::targets::ALL.to_vec();
    let mut cfg = fuzz::Config {
        executions: 1_000_000,
        seed: 1,
        hang: Duration::from_millis(1000),
        out: Some("target/fuzz-findings".into()),
        max_findings: 20,
    };
    let mut i = 0;
    while i < args.len() {
        let value = || args.get(i + 1).cloned().unwrap_or_else(|| panic!("{} needs a value", args[i]));
        match args[i].as_str() {
            "--runs" => cfg.executions = value().parse().expect("--runs N"),
            "--seed" => cfg.seed = value().parse().expect("--seed S"),
            "--hang-ms" => cfg.hang = Duration::from_millis(value().parse().expect("--hang-ms T")),
            "--out" => cfg.out = Some(value().into()),
            "all" => {
                i += 1;
                continue;
            }
            name => {
                targets = vec![fuzz::Target::from_name(name).unwrap_or_else(|| panic!("unknown target {name}"))];
                i += 1;
                continue;
            }
        }
        i += 2;
    }
    fuzz::quiet_panics();
    let mut failed = false;
    for t in targets {
        let report = fuzz::run(t, &cfg);
        println!("{report}");
        failed |= !report.crashes.is_empty() || !report.hangs.is_empty();
    }
    std::process::exit(i32::from(failed));
}
