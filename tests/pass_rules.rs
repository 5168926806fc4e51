//! The pass's rules on small hand-written graphs: verifier errors, naming, ordering, checks.

mod common;

use common::{graph_of, impls, t};
use serde_json::json;
use std::collections::HashMap;
use tta::graph::verify::{verify, verify_rewritten};
use tta::lowering::{MetaOut, Status};
use tta::pass::{self, MetaResult};

fn out(name: &str, refs: &[&str]) -> serde_json::Value {
    let refs: Vec<_> = refs.iter().map(|r| json!({"ref": r})).collect();
    json!({"name": name, "op": "output", "target": "output", "args": [refs]})
}

fn ph(name: &str, shape: &[&str]) -> serde_json::Value {
    json!({"name": name, "op": "placeholder", "target": name, "val": t(shape)})
}

fn call(name: &str, target: &str, args: serde_json::Value, shape: &[&str], region: Option<&str>) -> serde_json::Value {
    let mut n = json!({"name": name, "op": "call_function", "target": target, "args": args, "val": t(shape), "source": format!("m.py:{}", name.len())});
    if let Some(r) = region {
        n["regions"] = json!([r]);
    }
    n
}

fn verify_err(nodes: serde_json::Value) -> tta::Error {
    let doc = json!({"format": "tta-graph", "version": 1, "nodes": nodes});
    let g = tta::graph::from_json(&doc.to_string()).unwrap();
    verify(&g).map(|_| ()).unwrap_err()
}

#[test]
fn verifier_names_the_offending_node() {
    let e = verify_err(json!([
        ph("x", &["4"]),
        call("a", "aten.relu.default", json!([{"ref": "a"}]), &["4"], None),
        out("o", &["a"])
    ]));
    assert_eq!(e.node.as_deref(), Some("a"));
    assert!(e.message.contains("refers to itself"), "{e}");
    assert_eq!(e.source.as_deref(), Some("m.py:1"));

    let e = verify_err(json!([
        ph("x", &["4"]),
        out("o", &["x"]),
        call("a", "aten.relu.default", json!([{"ref": "x"}]), &["4"], None)
    ]));
    assert!(e.message.contains("output node must be the last"), "{e}");

    let e = verify_err(json!([ph("x", &["4"])]));
    assert!(e.message.contains("exactly one output"), "{e}");

    let e = verify_err(json!([
        ph("x", &["4"]),
        call("b", "aten.relu.default", json!([{"ref": "x"}]), &["s0 * * 2"], None),
        out("o", &["b"])
    ]));
    assert_eq!(e.node.as_deref(), Some("b"));
}

#[test]
fn the_verifier_after_a_rewrite_checks_every_reference_and_the_changed_values() {
    let doc = |nodes: serde_json::Value| {
        let doc = json!({"format": "tta-graph", "version": 1, "nodes": nodes});
        tta::graph::from_json(&doc.to_string()).unwrap()
    };
    let rewritten = |bad: &str| {
        json!([
            ph("x", &["4"]),
            call("a", "aten.relu.default", json!([{"ref": bad}]), &["4"], None),
            call("b", "aten.relu.default", json!([{"ref": "a"}]), &["s0 * * 2"], None),
            out("o", &["b"])
        ])
    };
    // A reader left pointing at a removed node is caught on an unchanged node too.
    let g = doc(rewritten("gone"));
    let e = verify_rewritten(&g, &[false, false, true, false]).unwrap_err();
    assert_eq!(e.node.as_deref(), Some("a"), "{e}");
    // A value is checked where the pass changed the node; the others' were verified before.
    let g = doc(rewritten("x"));
    let e = verify_rewritten(&g, &[false, false, true, false]).unwrap_err();
    assert_eq!(e.node.as_deref(), Some("b"), "{e}");
    assert!(verify_rewritten(&g, &[false, false, false, false]).is_ok());
    assert!(verify(&g).is_err(), "the full verifier checks every value");
}

