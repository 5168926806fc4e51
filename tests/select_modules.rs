//! The module selector (`regions::modules`): module types and path prefixes from each node's
//! module stack, one region per module call, refusals with reasons, and overlaps.

mod sel;

use sel::*;
use serde_json::json;
use tta::lowering::Status;
use tta::regions::Origin;

const M: (&str, &str, u32) = ("", "m.Model", 0);

fn block(i: u32) -> (String, &'static str, u32) {
    (format!("blocks.{i}"), "m.Block", 0)
}

/// Two blocks of a ModuleList, each holding a norm: `h = relu(x + w)` then `norm(h) = h * h`.
fn two_blocks() -> tta::graph::Graph {
    let mut nodes = vec![ph("x"), ph("w")];
    let mut prev = "x".to_owned();
    for i in 0..2u32 {
        let (bp, bt, _) = block(i);
        let np = format!("{bp}.norm");
        let s_block = [M, (bp.as_str(), bt, 0)];
        let s_norm = [M, (bp.as_str(), bt, 0), (np.as_str(), "m.Norm", 0)];
        nodes.push(inside(call(&format!("add{i}"), "aten.add.Tensor", json!([format!("@{prev}"), "@w"])), &s_block));
        nodes.push(inside(call(&format!("relu{i}"), "aten.relu.default", json!([format!("@add{i}")])), &s_block));
        nodes.push(inside(
            call(&format!("sq{i}"), "aten.mul.Tensor", json!([format!("@relu{i}"), format!("@relu{i}")])),
            &s_norm,
        ));
        prev = format!("sq{i}");
    }
    nodes.push(inside(call("tail", "aten.neg.default", json!([format!("@{prev}")])), &[M]));
    nodes.push(output(&["tail"]));
    graph(nodes)
}

#[test]
fn type_selector_makes_one_region_per_modulelist_entry_with_nested_modules_inside() {
    let out = run(two_blocks(), impls(&["blk@1"]), json!({"modules": [{"type": "m.Block", "impl": "blk@1"}]}));
    let ok = outlined(&out);
    assert_eq!(ok.len(), 2, "{}", report_text(&out));
    assert_eq!(ok[0].id, "module:blocks.0");
    assert_eq!(ok[0].nodes, ["add0", "relu0", "sq0"], "the nested norm belongs to its block");
    assert_eq!(ok[1].nodes, ["add1", "relu1", "sq1"]);
    assert_eq!(ok[0].origin, Origin::Module { selector: "m.Block".into(), path: "blocks.0".into() });
    // Inputs in first-use order: the running value, then the shared weight.
    assert_eq!(names(&ok[1].inputs), ["sq0", "w"]);
    assert_eq!(ok[0].source.as_deref(), Some("model.py:14"), "source of the first member");
}

#[test]
fn path_prefix_takes_the_outermost_module_under_it() {
    let out = run(two_blocks(), impls(&["blk@1"]), json!({"modules": [{"path": "blocks", "impl": "blk@1"}]}));
    let ids: Vec<_> = outlined(&out).iter().map(|r| r.id.clone()).collect();
    assert_eq!(ids, ["module:blocks.0", "module:blocks.1"]);

    let out = run(two_blocks(), impls(&["n@1"]), json!({"modules": [{"path": "blocks.1.norm", "impl": "n@1"}]}));
    let ok = outlined(&out);
    assert_eq!(ok.len(), 1);
    assert_eq!(ok[0].nodes, ["sq1"]);

    // A prefix matches whole path components only: `blocks.1` is not under `blocks.1.n`.
    let out = run(two_blocks(), impls(&["n@1"]), json!({"modules": [{"path": "blocks.1.n", "impl": "n@1"}]}));
    assert!(out.report.is_empty());
}

#[test]
fn each_call_of_a_reused_module_is_its_own_region() {
    // act(lin(act(x))) with one `act` module called twice (torch.export keys the second `@1`).
    let g = graph(vec![
        ph("x"),
        ph("w"),
        inside(call("sig", "aten.sigmoid.default", json!(["@x"])), &[M, ("act", "m.Act", 0)]),
        inside(call("mul", "aten.mul.Tensor", json!(["@x", "@sig"])), &[M, ("act", "m.Act", 0)]),
        inside(call("mm", "aten.mm.default", json!(["@mul", "@w"])), &[M, ("lin", "m.Lin", 0)]),
        inside(call("sig_1", "aten.sigmoid.default", json!(["@mm"])), &[M, ("act", "m.Act", 1)]),
        inside(call("mul_1", "aten.mul.Tensor", json!(["@mm", "@sig_1"])), &[M, ("act", "m.Act", 1)]),
        output(&["mul_1"]),
    ]);
    let out = run(g, impls(&["silu@1"]), json!({"modules": [{"type": "m.Act", "impl": "silu@1"}]}));
    let ok = outlined(&out);
    assert_eq!(ok.len(), 2, "{}", report_text(&out));
    assert_eq!((ok[0].id.as_str(), ok[1].id.as_str()), ("module:act", "module:act@1"));
    assert_eq!(ok[1].nodes, ["sig_1", "mul_1"]);
    assert_eq!(ok[0].op, ok[1].op, "identical calls share one plugin op");
}

