//! The pass on graphs exported from real models (tests/fixtures, made by export_fixtures.py):
//! expected outcomes, snapshots of the rewritten graph and report, and the rewritten graph's
//! own validity.

mod common;

use std::collections::HashMap;
use tta::graph;
use tta::lowering::Status;

#[test]
fn every_fixture_meets_its_expectations_and_snapshot() {
    let names = common::all_fixtures();
    assert!(names.len() >= 10, "fixtures missing: {names:?}");
    for name in names {
        let f = common::load(&name);
        let out = common::run(f.graph.clone(), f.impls.clone(), &HashMap::new());
        let outlined = out.report.iter().filter(|r| r.status == Status::Outlined).count();
        let refused = out.report.iter().filter(|r| r.status == Status::Refused).count();
        assert_eq!(outlined as u64, f.expect["outlined"].as_u64().unwrap(), "{name}: outlined");
        assert_eq!(refused as u64, f.expect["refused"].as_u64().unwrap(), "{name}: refused");
        if let Some(reason) = f.expect["reason"].as_str() {
            for r in out.report.iter().filter(|r| r.status == Status::Refused) {
                let why = r.reason.as_deref().unwrap();
                assert!(why.contains(reason), "{name}: reason {why:?} lacks {reason:?}");
            }
        }
        // The rewritten graph is itself a valid graph, and refused regions are untouched.
        graph::verify::verify(&out.graph).unwrap_or_else(|e| panic!("{name}: rewritten graph invalid: {e}"));
        if outlined == 0 {
            assert_eq!(out.graph, f.graph, "{name}: a graph without outlined regions must come back unchanged");
        }
        let report: String = out.report.iter().map(|r| r.to_string()).collect();
        insta::assert_snapshot!(format!("fixture_{name}"), format!("{report}\n{}", out.graph));
    }
}

#[test]
fn loop_instances_share_one_op_but_get_distinct_nodes() {
    let f = common::load("loop12");
    let out = common::run(f.graph, f.impls, &HashMap::new());
    let ops: std::collections::BTreeSet<_> = out.report.iter().map(|r| r.op.clone().unwrap()).collect();
    let nodes: std::collections::BTreeSet<_> = out.report.iter().map(|r| r.node.clone().unwrap()).collect();
    assert_eq!(ops.len(), 1, "identical blocks should map to one plugin op: {ops:?}");
    assert_eq!(nodes.len(), 12);
}

#[test]
fn dynamic_dims_stay_symbolic_in_signatures() {
    let f = common::load("dynamic_batch");
    let out = common::run(f.graph, f.impls, &HashMap::new());
    let r = &out.report[0];
    let tta::regions::PortKind::Tensor { shape, .. } = &r.inputs[0].kind else { panic!() };
    assert!(
        matches!(&shape[0], tta::graph::Dim::Sym(s) if s.starts_with('s')),
        "batch dim should be symbolic, got {shape:?}"
    );
}

#[test]
fn multi_output_region_gets_getitems_in_output_order() {
    let f = common::load("multi_output");
    let out = common::run(f.graph, f.impls, &HashMap::new());
    assert_eq!(out.edits.len(), 1);
    let e = &out.edits[0];
    assert_eq!(e.outputs.len(), 2);
    assert_eq!(e.getitems.len(), 2);
    for (i, gi) in e.getitems.iter().enumerate() {
        let n = out.graph.nodes.iter().find(|n| &n.name == gi).unwrap();
        assert_eq!(n.args[1], tta::graph::Arg::Int(i as i64));
    }
}