fn region_graph(shape: &[&str]) -> tta::graph::Graph {
    graph_of(
        json!([
            ph("x", shape),
            ph("y", shape),
            call("add", "aten.add.Tensor", json!([{"ref": "x"}, {"ref": "y"}]), shape, Some("r")),
            call("relu", "aten.relu.default", json!([{"ref": "add"}]), shape, Some("r")),
            out("o", &["relu"]),
        ]),
        json!({"r": {"impl": "k"}}),
    )
}

fn op_of(g: tta::graph::Graph, key: &str) -> String {
    let mut g = g;
    g.regions.get_mut("r").unwrap().impl_key = key.into();
    let o = common::run(g, impls(&[(key, "add_relu")]), &HashMap::new());
    o.report[0].op.clone().expect("outlined")
}

#[test]
fn op_names_are_deterministic_and_sensitive_to_what_matters() {
    let a = op_of(region_graph(&["s0", "8"]), "k");
    assert_eq!(a, op_of(region_graph(&["s0", "8"]), "k"), "same input, same name");
    assert!(a.starts_with("add_relu_") && a.len() == "add_relu_".len() + 12, "{a}");
    assert_ne!(a, op_of(region_graph(&["s0", "16"]), "k"), "shape matters");
    assert_ne!(a, op_of(region_graph(&["s0", "8"]), "k2"), "impl matters");
    // The body matters too: same boundary, different op inside.
    let mut g = region_graph(&["s0", "8"]);
    g.nodes[3].target = "aten.sigmoid.default".into();
    assert_ne!(a, op_of(g, "k"));
}

#[test]
fn reader_between_members_is_moved_after_the_new_node() {
    // add (r) ; neg reads add (outside) ; mul (r) reads add and z ; z placed after neg
    let g = graph_of(
        json!([
            ph("x", &["4"]),
            ph("y", &["4"]),
            call("add", "aten.add.Tensor", json!([{"ref": "x"}, {"ref": "y"}]), &["4"], Some("r")),
            call("neg", "aten.neg.default", json!([{"ref": "add"}]), &["4"], None),
            call("z", "aten.cos.default", json!([{"ref": "y"}]), &["4"], None),
            call("mul", "aten.mul.Tensor", json!([{"ref": "add"}, {"ref": "z"}]), &["4"], Some("r")),
            out("o", &["neg", "mul"]),
        ]),
        json!({"r": {"impl": "k"}}),
    );
    let o = common::run(g, impls(&[("k", "p")]), &HashMap::new());
    assert_eq!(o.report[0].status, Status::Outlined);
    verify(&o.graph).expect("rewritten graph stays topologically ordered");
    let names: Vec<&str> = o.graph.nodes.iter().map(|n| n.name.as_str()).collect();
    let pos = |n: &str| names.iter().position(|x| *x == n).unwrap();
    assert!(pos("z") < pos("tta_p") && pos("tta_p") < pos("tta_p_0") && pos("tta_p_0") < pos("neg"), "{names:?}");
    assert!(!o.moves.is_empty(), "Python must be told to move nodes");
}

#[test]
fn meta_outputs_are_compared_up_to_expression_form() {
    let analysis = || pass::analyze(region_graph(&["2*s0", "8"]), impls(&[("k", "p")]), &Default::default()).unwrap();
    let meta = |shape: &str, dtype: &str| {
        HashMap::from([(
            "r".to_string(),
            MetaResult::Ok(vec![MetaOut {
                dtype: dtype.into(),
                shape: vec![tta::graph::Dim::Sym(shape.into()), tta::graph::Dim::Const(8)],
            }]),
        )])
    };
    let ok = analysis().outline(&meta("s0*2", "float32")).unwrap();
    assert_eq!(ok.report[0].status, Status::Outlined);
    let bad = analysis().outline(&meta("s0 + 2", "float32")).unwrap();
    assert!(bad.report[0].reason.as_deref().unwrap().contains("has shape [s0 + 2, 8]"));
    let bad = analysis().outline(&meta("2*s0", "float16")).unwrap();
    assert!(bad.report[0].reason.as_deref().unwrap().contains("dtype float16"));
    assert!(analysis().outline(&HashMap::from([("nope".to_string(), MetaResult::Error("x".into()))])).is_err());
}

