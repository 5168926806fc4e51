//! Region boundaries that export and decomposition must not change: weights after activations,
//! inputs pinned by the user, and export's untagged assertions absorbed.

mod common;

use common::{graph_of, impls, t};
use serde_json::json;
use std::collections::HashMap;
use tta::lowering::Status;

fn ph(name: &str, shape: &[&str], weight: bool) -> serde_json::Value {
    let mut n = json!({"name": name, "op": "placeholder", "target": name, "val": t(shape)});
    if weight {
        n["weight"] = json!(true);
    }
    n
}

fn call(name: &str, target: &str, args: serde_json::Value, val: serde_json::Value, region: Option<&str>) -> serde_json::Value {
    let mut n = json!({"name": name, "op": "call_function", "target": target, "args": args, "val": val});
    if let Some(r) = region {
        n["regions"] = json!([r]);
    }
    n
}

fn out(refs: &[&str]) -> serde_json::Value {
    let refs: Vec<_> = refs.iter().map(|r| json!({"ref": r})).collect();
    json!({"name": "o", "op": "output", "target": "output", "args": [refs]})
}

/// `x * w + b`, where the region reads the weight `w` first (as a decomposed linear does).
fn weighted(decl: serde_json::Value) -> tta::lowering::RegionReport {
    let g = graph_of(
        json!([
            ph("w", &["4"], true),
            ph("b", &["4"], true),
            ph("x", &["4"], false),
            call("p", "aten.neg.default", json!([{"ref": "w"}]), t(&["4"]), Some("r")),
            call("m", "aten.mul.Tensor", json!([{"ref": "p"}, {"ref": "x"}]), t(&["4"]), Some("r")),
            call("a", "aten.add.Tensor", json!([{"ref": "m"}, {"ref": "b"}]), t(&["4"]), Some("r")),
            out(&["a"]),
        ]),
        json!({"r": decl}),
    );
    common::run(g, impls(&[("k", "p")]), &HashMap::new()).report.remove(0)
}

fn names(r: &tta::lowering::RegionReport) -> Vec<&str> {
    r.inputs.iter().map(|p| p.name.as_str()).collect()
}

#[test]
fn weights_come_after_activations() {
    assert_eq!(names(&weighted(json!({"impl": "k"}))), ["x", "w", "b"]);
}

#[test]
fn pinned_inputs_fix_the_order_and_must_be_complete() {
    assert_eq!(names(&weighted(json!({"impl": "k", "inputs": ["b", "w", "x"]}))), ["b", "w", "x"]);
    let r = weighted(json!({"impl": "k", "inputs": ["w", "x"]}));
    assert_eq!(r.status, Status::Refused);
    assert!(r.reason.as_deref().unwrap().contains("reads `b`, which lower_as(inputs=...) does not list"), "{:?}", r.reason);
    let r = weighted(json!({"impl": "k", "inputs": ["w", "x", "b", "zz"]}));
    assert!(r.reason.as_deref().unwrap().contains("lists `zz` (position 3)"), "{:?}", r.reason);
}

#[test]
fn untagged_assertions_reading_a_member_are_absorbed() {
    let g = graph_of(
        json!([
            ph("x", &["4"], false),
            call("chk_in", "aten._assert_tensor_metadata.default", json!([{"ref": "x"}]), json!(null), None),
            call("a", "aten.neg.default", json!([{"ref": "x"}]), t(&["4"]), Some("r")),
            call("chk", "aten._assert_tensor_metadata.default", json!([{"ref": "a"}]), json!(null), None),
            call("b", "aten.exp.default", json!([{"ref": "a"}]), t(&["4"]), Some("r")),
            out(&["b"]),
        ]),
        json!({"r": {"impl": "k"}}),
    );
    let o = common::run(g, impls(&[("k", "p")]), &HashMap::new());
    let r = &o.report[0];
    assert_eq!(r.status, Status::Outlined, "{:?}", r.reason);
    assert_eq!(r.absorbed, ["chk"]);
    assert_eq!(r.outputs.len(), 1);
    // The check of the region's input is no part of the region: it stays.
    assert!(o.graph.nodes.iter().any(|n| n.name == "chk_in"));
    assert!(!o.graph.nodes.iter().any(|n| n.name == "chk"));
}
