//! Keep the node list topologically ordered after outlining, with as little movement as possible.

use crate::graph::verify::NameIndex;
use crate::graph::Graph;
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// One step Python replays after the edits: put `node` right after `after`.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Move {
    pub node: String,
    pub after: String,
}

/// If some node reads a value defined after it, re-sort stably (Kahn's algorithm, always taking
/// the ready node that came first) and return the moves that turn the old order into the new
/// one, each `node` placed right after `after`, and the new order (new position -> old).
/// Returns no moves and no order when the order was valid.
pub fn legalize(g: &mut Graph) -> (Vec<Move>, Option<Vec<usize>>) {
    let n = g.nodes.len();
    let mut index = NameIndex::with_capacity_and_hasher(n, Default::default());
    let mut valid = true;
    for (i, node) in g.nodes.iter().enumerate() {
        node.args
            .iter()
            .chain(node.kwargs.values())
            .for_each(|a| a.for_each_ref(&mut |r| valid &= index.contains_key(r)));
        index.insert(node.name.as_str(), i);
    }
    if valid {
        return (Vec::new(), None);
    }
    let mut producers: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, node) in g.nodes.iter().enumerate() {
        node.args.iter().chain(node.kwargs.values()).for_each(|a| {
            a.for_each_ref(&mut |r| {
                let j = index[r];
                if !producers[i].contains(&j) {
                    producers[i].push(j);
                }
            })
        });
    }
    let mut users: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut pending: Vec<usize> = vec![0; n];
    for (i, ps) in producers.iter().enumerate() {
        pending[i] = ps.len();
        for &p in ps {
            users[p].push(i);
        }
    }
    let mut ready: BinaryHeap<Reverse<usize>> = (0..n).filter(|&i| pending[i] == 0).map(Reverse).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(Reverse(i)) = ready.pop() {
        order.push(i);
        for &u in &users[i] {
            pending[u] -= 1;
            if pending[u] == 0 {
                ready.push(Reverse(u));
            }
        }
    }
    // Validation refuses non-convex and mutually dependent regions, so outlining the rest
    // cannot create a cycle.
    assert_eq!(order.len(), n, "outlining convex, mutually independent regions cannot create a cycle");

    // Replay on a linked list of the old order to find the moves.
    let mut prev: Vec<Option<usize>> = (0..n).map(|i| i.checked_sub(1)).collect();
    let mut next: Vec<Option<usize>> = (0..n).map(|i| if i + 1 < n { Some(i + 1) } else { None }).collect();
    let mut moves = Vec::new();
    for w in order.windows(2) {
        let (before, node) = (w[0], w[1]);
        if prev[node] == Some(before) {
            continue;
        }
        // Unlink `node`, then link it after `before`.
        if let Some(p) = prev[node] {
            next[p] = next[node];
        }
        if let Some(x) = next[node] {
            prev[x] = prev[node];
        }
        let after = next[before];
        next[before] = Some(node);
        prev[node] = Some(before);
        next[node] = after;
        if let Some(a) = after {
            prev[a] = Some(node);
        }
        moves.push(Move { node: g.nodes[node].name.clone(), after: g.nodes[before].name.clone() });
    }
    let mut slots: Vec<Option<Box<crate::graph::Node>>> = std::mem::take(&mut g.nodes).into_iter().map(Some).collect();
    g.nodes = order.iter().map(|&i| slots[i].take().expect("a permutation")).collect();
    (moves, Some(order))
}