#[test]
fn symint_inputs_become_symint_ports() {
    let g = graph_of(
        json!([
            ph("x", &["s0", "4"]),
            {"name": "n", "op": "call_function", "target": "aten.sym_size.int", "args": [{"ref": "x"}, 0], "val": {"sym": "s0"}},
            call("v", "aten.view.default", json!([{"ref": "x"}, [{"ref": "n"}, 4]]), &["s0", "4"], Some("r")),
            call("e", "aten.exp.default", json!([{"ref": "v"}]), &["s0", "4"], Some("r")),
            out("o", &["e"]),
        ]),
        json!({"r": {"impl": "k"}}),
    );
    let o = common::run(g, impls(&[("k", "p")]), &HashMap::new());
    let r = &o.report[0];
    assert_eq!(r.status, Status::Outlined);
    // `n` is dim 0 of the region's own input: derived from its shape, never an input.
    assert_eq!(r.inputs.len(), 1, "{:?}", r.inputs);
    let d = &o.edits[0].derived;
    assert_eq!((d.len(), d[0].node.as_str(), d[0].input, d[0].dim), (1, "n", 0, 0));

    // A size that is no dim of a region input stays an integer input.
    let g = graph_of(
        json!([
            ph("x", &["s0", "4"]),
            ph("y", &["s1"]),
            {"name": "n", "op": "call_function", "target": "aten.sym_size.int", "args": [{"ref": "y"}, 0], "val": {"sym": "s1"}},
            call("v", "aten.view.default", json!([{"ref": "x"}, [-1, {"ref": "n"}]]), &["s0*4/s1", "s1"], Some("r")),
            out("o", &["v"]),
        ]),
        json!({"r": {"impl": "k"}}),
    );
    let o = common::run(g, impls(&[("k", "p")]), &HashMap::new());
    let r = &o.report[0];
    assert_eq!(r.status, Status::Outlined, "{:?}", r.reason);
    assert!(matches!(r.inputs[1].kind, tta::regions::PortKind::SymInt { ref expr } if expr == "s1"));
}

#[test]
fn dead_and_empty_regions_are_refused() {
    let g = graph_of(
        json!([
            ph("x", &["4"]),
            call("a", "aten.neg.default", json!([{"ref": "x"}]), &["4"], Some("dead")),
            call("b", "aten.exp.default", json!([{"ref": "x"}]), &["4"], None),
            out("o", &["b"]),
        ]),
        json!({"dead": {"impl": "k"}, "empty": {"impl": "k"}}),
    );
    let o = common::run(g, impls(&[("k", "p")]), &HashMap::new());
    let why: HashMap<&str, &str> = o.report.iter().map(|r| (r.id.as_str(), r.reason.as_deref().unwrap())).collect();
    assert!(why["dead"].contains("nothing it computes is used outside"), "{why:?}");
    assert!(why["empty"].contains("no operations"), "{why:?}");
}

#[test]
fn rewritten_graph_round_trips_through_json() {
    let o = common::run(region_graph(&["s0", "8"]), impls(&[("k", "p")]), &HashMap::new());
    let text = tta::graph::to_json(&o.graph);
    let back = tta::graph::from_json(&text).unwrap();
    o.check_matches(&back).unwrap();
    let mut other = back.clone();
    other.nodes[2].target = "tta.other.default".into();
    let e = o.check_matches(&other).unwrap_err();
    assert!(e.message.contains("node #2 differs"), "{e}");
}

