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
pub use selector::{PatternSelector, PortOrder, Unmatched};

use super::{Origin, Region};
use crate::graph::verify::NameIndex;
use crate::graph::{Dag, Graph};

/// The occurrences of one pattern: each region with the boundary order it fixes (valid) or the
/// reason (refused by the search); when there is none, the closest partial match.
pub struct Found {
    pub regions: Vec<(Region, Result<PortOrder, String>)>,
    pub closest: Option<String>,
}

/// Every non-overlapping occurrence in `g` of any of `forms` (one pattern traced in several
/// dtypes): valid ones first, claimed greedily in anchor order, form by form (largest form
/// first), then refused ones that overlap nothing claimed; ids number them in anchor order.
pub fn find(forms: &[Pattern], g: &Graph, index: &NameIndex, dag: &Dag) -> Found {
    let mut claimed = vec![false; g.nodes.len()];
    let checks = crate::regions::checks::check_only(g, dag);
    let mut valid: Vec<search::Occurrence> = Vec::new();
    let mut invalid: Vec<(search::Occurrence, String)> = Vec::new();
    let mut near: Option<(usize, search::Near)> = None;
    // Larger forms first: a form with conversions must not lose its occurrence to a smaller
    // form matching part of it.
    let mut order: Vec<usize> = (0..forms.len()).collect();
    order.sort_by_key(|&f| std::cmp::Reverse(forms[f].nodes.len()));
    for f in order {
        let form = &forms[f];
        let mut s = search::Search::new(form, g, index, dag, &checks, claimed);
        for t in form.candidates(g) {
            if s.claimed[t] {
                continue;
            }
            match s.run_anchor(t) {
                search::AnchorResult::Valid(occ) => {
                    occ.members.iter().for_each(|&m| s.claimed[m] = true);
                    valid.push(occ);
                }
                search::AnchorResult::Invalid(occ, why) => invalid.push((occ, why)),
                search::AnchorResult::None => {}
            }
        }
        let nothing = valid.is_empty() && invalid.is_empty();
        let by_ops = if nothing { s.closest_by_ops(form.candidates(g)) } else { None };
        if let Some(n) = by_ops.or_else(|| s.near.take()) {
            if near.as_ref().is_none_or(|(_, b)| (n.steps, n.matched) > (b.steps, b.matched)) {
                near = Some((f, n));
            }
        }
        claimed = s.claimed;
    }
    let mut all: Vec<(search::Occurrence, Option<String>)> = valid.into_iter().map(|o| (o, None)).collect();
    for (occ, why) in invalid {
        if occ.members.iter().all(|&m| !claimed[m]) {
            occ.members.iter().for_each(|&m| claimed[m] = true);
            all.push((occ, Some(why)));
        }
    }
    all.sort_by_key(|(o, _)| o.anchor);

    let first = &forms[0];
    let closest = all.is_empty().then(|| match &near {
        Some((f, n)) => describe_near(&forms[*f], g, n),
        None => format!(
            "no node in the graph is `{}` (the pattern's output `{}`)",
            first.nodes[first.anchor].target, first.nodes[first.anchor].name
        ),
    });
    let mut regions = Vec::with_capacity(all.len());
    for (k, (occ, why)) in all.into_iter().enumerate() {
        let region = Region {
            id: format!("pattern:{}:{k}", first.name),
            impl_key: first.impl_key.clone(),
            origin: Origin::Pattern { pattern: first.name.clone() },
            source: occ.members.iter().find_map(|&m| g.nodes[m].source.clone()),
            members: occ.members,
        };
        regions.push((region, why.map_or(Ok(occ.order), Err)));
    }
    Found { regions, closest }
}

/// "closest match: ..." text for a pattern that occurs nowhere.
fn describe_near(p: &Pattern, g: &Graph, n: &search::Near) -> String {
    let node = |i: usize| crate::regions::checks::at(g, i);
    let pn = &p.nodes[n.pattern_node];
    let how_far = if n.matched == p.nodes.len() {
        format!("all {} pattern ops line up from {}, but", n.matched, node(n.anchor))
    } else {
        format!("{} of {} pattern ops matched from {};", n.matched, p.nodes.len(), node(n.anchor))
    };
    format!(
        "closest match: {how_far} the pattern's `{}` ({}) against {}: {}",
        pn.name,
        pn.target,
        node(n.target_node),
        n.reason
    )
}

impl Pattern {
    /// Target nodes that could be the anchor's image, in node order.
    fn candidates<'g>(&self, g: &'g Graph) -> impl Iterator<Item = usize> + 'g {
        let (op, target) = (self.nodes[self.anchor].op, self.nodes[self.anchor].target.clone());
        g.nodes.iter().enumerate().filter(move |(_, n)| n.op == op && n.target == target).map(|(i, _)| i)
    }
}
