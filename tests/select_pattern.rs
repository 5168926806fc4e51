//! The pattern selector (`regions::pattern`): matching rules (targets, literals, wildcards,
//! commutativity), greedy non-overlap, validity of occurrences, port order, and errors.

mod sel;

use sel::*;
use serde_json::{json, Value};

fn pattern(name: &str, imp: &str, nodes: Vec<Value>) -> Value {
    json!({"name": name, "impl": imp, "graph": doc(nodes)})
}

fn patterns(ps: Vec<Value>) -> Value {
    json!({"patterns": ps})
}

/// relu(x + y)
fn add_relu() -> Value {
    pattern(
        "add_relu",
        "ar@1",
        vec![
            ph("x"),
            ph("y"),
            call("add", "aten.add.Tensor", json!(["@x", "@y"])),
            call("relu", "aten.relu.default", json!(["@add"])),
            output(&["relu"]),
        ],
    )
}

#[test]
fn finds_every_occurrence_in_either_operand_order() {
    let g = graph(vec![
        ph("a"),
        ph("b"),
        call("s0", "aten.add.Tensor", json!(["@a", "@b"])),
        call("r0", "aten.relu.default", json!(["@s0"])),
        call("s1", "aten.add.Tensor", json!(["@b", "@r0"])),
        call("r1", "aten.relu.default", json!(["@s1"])),
        call("m", "aten.mul.Tensor", json!(["@r1", 2])),
        call("s2", "aten.add.Tensor", json!(["@m", "@a"])),
        call("e", "aten.exp.default", json!(["@s2"])),
        output(&["e"]),
    ]);
    let out = run(g, impls(&["ar@1"]), patterns(vec![add_relu()]));
    let ok = outlined(&out);
    assert_eq!(ok.len(), 2, "{}", report_text(&out));
    assert_eq!((ok[0].id.as_str(), ok[1].id.as_str()), ("pattern:add_relu:0", "pattern:add_relu:1"));
    assert_eq!(ok[0].nodes, ["s0", "r0"]);
    assert_eq!(ok[1].nodes, ["s1", "r1"]);
    assert_eq!(names(&ok[1].inputs), ["b", "r0"]);
    assert_eq!(ok[0].origin, tta::regions::Origin::Pattern { pattern: "add_relu".into() });
    assert_eq!(ok[0].op, ok[1].op);
    tta::graph::verify::verify(&out.graph).unwrap();
    insta::assert_snapshot!("pattern_add_relu_chain", format!("{}\n{}", report_text(&out), out.graph));
}

#[test]
fn commutative_swap_is_tried_and_ports_follow_the_pattern_order() {
    // pattern(x, y) = relu(y + x): the pattern reads y first, the target's first-use order
    // differs from the pattern's input order, and the region follows the pattern.
    let p = pattern(
        "rev",
        "rev@1",
        vec![
            ph("x"),
            ph("y"),
            call("add", "aten.add.Tensor", json!(["@y", "@x"])),
            call("relu", "aten.relu.default", json!(["@add"])),
            output(&["relu"]),
        ],
    );
    let g = graph(vec![
        ph("p"),
        ph("q"),
        call("s", "aten.add.Tensor", json!(["@p", "@q"])),
        call("r", "aten.relu.default", json!(["@s"])),
        output(&["r"]),
    ]);
    let out = run(g, impls(&["rev@1"]), patterns(vec![p]));
    assert_eq!(names(&outlined(&out)[0].inputs), ["q", "p"], "pattern input x binds q");

    // sub is not commutative: relu(y - x) does not match relu(q - p) with x=p.
    let p = pattern(
        "sub",
        "sub@1",
        vec![
            ph("x"),
            ph("y"),
            call("d", "aten.sub.Tensor", json!(["@x", 1.0])),
            call("relu", "aten.relu.default", json!(["@d"])),
            output(&["relu"]),
        ],
    );
    let g = graph(vec![
        ph("p"),
        call("d", "aten.sub.Tensor", json!([1.0, "@p"])),
        call("r", "aten.relu.default", json!(["@d"])),
        output(&["r"]),
    ]);
    assert!(run(g, impls(&["sub@1"]), patterns(vec![p])).report.is_empty());
}

