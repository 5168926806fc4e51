//! Peak memory of the Rust pass on a chain of N one-op regions (the worst case per byte of
//! input: every node is in a region, every region is outlined):
//!
//!     cargo run --release --example pass_memory -- 1000000
//!
//! Prints the input size and the peak resident set (VmHWM) after each step, and the ratio.

use std::collections::HashMap;
use tta::pass;

fn chain(n: usize) -> String {
    let mut s = String::with_capacity(n * 200);
    s.push_str(r#"{"format":"tta-graph","version":1,"nodes":[{"name":"x","op":"placeholder","target":"x","val":{"dtype":"float32","shape":["s0",64],"stride":[64,1]}}"#);
    let mut prev = "x".to_string();
    for i in 0..n {
        let name = format!("relu_{i}");
        s.push_str(&format!(
            r#",{{"name":"{name}","op":"call_function","target":"aten.relu.default","args":[{{"ref":"{prev}"}}],"val":{{"dtype":"float32","shape":["s0",64],"stride":[64,1]}},"regions":["r{i}"],"source":"model.py:{}"}}"#,
            i % 1000
        ));
        prev = name;
    }
    s.push_str(&format!(
        r#",{{"name":"output","op":"output","target":"output","args":[[{{"ref":"{prev}"}}]]}}],"regions":{{"#
    ));
    for i in 0..n {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&format!(r#""r{i}":{{"impl":"k"}}"#));
    }
    s.push_str("}}");
    s
}

fn peak_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb: f64 = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    kb / 1024.0
}

fn main() {
    let n: usize = std::env::args().nth(1).map(|a| a.parse().expect("N")).unwrap_or(1_000_000);
    let text = chain(n);
    let input_mb = text.len() as f64 / 1e6;
    let base = peak_mb();
    println!("input: {n} regions, {input_mb:.0} MB of JSON; peak so far {base:.0} MB");
    let impls: pass::Impls = serde_json::from_str(r#"{"k": {"name": "k"}}"#).unwrap();
    let analysis = pass::analyze_json(&text, impls, &Default::default()).expect("analyze");
    println!("after analyze: peak {:.0} MB", peak_mb());
    if std::env::var_os("TTA_ANALYZE_ONLY").is_some() {
        return;
    }
    let summary = serde_json::to_string(&analysis.summary()).unwrap();
    println!("after summary ({} MB): peak {:.0} MB", summary.len() / 1_000_000, peak_mb());
    drop(summary);
    let outcome = analysis.outline(&HashMap::new()).expect("outline");
    println!("after outline: peak {:.0} MB", peak_mb());
    let edits = serde_json::to_string(&(&outcome.edits, &outcome.moves)).unwrap();
    let report = serde_json::to_string(&outcome.report).unwrap();
    println!(
        "after edits ({} MB) and report ({} MB): peak {:.0} MB",
        edits.len() / 1_000_000,
        report.len() / 1_000_000,
        peak_mb()
    );
    let peak = peak_mb();
    println!("pass peak {:.0} MB above the input: {:.1}x the input", peak - base, (peak - base) / input_mb);
}
