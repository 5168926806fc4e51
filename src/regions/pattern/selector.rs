//! What a pattern selector is given, and the boundary order an occurrence of it fixes.

use crate::graph::Graph;
use serde::{Deserialize, Serialize};

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

/// A pattern that occurs nowhere, and why: where the search got furthest and what differed.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Unmatched {
    pub pattern: String,
    pub closest: String,
}

/// The boundary order a pattern fixes: producers bound to the pattern's inputs, in pattern
/// input order, and the images of its outputs, in pattern output order (node positions).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortOrder {
    pub inputs: Vec<usize>,
    pub outputs: Vec<usize>,
}