#[test]
fn a_valid_embedding_wins_over_an_invalid_one_at_the_same_anchor() {
    // pattern(x, y) = neg(x) * y. Target: neg(a) * neg(b), where neg(a) is also read elsewhere:
    // the first embedding (neg(x) = neg(a)) leaks neg(a); the swapped one is valid.
    let p = pattern(
        "negmul",
        "nm@1",
        vec![
            ph("x"),
            ph("y"),
            call("n", "aten.neg.default", json!(["@x"])),
            call("m", "aten.mul.Tensor", json!(["@n", "@y"])),
            output(&["m"]),
        ],
    );
    let g = graph(vec![
        ph("a"),
        ph("b"),
        call("na", "aten.neg.default", json!(["@a"])),
        call("nb", "aten.neg.default", json!(["@b"])),
        call("m", "aten.mul.Tensor", json!(["@na", "@nb"])),
        call("z", "aten.add.Tensor", json!(["@m", "@na"])),
        output(&["z"]),
    ]);
    let out = run(g, impls(&["nm@1"]), patterns(vec![p]));
    let ok = outlined(&out);
    assert_eq!(ok.len(), 1, "{}", report_text(&out));
    assert_eq!(ok[0].nodes, ["nb", "m"]);
    assert_eq!(names(&ok[0].inputs), ["b", "na"]);
}

#[test]
fn literals_must_match_exactly() {
    let p = |lit: Value| {
        pattern(
            "p",
            "p@1",
            vec![
                ph("x"),
                call("m", "aten.mean.dim", json!(["@x", [-1], true])),
                call("a", "aten.add.Tensor", json!(["@m", lit])),
                output(&["a"]),
            ],
        )
    };
    let g = |keep: bool, lit: Value| {
        graph(vec![
            ph("x"),
            call("m", "aten.mean.dim", json!(["@x", [-1], keep])),
            call("a", "aten.add.Tensor", json!(["@m", lit])),
            output(&["a"]),
        ])
    };
    let n = |p: Value, g| outlined(&run(g, impls(&["p@1"]), patterns(vec![p]))).len();
    assert_eq!(n(p(json!(1e-6)), g(true, json!(1e-6))), 1);
    assert_eq!(n(p(json!(1e-6)), g(true, json!(1e-5))), 0, "float literal differs");
    assert_eq!(n(p(json!(1e-6)), g(false, json!(1e-6))), 0, "keepdim differs");
    assert_eq!(n(p(json!(1.0)), g(true, json!(1))), 0, "an int is not a float");
    assert_eq!(n(p(json!({"float": "nan"})), g(true, json!({"float": "nan"}))), 1, "NaN equals NaN");
    // A literal never matches a reference: static-shape patterns miss symbolic sizes.
    let pv = pattern(
        "v",
        "p@1",
        vec![
            ph("x"),
            call("v", "aten.view.default", json!(["@x", [4, 8]])),
            call("r", "aten.relu.default", json!(["@v"])),
            output(&["r"]),
        ],
    );
    let mut size = call("s", "aten.sym_size.int", json!(["@x", 0]));
    size["val"] = json!({"sym": "s0"});
    let gv = graph(vec![
        ph("x"),
        size,
        call("v", "aten.view.default", json!(["@x", ["@s", 8]])),
        call("r", "aten.relu.default", json!(["@v"])),
        output(&["r"]),
    ]);
    assert!(run(gv, impls(&["p@1"]), patterns(vec![pv])).report.is_empty());
}

#[test]
fn wildcards_bind_consistently_and_injectively() {
    let square = pattern(
        "sq",
        "sq@1",
        vec![
            ph("x"),
            call("m", "aten.mul.Tensor", json!(["@x", "@x"])),
            call("e", "aten.exp.default", json!(["@m"])),
            output(&["e"]),
        ],
    );
    let prod = pattern(
        "pr",
        "pr@1",
        vec![
            ph("x"),
            ph("y"),
            call("m", "aten.mul.Tensor", json!(["@x", "@y"])),
            call("e", "aten.exp.default", json!(["@m"])),
            output(&["e"]),
        ],
    );
    let target = |a: &str, b: &str| {
        graph(vec![
            ph("a"),
            ph("b"),
            call("m", "aten.mul.Tensor", json!([format!("@{a}"), format!("@{b}")])),
            call("e", "aten.exp.default", json!(["@m"])),
            output(&["e"]),
        ])
    };
    let n = |p: &Value, g| outlined(&run(g, impls(&["sq@1", "pr@1"]), patterns(vec![p.clone()]))).len();
    assert_eq!(n(&square, target("a", "a")), 1);
    assert_eq!(n(&square, target("a", "b")), 0, "one input binds one producer");
    assert_eq!(n(&prod, target("a", "b")), 1);
    assert_eq!(n(&prod, target("a", "a")), 0, "two inputs bind two producers");
}