#[test]
fn nested_instances_of_the_selected_type_belong_to_the_outermost() {
    let s_outer = [M, ("b", "m.Block", 0)];
    let s_inner = [M, ("b", "m.Block", 0), ("b.inner", "m.Block", 0)];
    let g = graph(vec![
        ph("x"),
        inside(call("a", "aten.relu.default", json!(["@x"])), &s_outer),
        inside(call("b", "aten.neg.default", json!(["@a"])), &s_inner),
        inside(call("c", "aten.exp.default", json!(["@b"])), &s_outer),
        output(&["c"]),
    ]);
    let out = run(g.clone(), impls(&["blk@1"]), json!({"modules": [{"type": "m.Block", "impl": "blk@1"}]}));
    let ok = outlined(&out);
    assert_eq!(ok.len(), 1);
    assert_eq!(ok[0].nodes, ["a", "b", "c"]);

    // Two selectors whose instances nest: both regions are kept and refused as overlapping.
    let out = run(
        g,
        impls(&["blk@1", "inner@1"]),
        json!({"modules": [{"type": "m.Block", "impl": "blk@1"}, {"path": "b.inner", "impl": "inner@1"}]}),
    );
    let no = refused(&out);
    assert_eq!(no.len(), 2, "{}", report_text(&out));
    for r in no {
        assert!(r.reason.as_deref().unwrap().contains("may not nest or overlap"), "{:?}", r.reason);
    }
}

#[test]
fn one_instance_two_selectors_same_impl_is_one_region_different_impls_an_error() {
    let out = run(
        two_blocks(),
        impls(&["blk@1"]),
        json!({"modules": [{"type": "m.Block", "impl": "blk@1"}, {"path": "blocks.0", "impl": "blk@1"}]}),
    );
    assert_eq!(outlined(&out).len(), 2);

    let e = tta::pass::analyze(
        two_blocks(),
        impls(&["a@1", "b@1"]),
        &selectors(json!({"modules": [{"type": "m.Block", "impl": "a@1"}, {"path": "blocks.0", "impl": "b@1"}]})),
    )
    .err()
    .unwrap();
    assert_eq!(e.kind, tta::ErrorKind::Input);
    assert!(
        e.message.contains(
            "module `blocks.0` is chosen by selector `m.Block` (impl `a@1`) and by selector `blocks.0` (impl `b@1`)"
        ),
        "{e}"
    );
    assert_eq!(e.node.as_deref(), Some("add0"));

    let bad =
        tta::regions::selectors::from_json(r#"{"modules": [{"type": "m.Block", "path": "b", "impl": "a"}]}"#).unwrap();
    let e = tta::pass::analyze(two_blocks(), impls(&["a"]), &bad).err().unwrap();
    assert!(e.message.contains("exactly one of"), "{e}");
    assert!(tta::regions::selectors::from_json(r#"{"modules": [], "bogus": 1}"#).is_err());
}

#[test]
fn a_module_that_is_not_a_valid_region_is_refused_with_the_reason_and_left_alone() {
    // Non-convex: the module's first op feeds an outside op that feeds the module's second op.
    let s = [M, ("m", "m.Odd", 0)];
    let g = graph(vec![
        ph("x"),
        inside(call("a", "aten.relu.default", json!(["@x"])), &s),
        inside(call("o", "aten.neg.default", json!(["@a"])), &[M]),
        inside(call("b", "aten.mul.Tensor", json!(["@a", "@o"])), &s),
        output(&["b"]),
    ]);
    let out = run(g.clone(), impls(&["odd@1"]), json!({"modules": [{"type": "m.Odd", "impl": "odd@1"}]}));
    let no = refused(&out);
    assert_eq!(no.len(), 1);
    assert!(no[0].reason.as_deref().unwrap().contains("not convex"), "{:?}", no[0].reason);
    assert_eq!(out.graph, g, "a refused module is never half-outlined");

    // In-place op inside the module.
    let mut mutating = call("m_", "aten.mul_.Tensor", json!(["@x", 2]));
    mutating["mutates"] = json!(["0"]);
    let g = graph(vec![
        ph("x"),
        inside(mutating, &s),
        inside(call("b", "aten.relu.default", json!(["@m_"])), &s),
        output(&["b"]),
    ]);
    let out = run(g, impls(&["odd@1"]), json!({"modules": [{"type": "m.Odd", "impl": "odd@1"}]}));
    assert!(refused(&out)[0].reason.as_deref().unwrap().contains("writes its input in place"));
}

#[test]
fn rmsnorm_modules_of_an_exported_transformer_block() {
    let g = fixture_without_annotations("transformer_rmsnorm");
    let out = run(g.clone(), impls(&["rms@1"]), json!({"modules": [{"type": "models.RMSNorm", "impl": "rms@1"}]}));
    let ok = outlined(&out);
    assert_eq!(ok.len(), 2, "{}", report_text(&out));
    assert_eq!(ok[0].id, "module:norm1");
    assert_eq!(ok[1].id, "module:norm2");
    assert_eq!(ok[0].nodes.len(), 6);
    assert_eq!(names(&ok[0].inputs), ["x", "p_norm1_weight"]);
    assert!(ok.iter().all(|r| r.status == Status::Outlined));
    tta::graph::verify::verify(&out.graph).unwrap();
    insta::assert_snapshot!("modules_transformer_rmsnorm", report_text(&out));
}

#[test]
fn module_regions_overlapping_annotations_are_refused() {
    // The fixture as exported: its norms are also annotated with lower_as.
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/transformer_rmsnorm.json");
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let g = tta::graph::from_json(&doc["graph"].to_string()).unwrap();
    let mut imp: tta::pass::Impls = serde_json::from_value(doc["impls"].clone()).unwrap();
    imp.extend(impls(&["rms@1"]));
    let out = run(g, imp, json!({"modules": [{"path": "norm1", "impl": "rms@1"}]}));
    let no = refused(&out);
    assert_eq!(no.len(), 2, "the module region and the annotation on the same ops: {}", report_text(&out));
    assert!(no.iter().any(|r| r.id == "module:norm1"));
    assert!(no.iter().all(|r| r.reason.as_deref().unwrap().contains("may not nest or overlap")));
    assert_eq!(outlined(&out).len(), 2, "the other annotated regions are unaffected");
}
