//! Assertion-only nodes never split a region. torch.export inserts runtime checks (dtype and
//! device metadata, symbolic-size constraints) without the region's tag; one that reads a value
//! computed inside a region would otherwise make that value a region output. Such a node is
//! absorbed into the region it reads from: it checks a value only the plugin sees, so it goes
//! away with the region when the region is outlined (and stays when it is refused).

use super::candidate::Candidate;
use crate::graph::{Dag, Graph};

/// Ops that only check something and produce nothing another node reads.
const ASSERTIONS: &[&str] = &[
    "aten._assert_tensor_metadata.default",
    "aten._assert_scalar.default",
    "aten._assert_async.default",
    "aten._assert_async.msg",
    "aten._functional_assert_async.msg",
    "aten._functional_assert_scalar.default",
    "aten.sym_constrain_range.default",
    "aten.sym_constrain_range_for_size.default",
    "aten._functional_sym_constrain_range.default",
    "aten._functional_sym_constrain_range_for_size.default",
];

pub fn is_assertion(target: &str) -> bool {
    ASSERTIONS.contains(&target)
}

/// Add each assertion node that belongs to no region, has no users and reads members of
/// exactly one region to that region, recording it in the candidate's `absorbed`.
pub fn absorb(g: &Graph, dag: &Dag, candidates: &mut [Candidate]) {
    let mut owner: Vec<Option<usize>> = vec![None; g.nodes.len()];
    for (r, c) in candidates.iter().enumerate() {
        for &m in &c.region.members {
            owner[m] = Some(r);
        }
    }
    for (i, node) in g.nodes.iter().enumerate() {
        if owner[i].is_some() || !dag.users[i].is_empty() || !is_assertion(&node.target) {
            continue;
        }
        let mut read: Vec<usize> = dag.inputs[i].iter().filter_map(|&p| owner[p]).collect();
        read.sort_unstable();
        read.dedup();
        if let [r] = read[..] {
            let members = &mut candidates[r].region.members;
            let at = members.partition_point(|&m| m < i);
            members.insert(at, i);
            candidates[r].absorbed.push(i);
        }
    }
}
