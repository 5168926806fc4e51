//! Region validation. A region that fails any check is refused with a reason that names nodes
//! and source lines; it stays in the graph untouched.
//!
//! Checks, in order: non-empty; no overlap with another region; no graph input/output inside;
//! no in-place op unless the impl declares mutation; convex (no path leaves the region and
//! comes back); every boundary value is a tensor or an integer.

use super::boundary;
use super::candidate::{Candidate, Verdict};
use super::pattern::PortOrder;
use super::{Boundary, Region};
use crate::graph::{Dag, Graph, OpKind};
use petgraph::graph::NodeIndex;
use petgraph::visit::{depth_first_search, Control, DfsEvent, NodeFiltered};
use rayon::prelude::*;
use std::collections::HashMap;

const NO_REGION: u32 = u32::MAX;
const SHARED: u32 = u32::MAX - 1;

/// Which region owns each node (`NO_REGION`, a region index, or `SHARED` when several do).
pub struct Ownership {
    owner: Vec<u32>,
    /// Region index -> reasons it overlaps others.
    overlaps: HashMap<usize, String>,
}

impl Ownership {
    /// Only pending candidates claim nodes: one already refused takes part in nothing.
    pub fn build(g: &Graph, candidates: &[Candidate]) -> Ownership {
        let mut owner = vec![NO_REGION; g.nodes.len()];
        let mut clashes: HashMap<usize, Vec<usize>> = HashMap::new();
        let mut first_owner: HashMap<usize, u32> = HashMap::new();
        for (r, c) in candidates.iter().enumerate() {
            if !matches!(c.verdict, Verdict::Pending) {
                continue;
            }
            for &m in &c.region.members {
                match owner[m] {
                    NO_REGION => owner[m] = r as u32,
                    other => {
                        let prev = if other == SHARED { first_owner[&m] } else { other };
                        first_owner.entry(m).or_insert(prev);
                        owner[m] = SHARED;
                        for (a, b) in [(r, prev as usize), (prev as usize, r)] {
                            let list = clashes.entry(a).or_default();
                            if !list.contains(&b) {
                                list.push(b);
                            }
                        }
                    }
                }
            }
        }
        let overlaps = clashes
            .into_iter()
            .map(|(r, others)| {
                let names: Vec<String> = others
                    .iter()
                    .map(|&o| {
                        let other = &candidates[o].region;
                        format!("region {} ({})", other.id, other.source.as_deref().unwrap_or("unknown source"))
                    })
                    .collect();
                let shared = candidates[r].region.members.iter().find(|m| owner[**m] == SHARED).map(|&m| g.nodes[m].name.as_str());
                let why = format!(
                    "it overlaps {} (shared node `{}`); regions may not nest or overlap",
                    names.join(", "),
                    shared.unwrap_or("?")
                );
                (r, why)
            })
            .collect();
        Ownership { owner, overlaps }
    }

    pub fn owns(&self, region: usize, node: usize) -> bool {
        self.owner[node] == region as u32
    }
}

/// Validate every pending candidate in parallel: each becomes `Valid` with its boundary or
/// `Refused` with the reason.
pub fn validate_all(g: &Graph, dag: &Dag, candidates: &mut [Candidate], allows_mutation: &(dyn Fn(&Region) -> bool + Sync)) {
    let own = Ownership::build(g, candidates);
    let verdicts: Vec<Option<Verdict>> = candidates
        .par_iter()
        .enumerate()
        .map(|(r, c)| {
            matches!(c.verdict, Verdict::Pending).then(|| {
                match validate(g, dag, &own, r, &c.region, c.order.as_ref(), allows_mutation(&c.region)) {
                    Ok(b) => Verdict::Valid(b),
                    Err(why) => Verdict::Refused(why),
                }
            })
        })
        .collect();
    for (c, v) in candidates.iter_mut().zip(verdicts) {
        if let Some(v) = v {
            c.verdict = v;
        }
    }
}

fn at(g: &Graph, i: usize) -> String {
    let n = &g.nodes[i];
    match &n.source {
        Some(src) => format!("`{}` ({}, {})", n.name, n.target, src),
        None => format!("`{}` ({})", n.name, n.target),
    }
}

fn validate(
    g: &Graph,
    dag: &Dag,
    own: &Ownership,
    r: usize,
    region: &Region,
    order: Option<&PortOrder>,
    mutation_ok: bool,
) -> Result<Boundary, String> {
    if region.members.is_empty() {
        return Err("it contains no operations".into());
    }
    if let Some(why) = own.overlaps.get(&r) {
        return Err(why.clone());
    }
    for &m in &region.members {
        match g.nodes[m].op {
            OpKind::Placeholder => return Err(format!("it contains the graph input {}", at(g, m))),
            OpKind::Output => return Err("it contains the graph's output node".into()),
            _ => {}
        }
    }
    if !mutation_ok {
        if let Some(&m) = region.members.iter().find(|&&m| !g.nodes[m].mutates.is_empty()) {
            return Err(format!(
                "{} writes its input in place; declare it on the impl (custom_plugin(..., mutates=True)) or move it out of the region",
                at(g, m)
            ));
        }
    }
    check_convex(g, dag, own, r, region)?;
    boundary::compute(g, dag, region, order, &|i| own.owns(r, i))
}

/// A region is convex when no path leaves it and re-enters it. Paths can only run forward in
/// node order, so the search starts at outside users placed before the last member and never
/// looks past it.
fn check_convex(g: &Graph, dag: &Dag, own: &Ownership, r: usize, region: &Region) -> Result<(), String> {
    let last = *region.members.last().unwrap();
    let starts: Vec<NodeIndex> = region
        .members
        .iter()
        .flat_map(|&m| dag.users[m].iter().copied())
        .filter(|&u| u < last && !own.owns(r, u))
        .map(NodeIndex::new)
        .collect();
    if starts.is_empty() {
        return Ok(());
    }
    let window = NodeFiltered::from_fn(&dag.graph, |n: NodeIndex| n.index() <= last);
    let mut parent: HashMap<usize, usize> = HashMap::new();
    let hit = depth_first_search(&window, starts.iter().copied(), |event| {
        match event {
            DfsEvent::TreeEdge(a, b) => {
                parent.insert(b.index(), a.index());
                if own.owns(r, b.index()) {
                    return Control::Break(b.index());
                }
            }
            DfsEvent::Discover(n, _) if own.owns(r, n.index()) => return Control::Break(n.index()),
            _ => {}
        }
        Control::Continue
    });
    match hit.break_value() {
        None => Ok(()),
        Some(reentry) => {
            let mut path = vec![reentry];
            let mut cur = reentry;
            while let Some(&p) = parent.get(&cur) {
                path.push(p);
                cur = p;
            }
            path.reverse();
            let exit = dag.inputs[path[0]].iter().copied().find(|&p| own.owns(r, p));
            let names: Vec<String> = path.iter().map(|&i| format!("`{}`", g.nodes[i].name)).collect();
            Err(format!(
                "it is not convex: {} reads {}, and the path {} comes back into the region at {}; outlining it would create a cycle",
                at(g, path[0]),
                exit.map(|e| format!("`{}` from inside", g.nodes[e].name)).unwrap_or_default(),
                names.join(" -> "),
                at(g, reentry),
            ))
        }
    }
}
