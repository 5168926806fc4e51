//! Helpers for the selector tests: compact node builders and a pass run with selectors.
#![allow(dead_code)]

use serde_json::{json, Value};
use std::collections::HashMap;
use tta::graph::{self, Graph};
use tta::lowering::{RegionReport, Status};
use tta::pass::{self, Impls, Outcome};
use tta::regions::selectors::Selectors;

pub fn tensor(shape: &[i64]) -> Value {
    json!({"dtype": "float32", "shape": shape})
}

pub fn ph(name: &str) -> Value {
    json!({"name": name, "op": "placeholder", "target": name, "val": tensor(&[4, 8])})
}

/// A call with a [4, 8] float tensor value; `args` may name nodes as `"@x"`.
pub fn call(name: &str, target: &str, args: Value) -> Value {
    json!({"name": name, "op": "call_function", "target": target, "args": refs(args), "val": tensor(&[4, 8]), "source": format!("model.py:{}", 10 + name.len())})
}

/// Set the node's module stack from `(path, type, call)` entries, outermost first.
pub fn inside(mut node: Value, stack: &[(&str, &str, u32)]) -> Value {
    let entries: Vec<Value> = stack
        .iter()
        .map(|(p, t, c)| if *c == 0 { json!({"path": p, "type": t}) } else { json!({"path": p, "type": t, "call": c}) })
        .collect();
    node["module"] = entries.last().cloned().unwrap_or(Value::Null);
    node["module_stack"] = Value::Array(entries);
    node
}

/// `_assert_tensor_metadata`-like node: reads `of`, produces nothing.
pub fn assertion(name: &str, of: &str) -> Value {
    json!({"name": name, "op": "call_function", "target": "aten._assert_tensor_metadata.default", "args": [{"ref": of}, null, null, {"dtype": "float32"}]})
}

pub fn output(names: &[&str]) -> Value {
    let r: Vec<Value> = names.iter().map(|n| json!({"ref": n})).collect();
    json!({"name": "output", "op": "output", "target": "output", "args": [r]})
}

/// Strings starting with `@` become node references, recursively.
pub fn refs(v: Value) -> Value {
    match v {
        Value::String(s) if s.starts_with('@') => json!({"ref": &s[1..]}),
        Value::Array(items) => Value::Array(items.into_iter().map(refs).collect()),
        other => other,
    }
}

pub fn doc(nodes: Vec<Value>) -> Value {
    json!({"format": "tta-graph", "version": 1, "nodes": nodes})
}

pub fn graph(nodes: Vec<Value>) -> Graph {
    graph::from_json(&doc(nodes).to_string()).unwrap()
}

pub fn impls(keys: &[&str]) -> Impls {
    keys.iter()
        .map(|k| {
            (
                (*k).to_owned(),
                tta::lowering::ImplDecl { name: k.split('@').next().unwrap().into(), ..Default::default() },
            )
        })
        .collect()
}

pub fn selectors(v: Value) -> Selectors {
    tta::regions::selectors::from_json(&v.to_string()).unwrap()
}

pub fn run(g: Graph, impls: Impls, sel: Value) -> Outcome {
    pass::analyze(g, impls, &selectors(sel)).unwrap().outline(&HashMap::new()).unwrap()
}

pub fn outlined(out: &Outcome) -> Vec<&RegionReport> {
    out.report.iter().filter(|r| r.status == Status::Outlined).collect()
}

pub fn refused(out: &Outcome) -> Vec<&RegionReport> {
    out.report.iter().filter(|r| r.status == Status::Refused).collect()
}

pub fn names(ports: &[tta::regions::Port]) -> Vec<&str> {
    ports.iter().map(|p| p.name.as_str()).collect()
}

pub fn report_text(out: &Outcome) -> String {
    out.report.iter().map(|r| r.to_string()).collect()
}

/// A fixture graph from tests/fixtures with its annotation tags removed.
pub fn fixture_without_annotations(name: &str) -> Graph {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/{name}.json"));
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut g = graph::from_json(&doc["graph"].to_string()).unwrap();
    g.regions.clear();
    g.nodes.iter_mut().for_each(|n| n.regions.clear());
    g
}
