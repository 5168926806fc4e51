//! Runtime checks and what only they read. torch.export inserts checks (dtype and device
//! metadata, symbolic-size constraints) often as a chain: `sym_size` of a value, a comparison,
//! `_assert_scalar`. This finds, for a region, the chains that read it (what may move into it
//! with it) and says why one cannot move.

use crate::graph::{Dag, Graph, Node, OpKind, Value};
use std::collections::BTreeSet;

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

/// No users, no value, writes nothing: a check such as `aten._assert_tensor_metadata`.
pub(crate) fn is_observer(n: &Node, users: usize) -> bool {
    n.op == OpKind::CallFunction && users == 0 && matches!(n.val, Value::None) && n.mutates.is_empty()
}

/// Which nodes only checks read: a check (an assertion or an observer) whose users, if any, are
/// such nodes, or an op that writes nothing and whose every user is such a node (`sym_size` and
/// `le` before `_assert_scalar`). Relies on nodes being in topological order.
pub fn check_only(g: &Graph, dag: &Dag) -> Vec<bool> {
    let mut only = vec![false; g.nodes.len()];
    for i in (0..g.nodes.len()).rev() {
        let (n, users) = (&g.nodes[i], &dag.users[i]);
        let check = is_assertion(&n.target) || is_observer(n, users.len());
        only[i] = n.op == OpKind::CallFunction
            && n.mutates.is_empty()
            && (check || !users.is_empty())
            && users.iter().all(|&u| only[u]);
    }
    only
}

/// Connected check-only nodes that read a region: what moves into it together.
#[derive(Debug)]
pub struct Chain {
    /// Node positions, ascending.
    pub nodes: Vec<usize>,
    /// The region's members the chain reads.
    pub reads: Vec<usize>,
    /// A node of the chain and a value it reads from outside that the region does not take.
    pub stray: Option<(usize, usize)>,
    /// The chain reads, or is read by, a node of another region: it belongs to neither.
    pub foreign: bool,
}

/// The chains of checks reading the region whose members are `members` (`inside` tells
/// membership): the check-only nodes downstream of a member, plus the check-only nodes only
/// those read (a `sym_size` of an input used by nothing but the check). `free(i)`: node `i`
/// belongs to no region; only free nodes join a chain.
pub fn chains(
    dag: &Dag,
    only: &[bool],
    members: &[usize],
    inside: &dyn Fn(usize) -> bool,
    free: &dyn Fn(usize) -> bool,
) -> Vec<Chain> {
    let joinable = |x: usize| only[x] && !inside(x) && free(x);
    let mut marked: BTreeSet<usize> = BTreeSet::new();
    let mut stack: Vec<usize> =
        members.iter().flat_map(|&m| dag.users[m].iter().copied()).filter(|&u| joinable(u)).collect();
    while let Some(n) = stack.pop() {
        if marked.insert(n) {
            stack.extend(dag.users[n].iter().copied().filter(|&u| joinable(u)));
        }
    }
    if marked.is_empty() {
        return Vec::new();
    }
    // Producers used only by the chain come with it; each one marked may admit its own.
    let mut work: Vec<usize> = marked.iter().copied().collect();
    while let Some(n) = work.pop() {
        for &p in &dag.inputs[n] {
            if !marked.contains(&p) && joinable(p) && dag.users[p].iter().all(|u| marked.contains(u) || inside(*u)) {
                marked.insert(p);
                work.push(p);
            }
        }
    }
    let mut chains = Vec::new();
    let mut seen: BTreeSet<usize> = BTreeSet::new();
    for &start in &marked {
        if !seen.insert(start) {
            continue;
        }
        let mut nodes = vec![start];
        let mut k = 0;
        while k < nodes.len() {
            let n = nodes[k];
            k += 1;
            for &x in dag.inputs[n].iter().chain(&dag.users[n]) {
                if marked.contains(&x) && seen.insert(x) {
                    nodes.push(x);
                }
            }
        }
        nodes.sort_unstable();
        chains.push(describe(dag, &marked, nodes, inside, free));
    }
    chains
}

fn describe(
    dag: &Dag,
    marked: &BTreeSet<usize>,
    nodes: Vec<usize>,
    inside: &dyn Fn(usize) -> bool,
    free: &dyn Fn(usize) -> bool,
) -> Chain {
    let takes = |p: usize| dag.users[p].iter().any(|&u| inside(u));
    let (mut reads, mut stray, mut foreign) = (Vec::new(), None, false);
    for &n in &nodes {
        foreign |= dag.users[n].iter().any(|&u| !inside(u) && !marked.contains(&u));
        for &p in &dag.inputs[n] {
            if marked.contains(&p) {
                continue;
            }
            if inside(p) {
                reads.push(p);
            } else if !free(p) {
                foreign = true;
            } else if stray.is_none() && !takes(p) {
                stray = Some((n, p));
            }
        }
    }
    reads.sort_unstable();
    reads.dedup();
    Chain { nodes, reads, stray, foreign }
}

/// The first check the chain ends in that `from` (a node of it) leads to.
pub fn check_after(g: &Graph, dag: &Dag, chain: &Chain, from: usize) -> usize {
    let mut at = from;
    loop {
        if is_assertion(&g.nodes[at].target) || dag.users[at].is_empty() {
            return at;
        }
        match dag.users[at].iter().find(|u| chain.nodes.binary_search(u).is_ok()) {
            Some(&u) => at = u,
            None => return at,
        }
    }
}

/// `name` (target, file:line): how a reason points at a node.
pub fn at(g: &Graph, i: usize) -> String {
    let n = &g.nodes[i];
    match &n.source {
        Some(src) => format!("`{}` ({}, {})", n.name, n.target, src),
        None => format!("`{}` ({})", n.name, n.target),
    }
}

/// Why a chain with a stray read can go nowhere when it needs `member`, which cannot leave the
/// region because it `cannot_leave` ("is no output of the pattern").
pub fn stray_reason(g: &Graph, dag: &Dag, chain: &Chain, member: usize, cannot_leave: &str) -> Option<String> {
    let (reader, value) = chain.stray?;
    Some(format!(
        "`{}` is read by the runtime check {}, whose `{}` also reads `{}` from outside the region; the check cannot stay \
         outside (`{}` {}) nor move in (the region does not take `{}`): make `{}` an input of the region, or check a value the region returns",
        g.nodes[member].name,
        at(g, check_after(g, dag, chain, reader)),
        g.nodes[reader].name,
        g.nodes[value].name,
        g.nodes[member].name,
        cannot_leave,
        g.nodes[value].name,
        g.nodes[value].name,
    ))
}
