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
    /// Other forms of the same pattern (traced in other dtypes, whose conversions differ), with
    /// the same inputs and outputs; an occurrence of any form is an occurrence of the pattern.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub forms: Vec<Graph>,
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
    /// Patterns that occur nowhere, each with its closest partial match.
    pub unmatched: Vec<Unmatched>,
}

/// A pattern that occurs nowhere, and why: where the search got furthest and what differed.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Unmatched {
    pub pattern: String,
    pub closest: String,
}

impl From<Vec<Region>> for Selection {
    fn from(regions: Vec<Region>) -> Self {
        Selection { ports: vec![None; regions.len()], regions, refused: Vec::new(), unmatched: Vec::new() }
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
    let compiled: Vec<Vec<pattern::Pattern>> = sel.patterns.iter().map(pattern::Pattern::compile_all).collect::<Result<_>>()?;
    let found: Vec<pattern::Found> = compiled.par_iter().map(|forms| pattern::find(forms, g, index, dag)).collect();
    for (f, p) in found.into_iter().zip(&sel.patterns) {
        if f.regions.is_empty() && f.refused.is_empty() {
            out.unmatched.push(Unmatched { pattern: p.name.clone(), closest: f.closest });
        }
        out.ports.extend(f.ports.into_iter().map(Some));
        out.regions.extend(f.regions);
        out.refused.extend(f.refused);
    }
    Ok(out)
}

/// Put a boundary's ports in the order a pattern fixes (boundaries otherwise list inputs in
/// first-use order, which depends on the target graph, not on the impl's signature). Ports the
/// pattern does not name (sizes the target computed outside the occurrence) follow, in
/// first-use order.
pub fn apply_order(g: &Graph, b: &mut Boundary, order: &PortOrder) {
    fn permute(g: &Graph, ports: &mut Vec<super::Port>, want: &[usize]) {
        let mut rest: Vec<Option<super::Port>> = std::mem::take(ports).into_iter().map(Some).collect();
        for &w in want {
            let name = g.nodes[w].name.as_str();
            if let Some(p) = rest.iter_mut().find(|p| p.as_ref().is_some_and(|p| p.name == name)) {
                ports.push(p.take().expect("found above"));
            }
        }
        ports.extend(rest.into_iter().flatten());
    }
    permute(g, &mut b.inputs, &order.inputs);
    permute(g, &mut b.outputs, &order.outputs);
}