#[test]
fn occurrences_are_taken_greedily_in_anchor_order_without_overlap() {
    // pattern (x + y) + z on a chain of four adds: anchors s2 and s4 win; s3 would need s2.
    let p = pattern(
        "add3",
        "a3@1",
        vec![
            ph("x"),
            ph("y"),
            ph("z"),
            call("i", "aten.add.Tensor", json!(["@x", "@y"])),
            call("o", "aten.add.Tensor", json!(["@i", "@z"])),
            output(&["o"]),
        ],
    );
    let mut nodes = vec![ph("p0"), ph("p1"), ph("p2"), ph("p3"), ph("p4")];
    let mut prev = "p0".to_owned();
    for k in 1..=4 {
        nodes.push(call(&format!("s{k}"), "aten.add.Tensor", json!([format!("@{prev}"), format!("@p{k}")])));
        prev = format!("s{k}");
    }
    nodes.push(output(&["s4"]));
    let out = run(graph(nodes), impls(&["a3@1"]), patterns(vec![p]));
    let got: Vec<_> = outlined(&out).iter().map(|r| r.nodes.clone()).collect();
    assert_eq!(got, [vec!["s1", "s2"], vec!["s3", "s4"]]);
}

#[test]
fn an_occurrence_leaking_an_inner_value_is_refused_with_the_reason() {
    let g = graph(vec![
        ph("a"),
        ph("b"),
        call("s", "aten.add.Tensor", json!(["@a", "@b"])),
        call("r", "aten.relu.default", json!(["@s"])),
        call("n", "aten.neg.default", json!(["@s"])),
        call("t", "aten.add.Tensor", json!(["@r", "@n"])),
        call("r2", "aten.relu.default", json!(["@t"])),
        output(&["r2"]),
    ]);
    let out = run(g.clone(), impls(&["ar@1"]), patterns(vec![add_relu()]));
    let ok = outlined(&out);
    assert_eq!(ok.len(), 1);
    assert_eq!(ok[0].nodes, ["t", "r2"]);
    let no = refused(&out);
    assert_eq!(no.len(), 1);
    assert_eq!(no[0].nodes, ["s", "r"]);
    assert_eq!(
        no[0].reason.as_deref().unwrap(),
        "`s` (aten.add.Tensor, model.py:11) (pattern node `add`) is also read by `n` (aten.neg.default, model.py:11) outside the occurrence; only the pattern's outputs may be"
    );
}

#[test]
fn assertion_nodes_are_dropped_from_patterns_and_join_occurrences() {
    let p = pattern(
        "ar",
        "ar@1",
        vec![
            ph("x"),
            ph("y"),
            call("add", "aten.add.Tensor", json!(["@x", "@y"])),
            assertion("chk", "add"),
            call("relu", "aten.relu.default", json!(["@add"])),
            output(&["relu"]),
        ],
    );
    // The target checks the input (stays outside) and the inner sum (joins the region).
    let g = graph(vec![
        ph("a"),
        ph("b"),
        assertion("chk_in", "a"),
        call("s", "aten.add.Tensor", json!(["@a", "@b"])),
        assertion("chk_s", "s"),
        call("r", "aten.relu.default", json!(["@s"])),
        output(&["r"]),
    ]);
    let out = run(g, impls(&["ar@1"]), patterns(vec![p]));
    let ok = outlined(&out);
    assert_eq!(ok.len(), 1, "{}", report_text(&out));
    assert_eq!(ok[0].nodes, ["s", "chk_s", "r"]);
    assert!(out.graph.nodes.iter().any(|n| n.name == "chk_in"));
}

