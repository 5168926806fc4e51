//! Regions from subgraph patterns (`tta.lower_pattern`): every occurrence of a pattern graph in
//! the target graph becomes one region whose boundary is the pattern's inputs and outputs.
//!
//! A pattern is a graph in the same format, exported like a model. Its placeholders are
//! wildcards; its output node names what the region returns. An occurrence maps every other
//! pattern node to a distinct target node with the same op kind, target and literal arguments,
//! wired the same way (`compile.rs` prepares the pattern, `search.rs` finds embeddings):
//! - pattern inputs bind to any producer, consistently (one input, one producer) and
//!   injectively (distinct inputs, distinct producers; never a node of the occurrence), so the
//!   region's inputs are exactly the pattern's;
//! - commutative ops (`aten.add.Tensor` without `alpha`, `aten.mul.Tensor`, ...) match their
//!   two operands in either order;
//! - literals compare exactly (an int never equals a float; NaN equals NaN; opaque values never
//!   match); a literal never matches a node reference, so a pattern traced with static shapes
//!   does not match a target whose sizes are symbolic.
//!
//! An occurrence is valid when no node other than a pattern output is read outside it, and
//! every pattern output is. Assertion-like nodes (`aten._assert_tensor_metadata`: no users, no
//! value, no mutation) are not pattern nodes: those in the pattern are dropped, and those in the
//! target that read the occurrence (and nothing else) join it.
//!
//! Occurrences are taken greedily in node order of the anchor (the pattern output latest in
//! pattern order): the first valid embedding found for an anchor wins and claims its nodes;
//! later anchors only embed into unclaimed nodes. An anchor whose embeddings are all invalid
//! gives a refused region with the reason, when it overlaps nothing claimed. Convexity, graph
//! I/O and mutation are then checked by the shared validation.

mod compile;
mod search;
mod selector;

pub use compile::Pattern;
pub use selector::{PatternSelector, PortOrder};

use super::{Origin, Region};
use crate::graph::{Dag, Graph};
use std::collections::HashMap;

impl Pattern {
    /// Every non-overlapping occurrence in `g`, valid ones first claimed greedily in anchor
    /// order, then refused ones that overlap nothing claimed; ids number them in anchor order.
    /// A valid one comes with the boundary order it fixes, a refused one with the reason.
    pub fn find(&self, g: &Graph, index: &HashMap<&str, usize>, dag: &Dag) -> Vec<(Region, Result<PortOrder, String>)> {
        let mut s = search::Search::new(self, g, index, dag);
        let mut valid: Vec<search::Occurrence> = Vec::new();
        let mut invalid: Vec<(search::Occurrence, String)> = Vec::new();
        for t in self.candidates(g) {
            if s.claimed[t] {
                continue;
            }
            match s.run_anchor(t) {
                search::Outcome::Valid(occ) => {
                    occ.members.iter().for_each(|&m| s.claimed[m] = true);
                    valid.push(occ);
                }
                search::Outcome::Invalid(occ, why) => invalid.push((occ, why)),
                search::Outcome::None => {}
            }
        }
        let mut all: Vec<(search::Occurrence, Option<String>)> = valid.into_iter().map(|o| (o, None)).collect();
        for (occ, why) in invalid {
            if occ.members.iter().all(|&m| !s.claimed[m]) {
                occ.members.iter().for_each(|&m| s.claimed[m] = true);
                all.push((occ, Some(why)));
            }
        }
        all.sort_by_key(|(o, _)| o.anchor);

        let mut found = Vec::with_capacity(all.len());
        for (k, (occ, why)) in all.into_iter().enumerate() {
            let region = Region {
                id: format!("pattern:{}:{k}", self.name),
                impl_key: self.impl_key.clone(),
                origin: Origin::Pattern { pattern: self.name.clone() },
                source: occ.members.iter().find_map(|&m| g.nodes[m].source.clone()),
                members: occ.members,
            };
            found.push((region, why.map_or(Ok(occ.ports), Err)));
        }
        found
    }

    /// Target nodes that could be the anchor's image, in node order.
    fn candidates<'g>(&self, g: &'g Graph) -> impl Iterator<Item = usize> + 'g {
        let (op, target) = (self.nodes[self.anchor].op, self.nodes[self.anchor].target.clone());
        g.nodes.iter().enumerate().filter(move |(_, n)| n.op == op && n.target == target).map(|(i, _)| i)
    }
}
