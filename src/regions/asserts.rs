//! Checks never split a region. torch.export inserts runtime checks (dtype and device metadata,
//! symbolic-size constraints) without the region's tag, often as a chain: `sym_size` of a value,
//! a comparison, `_assert_scalar`. One that reads a value computed inside a region would
//! otherwise make that value a region output (an integer, which a plugin cannot return). Such a
//! chain moves into the region it reads from: it checks a value only the plugin sees, so it goes
//! with the region's body when the region is outlined (and stays when it is refused).
//!
//! A check that also reads a value from outside that the region does not take cannot move in
//! without changing the region's inputs: it stays outside, and when it needs an integer from
//! inside the region, the region is refused, naming the check.

use super::candidate::{Candidate, Verdict};
use super::checks::{chains, check_only, stray_reason};
use crate::graph::{Dag, Graph, Value};

/// Move each chain of checks that reads exactly one pending region, and nothing from outside
/// that the region does not take, into that region, recording it in the candidate's `absorbed`.
/// A chain that needs a non-tensor value from inside but cannot move in refuses the region.
pub fn absorb(g: &Graph, dag: &Dag, candidates: &mut [Candidate]) {
    let mut owner: Vec<Option<usize>> = vec![None; g.nodes.len()];
    for (r, c) in candidates.iter().enumerate() {
        if matches!(c.verdict, Verdict::Pending) {
            for &m in &c.region.members {
                owner[m] = Some(r);
            }
        }
    }
    let only = check_only(g, dag);
    for (r, c) in candidates.iter_mut().enumerate() {
        if !matches!(c.verdict, Verdict::Pending) {
            continue;
        }
        let inside = |x: usize| owner[x] == Some(r);
        let free = |x: usize| owner[x].is_none();
        let found = chains(dag, &only, &c.region.members, &inside, &free);
        let mut moved: Vec<usize> = Vec::new();
        let mut refusal = None;
        for chain in &found {
            if chain.foreign {
                continue;
            }
            if chain.stray.is_some() {
                // Reading only tensors, it stays outside: they become region outputs.
                let needs = chain.reads.iter().find(|&&m| !matches!(g.nodes[m].val, Value::Tensor(_)));
                let cannot_leave = "is no tensor, and a plugin returns only tensors";
                refusal = refusal.or_else(|| needs.and_then(|&m| stray_reason(g, dag, chain, m, cannot_leave)));
                continue;
            }
            moved.extend(&chain.nodes);
        }
        if let Some(why) = refusal {
            c.refuse(why);
            continue;
        }
        moved.sort_unstable();
        for &i in &moved {
            let at = c.region.members.partition_point(|&m| m < i);
            c.region.members.insert(at, i);
        }
        c.absorbed.extend(moved);
    }
}