#[test]
fn multi_output_patterns_reach_siblings_forward_and_return_in_pattern_order() {
    let p = pattern(
        "sum_prod",
        "sp@1",
        vec![
            ph("x"),
            ph("y"),
            call("s", "aten.add.Tensor", json!(["@x", "@y"])),
            call("p", "aten.mul.Tensor", json!(["@x", "@y"])),
            output(&["s", "p"]),
        ],
    );
    // In the target the product comes first.
    let g = graph(vec![
        ph("a"),
        ph("b"),
        call("pp", "aten.mul.Tensor", json!(["@a", "@b"])),
        call("ss", "aten.add.Tensor", json!(["@a", "@b"])),
        call("u", "aten.sin.default", json!(["@ss"])),
        call("v", "aten.cos.default", json!(["@pp"])),
        call("w", "aten.add.Tensor", json!(["@u", "@v"])),
        output(&["w"]),
    ]);
    let out = run(g, impls(&["sp@1"]), patterns(vec![p]));
    let ok = outlined(&out);
    assert_eq!(ok.len(), 1, "{}", report_text(&out));
    assert_eq!(ok[0].nodes, ["pp", "ss"]);
    assert_eq!(names(&ok[0].outputs), ["ss", "pp"], "outputs in the pattern's order");
    assert_eq!(out.edits[0].outputs, ["ss", "pp"]);
}

#[test]
fn a_non_convex_occurrence_is_refused_by_validation() {
    // pattern (x, z) -> (neg(x), x * z); in the target z = exp(neg(a)) runs outside.
    let p = pattern(
        "nc",
        "nc@1",
        vec![
            ph("x"),
            ph("z"),
            call("n", "aten.neg.default", json!(["@x"])),
            call("m", "aten.mul.Tensor", json!(["@x", "@z"])),
            output(&["n", "m"]),
        ],
    );
    let g = graph(vec![
        ph("a"),
        call("n", "aten.neg.default", json!(["@a"])),
        call("e", "aten.exp.default", json!(["@n"])),
        call("m", "aten.mul.Tensor", json!(["@a", "@e"])),
        output(&["m"]),
    ]);
    let out = run(g, impls(&["nc@1"]), patterns(vec![p]));
    let no = refused(&out);
    assert_eq!(no.len(), 1, "{}", report_text(&out));
    assert!(no[0].reason.as_deref().unwrap().contains("not convex"), "{:?}", no[0].reason);
}

#[test]
fn malformed_patterns_are_input_errors_naming_the_pattern() {
    let g = graph(vec![ph("a"), call("r", "aten.relu.default", json!(["@a"])), output(&["r"])]);
    let err = |p: Value| tta::pass::analyze(g.clone(), impls(&["p@1"]), &selectors(patterns(vec![p]))).err().unwrap();

    let e = err(pattern(
        "two",
        "p@1",
        vec![
            ph("x"),
            ph("y"),
            call("r", "aten.relu.default", json!(["@x"])),
            call("n", "aten.neg.default", json!(["@y"])),
            output(&["r", "n"]),
        ],
    ));
    assert_eq!(e.kind, tta::ErrorKind::Input);
    assert!(
        e.message.starts_with("pattern `two`: it is not connected: `r` shares no value with the output `n`"),
        "{e}"
    );
    assert_eq!(e.node.as_deref(), Some("r"));

    let e =
        err(pattern("id", "p@1", vec![ph("x"), call("r", "aten.relu.default", json!(["@x"])), output(&["r", "x"])]));
    assert!(e.message.contains("it returns `x`, which is not computed by the pattern"), "{e}");

    let e = err(pattern(
        "ga",
        "p@1",
        vec![
            ph("x"),
            json!({"name": "c", "op": "get_attr", "target": "c"}),
            call("r", "aten.add.Tensor", json!(["@x", "@c"])),
            output(&["r"]),
        ],
    ));
    assert!(e.message.contains("`c` is a get_attr node"), "{e}");

    let e = err(pattern(
        "dead",
        "p@1",
        vec![
            ph("x"),
            call("d", "aten.neg.default", json!(["@x"])),
            call("r", "aten.relu.default", json!(["@x"])),
            output(&["r"]),
        ],
    ));
    assert!(e.message.contains("`d` is computed but neither used nor returned"), "{e}");

    let e = err(pattern("bad", "p@1", vec![ph("x"), call("r", "aten.relu.default", json!(["@nope"])), output(&["r"])]));
    assert!(e.message.contains("the pattern graph is invalid"), "{e}");

    // A name given again is labelled `#2` (this graph has no add+relu: both occur nowhere).
    let a =
        tta::pass::analyze(g.clone(), impls(&["ar@1"]), &selectors(patterns(vec![add_relu(), add_relu()]))).unwrap();
    assert_eq!(a.unmatched.iter().map(|u| u.pattern.as_str()).collect::<Vec<_>>(), ["add_relu", "add_relu#2"]);
}

