//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::collections::HashMap;
use tta::graph::{self, Graph};
use tta::pass::{self, Impls, MetaResult, Outcome};

pub struct Fixture {
    pub name: String,
    pub graph: Graph,
    pub impls: Impls,
    pub expect: serde_json::Value,
}

pub fn fixture_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

pub fn load(name: &str) -> Fixture {
    let text = std::fs::read_to_string(fixture_dir().join(format!("{name}.json"))).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    Fixture {
        name: name.into(),
        graph: graph::from_json(&doc["graph"].to_string()).unwrap(),
        impls: serde_json::from_value(doc["impls"].clone()).unwrap(),
        expect: doc["expect"].clone(),
    }
}

pub fn all_fixtures() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(fixture_dir())
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            (p.extension()? == "json").then(|| p.file_stem().unwrap().to_string_lossy().into_owned())
        })
        .collect();
    names.sort();
    names
}

pub fn run(g: Graph, impls: Impls, meta: &HashMap<String, MetaResult>) -> Outcome {
    pass::analyze(g, impls, &Default::default()).unwrap().outline(meta).unwrap()
}

/// Parse a compact graph written as JSON nodes, with the format header added.
pub fn graph_of(nodes: serde_json::Value, regions: serde_json::Value) -> Graph {
    let doc = serde_json::json!({"format": "tta-graph", "version": 1, "nodes": nodes, "regions": regions});
    graph::from_json(&doc.to_string()).unwrap()
}

pub fn impls(entries: &[(&str, &str)]) -> Impls {
    entries
        .iter()
        .map(|(k, name)| ((*k).to_owned(), tta::lowering::ImplDecl { name: (*name).into(), ..Default::default() }))
        .collect()
}

pub fn t(shape: &[&str]) -> serde_json::Value {
    let dims: Vec<serde_json::Value> =
        shape.iter().map(|d| d.parse::<i64>().map(serde_json::Value::from).unwrap_or_else(|_| (*d).into())).collect();
    serde_json::json!({"dtype": "float32", "shape": dims})
}
