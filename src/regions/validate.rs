//! Region validation. A region that fails any check is refused with a reason that names nodes
//! and source lines; it stays in the graph untouched.
//!
//! Checks, in order: non-empty; no overlap with another region; no graph input/output inside;
//! no in-place op unless the impl declares mutation; convex (no path leaves the region and
//! comes back); every boundary value is a tensor or an integer. Then, over all regions valid so
//! far: no two depend on each other (each convex, yet A reads B and B reads A), which outlining
//! both would turn into a cycle.

use super::boundary;
use super::candidate::{Candidate, Verdict};
use super::checks::at;
use super::pattern::PortOrder;
use super::{Boundary, Region};
use crate::graph::{Dag, Graph, OpKind};
use petgraph::algo::tarjan_scc;
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::{depth_first_search, Control, DfsEvent, NodeFiltered};
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
                let shared = candidates[r]
                    .region
                    .members
                    .iter()
                    .find(|m| owner[**m] == SHARED)
                    .map(|&m| g.nodes[m].name.as_str());
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

/// Validate every pending candidate (in parallel when there are many): each becomes `Valid` with its boundary or
/// `Refused` with the reason.
pub fn validate_all(
    g: &Graph,
    dag: &Dag,
    candidates: &mut [Candidate],
    allows_mutation: &(dyn Fn(&Region) -> bool + Sync),
) {
    let own = Ownership::build(g, candidates);
    let verdicts: Vec<Option<Verdict>> = crate::par::map(candidates, |r, c| {
        matches!(c.verdict, Verdict::Pending).then(|| {
            match validate(g, dag, &own, r, &c.region, c.order.as_ref(), allows_mutation(&c.region)) {
                Ok(b) => Verdict::Valid(b),
                Err(why) => Verdict::Refused(why),
            }
        })
    });
    for (c, v) in candidates.iter_mut().zip(verdicts) {
        if let Some(v) = v {
            c.verdict = v;
        }
    }
    refuse_mutually_dependent(g, dag, candidates);
}

/// Contract every valid region to one node and refuse the regions on a cycle of that quotient
/// graph. Kahn's algorithm over the quotient (plain vectors, linear) settles the common case;
/// only when it cannot order everything are the strongly connected components of the leftover
/// part computed (petgraph's Tarjan) to name exactly the regions on a cycle.
fn refuse_mutually_dependent(g: &Graph, dag: &Dag, candidates: &mut [Candidate]) {
    let valid: Vec<usize> = (0..candidates.len()).filter(|&k| candidates[k].boundary().is_some()).collect();
    if valid.len() < 2 {
        return;
    }
    let n = g.nodes.len();
    // Quotient node of each graph node: the first member of its region, or itself.
    let mut group: Vec<usize> = (0..n).collect();
    let mut region_at: HashMap<usize, usize> = HashMap::with_capacity(valid.len());
    for &k in &valid {
        let members = &candidates[k].region.members;
        members.iter().for_each(|&m| group[m] = members[0]);
        region_at.insert(members[0], k);
    }
    let members_of = |q: usize| -> &[usize] {
        match region_at.get(&q) {
            Some(&k) => &candidates[k].region.members,
            None => std::slice::from_ref(&group[q]),
        }
    };
    let is_group = |q: usize| group[q] == q;
    let mut pending = vec![0u32; n];
    for i in 0..n {
        for &p in &dag.inputs[i] {
            if group[p] != group[i] {
                pending[group[i]] += 1;
            }
        }
    }
    let mut ready: Vec<usize> = (0..n).filter(|&q| is_group(q) && pending[q] == 0).collect();
    let mut done = vec![false; n];
    while let Some(q) = ready.pop() {
        done[q] = true;
        for &m in members_of(q) {
            for &u in &dag.users[m] {
                let gu = group[u];
                if gu != q {
                    pending[gu] -= 1;
                    if pending[gu] == 0 {
                        ready.push(gu);
                    }
                }
            }
        }
    }
    let left: Vec<usize> = (0..n).filter(|&q| is_group(q) && !done[q]).collect();
    if left.is_empty() {
        return;
    }
    let mut quotient: DiGraph<usize, ()> = DiGraph::new();
    let mut node_of: HashMap<usize, NodeIndex> = HashMap::with_capacity(left.len());
    for &q in &left {
        node_of.insert(q, quotient.add_node(q));
    }
    for &q in &left {
        for &m in members_of(q) {
            for &u in &dag.users[m] {
                if let Some(&to) = node_of.get(&group[u]).filter(|_| group[u] != q) {
                    quotient.update_edge(node_of[&q], to, ());
                }
            }
        }
    }
    for scc in tarjan_scc(&quotient) {
        let ks: Vec<usize> = scc.iter().filter_map(|&x| region_at.get(&quotient[x]).copied()).collect();
        if scc.len() < 2 || ks.len() < 2 {
            continue;
        }
        let label = |k: usize| {
            let r = &candidates[k].region;
            format!("region {} ({})", r.id, r.source.as_deref().unwrap_or("unknown source"))
        };
        let labels: Vec<(usize, String)> = ks.iter().map(|&k| (k, label(k))).collect();
        for &k in &ks {
            let others: Vec<&str> = labels.iter().filter(|(o, _)| *o != k).map(|(_, l)| l.as_str()).collect();
            candidates[k].refuse(format!(
                "it and {} depend on each other (each reads a value the other computes, directly or through other nodes); outlining them would create a cycle, so mark them as one region or move the shared work out",
                others.join(", ")
            ));
        }
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
        return Err("it contains no operations: nothing traced inside the `with` block reached the graph (an empty block, or only Python arithmetic)".into());
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
