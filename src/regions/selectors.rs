//! Selector input (`tta.lower_modules`, `tta.lower_pattern`) and what running the selectors
//! yields. Selectors only choose member sets; validation and boundaries are shared with
//! annotation regions (`validate.rs`, `boundary.rs`), so a selected region that is not convex,
//! holds graph I/O or mutates is refused exactly like an annotated one.

use super::{modules, pattern, Boundary, Region};
use crate::error::{Error, ErrorKind, Result};
use crate::graph::{Dag, Graph};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};

/// The `selectors_json` argument of `analyze`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Selectors {
    #[serde(default)]
    pub modules: Vec<ModuleSelector>,
    #[serde(default)]
    pub patterns: Vec<PatternSelector>,
}

/// Exactly one of `type` (the module class as `module.qualname`, compared exactly) or `path`
/// (a dotted module path prefix) is given.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ModuleSelector {
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(rename = "impl")]
    pub impl_key: String,
}

/// A pattern graph (the graph format of docs/graph-format.md): its placeholders are wildcards,
/// its output node names the values the region returns.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PatternSelector {
    pub name: String,
    #[serde(rename = "impl")]
    pub impl_key: String,
    pub graph: Graph,
}

/// The boundary order a pattern fixes: producers bound to the pattern's inputs, in pattern
/// input order, and the images of its outputs, in pattern output order (node positions).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortOrder {
    pub inputs: Vec<usize>,
    pub outputs: Vec<usize>,
}

/// What the selectors chose.
#[derive(Debug, Default)]
pub struct Selection {
    /// Regions to validate together with the annotation regions (overlaps are refused there).
    pub regions: Vec<Region>,
    /// For each of `regions`, the boundary order its pattern fixes (None: first-use order).
    pub ports: Vec<Option<PortOrder>>,
    /// Pattern occurrences refused before validation, with the reason. They overlap no other
    /// occurrence of their pattern and are kept out of the overlap check, so a refusal here
    /// never takes a valid region down with it.
    pub refused: Vec<(Region, String)>,
}

impl From<Vec<Region>> for Selection {
    fn from(regions: Vec<Region>) -> Self {
        Selection { ports: vec![None; regions.len()], regions, refused: Vec::new() }
    }
}

pub fn from_json(text: &str) -> Result<Selectors> {
    serde_json::from_str(text).map_err(|e| Error::new(ErrorKind::Input, format!("selectors: {e}")))
}

/// Run every selector on a verified graph. Patterns are independent and run in parallel.
pub fn select(g: &Graph, index: &HashMap<&str, usize>, dag: &Dag, sel: &Selectors) -> Result<Selection> {
    let mut names = HashSet::new();
    for p in &sel.patterns {
        if !names.insert(p.name.as_str()) {
            return Err(Error::new(ErrorKind::Input, format!("two patterns are named `{}`; pattern names must be unique", p.name)));
        }
    }
    let mut out = Selection::from(modules::select(g, &sel.modules)?);
    let compiled: Vec<pattern::Pattern> = sel.patterns.iter().map(pattern::Pattern::compile).collect::<Result<_>>()?;
    let found: Vec<pattern::Found> = compiled.par_iter().map(|p| p.find(g, index, dag)).collect();
    for f in found {
        out.ports.extend(f.ports.into_iter().map(Some));
        out.regions.extend(f.regions);
        out.refused.extend(f.refused);
    }
    Ok(out)
}

/// Put a boundary's ports in the order a pattern fixes (boundaries otherwise list inputs in
/// first-use order, which depends on the target graph, not on the impl's signature).
pub fn apply_order(g: &Graph, b: &mut Boundary, order: &PortOrder) {
    fn permute(g: &Graph, ports: &mut Vec<super::Port>, want: &[usize]) {
        let name = |k: usize| g.nodes[want[k]].name.as_str();
        if ports.len() != want.len() || (0..want.len()).all(|k| ports[k].name == name(k)) {
            return; // already in order (or not the pattern's ports, which a valid occurrence cannot be)
        }
        let Some(at) = (0..want.len()).map(|k| ports.iter().position(|p| p.name == name(k))).collect::<Option<Vec<usize>>>() else {
            return;
        };
        let mut old: Vec<Option<super::Port>> = std::mem::take(ports).into_iter().map(Some).collect();
        *ports = at.into_iter().map(|i| old[i].take().expect("distinct nodes, distinct ports")).collect();
    }
    permute(g, &mut b.inputs, &order.inputs);
    permute(g, &mut b.outputs, &order.outputs);
}
