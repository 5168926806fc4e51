//! Region boundaries that export and decomposition must not change: weights after activations,
//! inputs pinned by the user, and export's untagged assertions absorbed.

mod common;

use common::{graph_of, impls, t};
use serde_json::json;
use std::collections::HashMap;
use tta::graph::verify::verify;
use tta::lowering::Status;

fn ph(name: &str, shape: &[&str], weight: bool) -> serde_json::Value {
    let mut n = json!({"name": name, "op": "placeholder", "target": name, "val": t(shape)});
    if weight {
        n["weight"] = json!(true);
    }
    n
}

fn call(
    name: &str,
    target: &str,
    args: serde_json::Value,
    val: serde_json::Value,
    region: Option<&str>,
) -> serde_json::Value {
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
    assert!(
        r.reason.as_deref().unwrap().contains("reads `b`, which lower_as(inputs=...) does not list"),
        "{:?}",
        r.reason
    );
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

fn sym(e: &str) -> serde_json::Value {
    json!({"sym": e})
}

fn sym_bool() -> serde_json::Value {
    json!({"opaque": "SymBool"})
}

/// `assert_scalar(name, cond)`, with the source line export gives the deferred check.
fn check(name: &str, cond: &str) -> serde_json::Value {
    let mut n = call(
        name,
        "aten._assert_scalar.default",
        json!([{"ref": cond}, "Runtime assertion failed"]),
        json!(null),
        None,
    );
    n["source"] = json!("model.py:7");
    n
}

fn node_names(g: &tta::graph::Graph) -> Vec<&str> {
    g.nodes.iter().map(|n| n.name.as_str()).collect()
}

/// `x -> nonzero -> *2` as a region, with export's checks of its count (`sym_size -> ge/le ->
/// _assert_scalar`), a check relating the count to the region's input `x` through a `sym_size`
/// only that check reads, and a check of `y` alone.
#[test]
fn assertion_chains_reading_a_member_are_absorbed_whole() {
    let g = graph_of(
        json!([
            ph("x", &["s0"], false),
            ph("y", &["s1"], false),
            call("nz", "aten.nonzero.default", json!([{"ref": "x"}]), t(&["u0", "1"]), Some("r")),
            call("count", "aten.sym_size.int", json!([{"ref": "nz"}, 0]), sym("u0"), None),
            call("ge", "_operator.ge", json!([{"ref": "count"}, 0]), sym_bool(), None),
            check("chk_ge", "ge"),
            call("size_x", "aten.sym_size.int", json!([{"ref": "x"}, 0]), sym("s0"), None),
            call("le", "_operator.le", json!([{"ref": "count"}, {"ref": "size_x"}]), sym_bool(), None),
            check("chk_le", "le"),
            call("size_y", "aten.sym_size.int", json!([{"ref": "y"}, 0]), sym("s1"), None),
            call("le_y", "_operator.le", json!([{"ref": "size_y"}, 64]), sym_bool(), None),
            check("chk_y", "le_y"),
            call("m", "aten.mul.Tensor", json!([{"ref": "nz"}, 2]), t(&["u0", "1"]), Some("r")),
            out(&["m", "y"]),
        ]),
        json!({"r": {"impl": "k"}}),
    );
    let o = common::run(g, impls(&[("k", "p")]), &HashMap::new());
    let r = &o.report[0];
    assert_eq!(r.status, Status::Outlined, "{:?}", r.reason);
    assert_eq!(r.absorbed, ["count", "ge", "chk_ge", "size_x", "le", "chk_le"]);
    assert_eq!(names(r), ["x"]);
    assert_eq!(r.outputs.len(), 1);
    // The check of `y` reads nothing of the region: it stays, whole.
    let kept = node_names(&o.graph);
    for n in ["size_y", "le_y", "chk_y"] {
        assert!(kept.contains(&n), "{n} lost: {kept:?}");
    }
    for n in &r.absorbed {
        assert!(!kept.contains(&n.as_str()), "{n} kept: {kept:?}");
    }
    verify(&o.graph).unwrap();
}

/// The region computes an integer (`item`); export checks it against `y`'s size, which the
/// region does not read.
fn item_checked_against(shared: bool) -> tta::pass::Outcome {
    let mut nodes = vec![
        ph("x", &["4"], false),
        ph("y", &["s1"], false),
        call("s", "aten.sum.default", json!([{"ref": "x"}]), t(&[]), Some("r")),
        call("n", "aten.item.default", json!([{"ref": "s"}]), sym("u0"), Some("r")),
        call("m", "aten.mul.Tensor", json!([{"ref": "x"}, {"ref": "n"}]), t(&["4"]), Some("r")),
        call("size_y", "aten.sym_size.int", json!([{"ref": "y"}, 0]), sym("s1"), None),
        call("le", "_operator.le", json!([{"ref": "n"}, {"ref": "size_y"}]), sym_bool(), None),
        check("chk", "le"),
    ];
    if shared {
        // A check of `y` alone shares the size with it.
        nodes.push(call("le_y", "_operator.le", json!([{"ref": "size_y"}, 64]), sym_bool(), None));
        nodes.push(check("chk_y", "le_y"));
    }
    nodes.push(out(&["m"]));
    common::run(graph_of(json!(nodes), json!({"r": {"impl": "k"}})), impls(&[("k", "p")]), &HashMap::new())
}

#[test]
fn a_check_of_an_inside_integer_against_an_outside_value_refuses_the_region() {
    for shared in [false, true] {
        let o = item_checked_against(shared);
        let r = &o.report[0];
        assert_eq!(r.status, Status::Refused);
        let why = r.reason.as_deref().unwrap();
        assert!(
            why.contains("`n` is read by the runtime check `chk` (aten._assert_scalar.default, model.py:7)"),
            "{why}"
        );
        // Shared with the check of `y`, the size stays outside; else it would come along.
        let outside = if shared { "`le` also reads `size_y`" } else { "`size_y` also reads `y`" };
        assert!(why.contains(&format!("{outside} from outside the region")), "{why}");
        // Refused: the graph, every check with it, is unchanged.
        assert!(o.edits.is_empty());
        assert!(r.absorbed.is_empty());
        for n in ["size_y", "le", "chk"] {
            assert!(node_names(&o.graph).contains(&n));
        }
    }
}

#[test]
fn a_check_of_an_inside_tensor_against_an_outside_value_stays_outside() {
    // `sym_size(a) <= sym_size(y)`: the tensor `a` becomes an output, the check reads it there.
    let g = graph_of(
        json!([
            ph("x", &["s0"], false),
            ph("y", &["s1"], false),
            call("a", "aten.nonzero.default", json!([{"ref": "x"}]), t(&["u0", "1"]), Some("r")),
            call("b", "aten.mul.Tensor", json!([{"ref": "a"}, 2]), t(&["u0", "1"]), Some("r")),
            call("count", "aten.sym_size.int", json!([{"ref": "a"}, 0]), sym("u0"), None),
            call("size_y", "aten.sym_size.int", json!([{"ref": "y"}, 0]), sym("s1"), None),
            call("le", "_operator.le", json!([{"ref": "count"}, {"ref": "size_y"}]), sym_bool(), None),
            check("chk", "le"),
            out(&["b"]),
        ]),
        json!({"r": {"impl": "k"}}),
    );
    let o = common::run(g, impls(&[("k", "p")]), &HashMap::new());
    let r = &o.report[0];
    assert_eq!(r.status, Status::Outlined, "{:?}", r.reason);
    assert!(r.absorbed.is_empty());
    assert_eq!(r.outputs.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(), ["a", "b"]);
    for n in ["count", "size_y", "le", "chk"] {
        assert!(node_names(&o.graph).contains(&n));
    }
    verify(&o.graph).unwrap();
}

/// `h = x + r` and `y = neg(h)`, both used after the region, and `t`, used only inside it.
fn two_outputs(decl: serde_json::Value) -> tta::lowering::RegionReport {
    let g = graph_of(
        json!([
            ph("x", &["4"], false),
            ph("r", &["4"], false),
            call("h", "aten.add.Tensor", json!([{"ref": "x"}, {"ref": "r"}]), t(&["4"]), Some("r0")),
            call("t", "aten.exp.default", json!([{"ref": "h"}]), t(&["4"]), Some("r0")),
            call("y", "aten.neg.default", json!([{"ref": "t"}]), t(&["4"]), Some("r0")),
            out(&["h", "y"]),
        ]),
        json!({"r0": decl}),
    );
    common::run(g, impls(&[("k", "p")]), &HashMap::new()).report.remove(0)
}

fn output_names(r: &tta::lowering::RegionReport) -> Vec<&str> {
    r.outputs.iter().map(|p| p.name.as_str()).collect()
}

#[test]
fn outputs_follow_node_order_unless_the_user_chose() {
    assert_eq!(output_names(&two_outputs(json!({"impl": "k"}))), ["h", "y"]);
    let r = two_outputs(json!({"impl": "k", "outputs": ["y", "h"]}));
    assert_eq!((&r.status, output_names(&r)), (&Status::Outlined, vec!["y", "h"]), "{:?}", r.reason);
    // A decorated function's return order; returned values that are no output are passed over.
    let r = two_outputs(json!({"impl": "k", "returns": ["x", "y", "t", "h"]}));
    assert_eq!((&r.status, output_names(&r)), (&Status::Outlined, vec!["y", "h"]), "{:?}", r.reason);
    // An output the function did not return follows those it did.
    let r = two_outputs(json!({"impl": "k", "returns": ["y"]}));
    assert_eq!(output_names(&r), ["y", "h"]);
}

#[test]
fn chosen_outputs_must_name_every_output_and_nothing_else() {
    let reason = |decl| two_outputs(decl).reason.unwrap_or_default();
    let why = reason(json!({"impl": "k", "outputs": ["y"]}));
    assert!(why.contains("`h` is used after the region, but lower_as(outputs=...) does not list it"), "{why}");
    let why = reason(json!({"impl": "k", "outputs": ["y", "h", "t"]}));
    assert!(why.contains("lists `t` (position 2), which the region computes but nothing after it uses"), "{why}");
    let why = reason(json!({"impl": "k", "outputs": ["x", "y", "h"]}));
    assert!(why.contains("lists `x` (position 0), which the region does not compute"), "{why}");
    let why = reason(json!({"impl": "k", "outputs": ["y", "h", "y"]}));
    assert!(why.contains("lists `y` twice"), "{why}");
}
