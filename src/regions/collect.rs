//! Regions from annotation tags (`node.regions`, written by `tta.lower_as`).

use super::{Origin, Region};
use crate::graph::{Graph, OpKind};
use indexmap::IndexMap;

/// One region per declared tag, ordered by first member. `get_attr` nodes are not members:
/// they only name a constant, which becomes a region input like any other outside value.
/// Placeholders are not members either: strict export creates an input's placeholder lazily,
/// when the traced code first reads it, so an input first read inside a region carries the
/// region's tag, and reading an input does not put it in the region.
pub fn from_annotations(g: &Graph) -> Vec<Region> {
    let mut by_id: IndexMap<&str, Region> = g
        .regions
        .iter()
        .map(|(id, decl)| {
            let region = Region {
                id: id.clone(),
                impl_key: decl.impl_key.clone(),
                origin: Origin::Annotation,
                source: decl.source.clone(),
                members: Vec::new(),
            };
            (id.as_str(), region)
        })
        .collect();
    for (i, node) in g.nodes.iter().enumerate() {
        if matches!(node.op, OpKind::GetAttr | OpKind::Placeholder) {
            continue;
        }
        for tag in &node.regions {
            if let Some(r) = by_id.get_mut(tag.as_str()) {
                r.members.push(i);
            }
        }
    }
    let mut regions: Vec<Region> = by_id.into_values().collect();
    // Without the `with` line (strict export does not record it), locate a region by its first
    // op of its own: an outer region's first op may belong to a region nested in it, and the
    // two would then name the same line.
    for r in &mut regions {
        if r.source.is_none() {
            let own = r.members.iter().find(|&&i| g.nodes[i].regions.len() == 1);
            r.source = own.or(r.members.first()).and_then(|&i| g.nodes[i].source.clone());
        }
    }
    regions.sort_by_key(|r| r.members.first().copied().unwrap_or(usize::MAX));
    regions
}