/// RMSNorm as a user would write it, operands in the other order than the model's code.
fn rmsnorm_pattern() -> Value {
    let mut nodes = vec![ph("x"), ph("w")];
    nodes.push(call("pow", "aten.pow.Tensor_Scalar", json!(["@x", 2])));
    nodes.push(call("mean", "aten.mean.dim", json!(["@pow", [-1], true])));
    nodes.push(call("eps", "aten.add.Tensor", json!(["@mean", 1e-6])));
    nodes.push(call("rs", "aten.rsqrt.default", json!(["@eps"])));
    nodes.push(call("norm", "aten.mul.Tensor", json!(["@rs", "@x"])));
    nodes.push(call("scaled", "aten.mul.Tensor", json!(["@w", "@norm"])));
    nodes.push(output(&["scaled"]));
    pattern("rmsnorm", "rms@1", nodes)
}

#[test]
fn rmsnorm_pattern_finds_the_same_regions_as_the_module_selector() {
    let g = fixture_without_annotations("transformer_rmsnorm");
    let by_pattern = run(g.clone(), impls(&["rms@1"]), patterns(vec![rmsnorm_pattern()]));
    let by_module =
        run(g.clone(), impls(&["rms@1"]), json!({"modules": [{"type": "models.RMSNorm", "impl": "rms@1"}]}));
    let nodes = |o: &tta::pass::Outcome| outlined(o).iter().map(|r| r.nodes.clone()).collect::<Vec<_>>();
    assert_eq!(nodes(&by_pattern).len(), 2, "{}", report_text(&by_pattern));
    assert_eq!(nodes(&by_pattern), nodes(&by_module));
    for (a, b) in outlined(&by_pattern).iter().zip(outlined(&by_module)) {
        assert_eq!(a.inputs, b.inputs);
        assert_eq!(a.op, b.op, "same body, same signature, same impl: same plugin op");
    }
    assert_eq!(by_pattern.graph, by_module.graph);
    insta::assert_snapshot!("pattern_transformer_rmsnorm", report_text(&by_pattern));
}

#[test]
fn selectors_and_annotations_together_overlaps_refused() {
    // Module selector on norm1 and the RMSNorm pattern: the pattern's first occurrence
    // overlaps the module region (both refused), the second is outlined.
    let g = fixture_without_annotations("transformer_rmsnorm");
    let sel = json!({"modules": [{"path": "norm1", "impl": "rms@1"}], "patterns": [rmsnorm_pattern()]});
    let out = run(g, impls(&["rms@1"]), sel);
    let ok: Vec<_> = outlined(&out).iter().map(|r| r.id.clone()).collect();
    let no: Vec<_> = refused(&out).iter().map(|r| r.id.clone()).collect();
    assert_eq!(ok, ["pattern:rmsnorm:1"]);
    assert_eq!(no, ["module:norm1", "pattern:rmsnorm:0"]);

    // With the fixture's own lower_as annotations kept, every pattern occurrence overlaps one.
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/transformer_rmsnorm.json");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let g = tta::graph::from_json(&doc["graph"].to_string()).unwrap();
    let mut imp: tta::pass::Impls = serde_json::from_value(doc["impls"].clone()).unwrap();
    imp.extend(impls(&["rms@1"]));
    let out = run(g, imp, patterns(vec![rmsnorm_pattern()]));
    let no = refused(&out);
    assert_eq!(no.len(), 4, "two annotations and two occurrences: {}", report_text(&out));
    assert!(no.iter().all(|r| r.reason.as_deref().unwrap().contains("may not nest or overlap")));
}

#[test]
fn results_are_deterministic() {
    let g = fixture_without_annotations("transformer_rmsnorm");
    let sel = json!({"patterns": [rmsnorm_pattern(), add_relu()]});
    let first = report_text(&run(g.clone(), impls(&["rms@1", "ar@1"]), sel.clone()));
    for _ in 0..5 {
        assert_eq!(report_text(&run(g.clone(), impls(&["rms@1", "ar@1"]), sel.clone())), first);
    }
}