#[test]
fn mutually_dependent_regions_are_refused_not_asserted() {
    // A = {a1, a2}, B = {b1, b2}; a2 reads b1 and b2 reads a1: each is convex, together a cycle.
    let relu = |name: &str, arg: &str, region: &str| {
        call(name, "aten.relu.default", json!([{"ref": arg}]), &["4"], Some(region))
    };
    let add = |name: &str, x: &str, y: &str, region: &str| {
        call(name, "aten.add.Tensor", json!([{"ref": x}, {"ref": y}]), &["4"], Some(region))
    };
    let g = graph_of(
        json!([
            ph("x", &["4"]),
            relu("a1", "x", "A"),
            relu("b1", "x", "B"),
            add("a2", "a1", "b1", "A"),
            add("b2", "b1", "a1", "B"),
            out("o", &["a2", "b2"]),
        ]),
        json!({"A": {"impl": "k"}, "B": {"impl": "k"}}),
    );
    let o = common::run(g, impls(&[("k", "p")]), &HashMap::new());
    assert!(o.edits.is_empty());
    for r in &o.report {
        assert_eq!(r.status, Status::Refused, "{r}");
        let why = r.reason.as_deref().unwrap();
        assert!(why.contains("depend on each other"), "{why}");
        let other = if r.id == "A" { "region B" } else { "region A" };
        assert!(why.contains(other), "{why}");
    }
    verify(&o.graph).unwrap();
}

#[test]
fn nan_and_infinite_literals_survive_the_rewrite_check() {
    let g = graph_of(
        json!([
            ph("x", &["4"]),
            call("a", "aten.add.Tensor", json!([{"ref": "x"}, {"float": "nan"}]), &["4"], Some("r")),
            call("b", "aten.clamp.default", json!([{"ref": "a"}, {"float": "-inf"}, {"float": "inf"}]), &["4"], None),
            call("c", "aten.mul.Tensor", json!([{"ref": "b"}, {"float": "nan"}]), &["4"], None),
            out("o", &["c"]),
        ]),
        json!({"r": {"impl": "k"}}),
    );
    let o = common::run(g, impls(&[("k", "p")]), &HashMap::new());
    assert_eq!(o.edits.len(), 1);
    // What Python sends back for check="full": the same graph, re-serialized.
    let back = tta::graph::from_json(&tta::graph::to_json(&o.graph)).unwrap();
    o.check_matches(&back).unwrap();
    let text = tta::graph::to_json(&o.graph);
    assert!(text.contains(r#"{"float":"nan"}"#) && text.contains(r#"{"float":"-inf"}"#), "{text}");
}

#[test]
fn a_graph_given_as_node_texts_is_written_back_reusing_the_texts_of_unchanged_nodes() {
    // Texts as another writer might lay them out (spaces, a member serde would omit): the nodes
    // the pass leaves alone are written as given; the region's reader, rewired to the new node,
    // and the new node are written anew; the whole is the rewritten graph.
    let nodes = [
        ph("x", &["4"]),
        call("a", "aten.relu.default", json!([{"ref": "x"}]), &["4"], Some("r:0")),
        call("b", "aten.neg.default", json!([{"ref": "a"}]), &["4"], Some("r:0")),
        call("c", "aten.exp.default", json!([{"ref": "b"}]), &["4"], None),
        call("d", "aten.sin.default", json!([{"ref": "x"}]), &["4"], None),
        out("o", &["c", "d"]),
    ];
    let texts: Vec<String> = nodes
        .iter()
        .map(|n| {
            let text = serde_json::to_string_pretty(n).unwrap();
            format!("{}, \"kwargs\": {{}} }}", text.trim_end().strip_suffix('}').unwrap())
        })
        .collect();
    let header =
        json!({"format": "tta-graph", "version": 1, "nodes": [], "regions": {"r:0": {"impl": "k"}}}).to_string();
    let outcome = pass::analyze_parts(&header, &texts, impls(&[("k", "k_op")]), &Default::default())
        .unwrap()
        .outline(&HashMap::new())
        .unwrap();
    assert_eq!(outcome.report[0].status, Status::Outlined, "{:?}", outcome.report);
    let text = outcome.graph_json_reusing(&texts);
    let parsed = tta::graph::from_json(&text).unwrap();
    assert_eq!(parsed, outcome.graph);
    for (name, kept) in [("x", true), ("d", true), ("o", true), ("c", false)] {
        let given = &texts[nodes.iter().position(|n| n["name"] == name).unwrap()];
        assert_eq!(text.contains(given.as_str()), kept, "node {name} in {text}");
    }
}
