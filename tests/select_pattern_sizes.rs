//! Patterns across sizes and dtypes: sizes a pattern computes from its inputs' dims bind to the
//! target's literals or SymInts; alternative forms (one per dtype) count as one pattern; a
//! pattern that occurs nowhere names its closest partial match.

mod sel;

use sel::*;
use serde_json::{json, Value};

fn node(name: &str, target: &str, args: Value, val: Value) -> Value {
    json!({"name": name, "op": "call_function", "target": target, "args": refs(args), "val": val, "source": format!("model.py:{}", 10 + name.len())})
}

fn input(name: &str, shape: Value) -> Value {
    json!({"name": name, "op": "placeholder", "target": name, "val": {"dtype": "float32", "shape": shape}})
}

fn t(shape: Value) -> Value {
    json!({"dtype": "float32", "shape": shape})
}

/// relu(x.view(x.shape[0] * x.shape[1], 8)), traced with symbolic dims p0, p1.
fn flatten_relu() -> Value {
    let nodes = vec![
        input("x", json!(["p0", "p1", 8])),
        node("d0", "aten.sym_size.int", json!(["@x", 0]), json!({"sym": "p0"})),
        node("d1", "aten.sym_size.int", json!(["@x", 1]), json!({"sym": "p1"})),
        node("n", "_operator.mul", json!(["@d0", "@d1"]), json!({"sym": "p0*p1"})),
        node("v", "aten.view.default", json!(["@x", ["@n", 8]]), t(json!(["p0*p1", 8]))),
        node("r", "aten.relu.default", json!(["@v"]), t(json!(["p0*p1", 8]))),
        output(&["r"]),
    ];
    json!({"name": "flat", "impl": "flat@1", "graph": doc(nodes)})
}

#[test]
fn sizes_bind_to_symbols_and_literals_alike() {
    let g = graph(vec![
        input("a", json!(["s7", "s9", 8])),
        input("b", json!([2, 3, 8])),
        node("z0", "aten.sym_size.int", json!(["@a", 0]), json!({"sym": "s7"})),
        node("z1", "aten.sym_size.int", json!(["@a", 1]), json!({"sym": "s9"})),
        node("m", "_operator.mul", json!(["@z1", "@z0"]), json!({"sym": "s7*s9"})),
        node("va", "aten.view.default", json!(["@a", ["@m", 8]]), t(json!(["s7*s9", 8]))),
        node("ra", "aten.relu.default", json!(["@va"]), t(json!(["s7*s9", 8]))),
        node("vb", "aten.view.default", json!(["@b", [6, 8]]), t(json!([6, 8]))),
        node("rb", "aten.relu.default", json!(["@vb"]), t(json!([6, 8]))),
        // 5 is no product of b's dims: not an occurrence.
        node("vc", "aten.view.default", json!(["@b", [5, 8]]), t(json!([5, 8]))),
        node("rc", "aten.relu.default", json!(["@vc"]), t(json!([5, 8]))),
        output(&["ra", "rb", "rc"]),
    ]);
    let out = run(g, impls(&["flat@1"]), json!({"patterns": [flatten_relu()]}));
    let ok = outlined(&out);
    assert_eq!(
        ok.iter().map(|r| r.nodes.clone()).collect::<Vec<_>>(),
        [vec!["va", "ra"], vec!["vb", "rb"]],
        "{}",
        report_text(&out)
    );
    // The pattern's input first; the size the target computed outside follows it.
    assert_eq!(names(&ok[0].inputs), ["a", "m"]);
    assert_eq!(names(&ok[1].inputs), ["b"]);
}

#[test]
fn a_pattern_that_occurs_nowhere_names_its_closest_match() {
    let g = graph(vec![
        input("b", json!([2, 3, 8])),
        node("vc", "aten.view.default", json!(["@b", [5, 8]]), t(json!([5, 8]))),
        node("rc", "aten.relu.default", json!(["@vc"]), t(json!([5, 8]))),
        output(&["rc"]),
    ]);
    let out = run(g, impls(&["flat@1"]), json!({"patterns": [flatten_relu()]}));
    assert!(out.report.is_empty());
    assert_eq!(out.unmatched.len(), 1);
    assert_eq!(
        out.unmatched[0].closest,
        "closest match: all 2 pattern ops line up from `rc` (aten.relu.default, model.py:12), but the pattern's `r` \
         (aten.relu.default) against `rc` (aten.relu.default, model.py:12): the pattern's size `p0*p1` is `6` here, but the graph has `5`"
    );
    assert!(out.report_text().ends_with("pattern flat occurs nowhere; closest match: all 2 pattern ops line up from `rc` (aten.relu.default, model.py:12), but the pattern's `r` (aten.relu.default) against `rc` (aten.relu.default, model.py:12): the pattern's size `p0*p1` is `6` here, but the graph has `5`\n"));

    // No node has the output's target at all.
    let g = graph(vec![
        input("b", json!([2, 3, 8])),
        node("e", "aten.exp.default", json!(["@b"]), t(json!([2, 3, 8]))),
        output(&["e"]),
    ]);
    let out = run(g, impls(&["flat@1"]), json!({"patterns": [flatten_relu()]}));
    assert_eq!(out.unmatched[0].closest, "no node in the graph is `aten.relu.default` (the pattern's output `r`)");
}

#[test]
fn any_form_of_a_pattern_matches_and_forms_must_agree() {
    // Form 0: exp(x); form 1: exp(x.to(float32)), as a bfloat16 trace would give. The larger
    // form is tried first, so exp(k) is not taken by form 0 with x bound to the conversion.
    let form0 = doc(vec![ph("x"), call("e", "aten.exp.default", json!(["@x"])), output(&["e"])]);
    let form1 = doc(vec![
        ph("x"),
        json!({"name": "c", "op": "call_function", "target": "aten._to_copy.default", "args": [{"ref": "x"}], "kwargs": {"dtype": {"dtype": "float32"}}, "val": tensor(&[4, 8])}),
        call("e", "aten.exp.default", json!(["@c"])),
        output(&["e"]),
    ]);
    let g = graph(vec![
        ph("a"),
        json!({"name": "k", "op": "call_function", "target": "aten._to_copy.default", "args": [{"ref": "a"}], "kwargs": {"dtype": {"dtype": "float32"}}, "val": tensor(&[4, 8])}),
        call("e1", "aten.exp.default", json!(["@k"])),
        call("e2", "aten.exp.default", json!(["@a"])),
        output(&["e1", "e2"]),
    ]);
    let p = json!({"name": "exp", "impl": "exp@1", "graph": form0.clone(), "forms": [form1]});
    let out = run(g.clone(), impls(&["exp@1"]), json!({"patterns": [p]}));
    let ok = outlined(&out);
    assert_eq!(
        ok.iter().map(|r| r.nodes.clone()).collect::<Vec<_>>(),
        [vec!["k", "e1"], vec!["e2"]],
        "{}",
        report_text(&out)
    );
    assert_eq!(ok.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), ["pattern:exp:0", "pattern:exp:1"]);

    let two_inputs = doc(vec![ph("x"), ph("y"), call("e", "aten.add.Tensor", json!(["@x", "@y"])), output(&["e"])]);
    let p = json!({"name": "exp", "impl": "exp@1", "graph": form0, "forms": [two_inputs]});
    let err =
        tta::pass::analyze(g, impls(&["exp@1"]), &selectors(json!({"patterns": [p]}))).err().expect("forms disagree");
    assert_eq!(
        err.message,
        "pattern `exp`: its forms disagree: one takes 1 input(s) and returns 1, another takes 2 and returns 1"
    );
}
