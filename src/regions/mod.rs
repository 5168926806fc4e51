//! Region instances: which nodes each one holds, where it came from, and whether it can be
//! outlined. Selectors (`collect` for annotation tags; `modules` for module types and paths;
//! `pattern` for subgraph patterns, both driven by `selectors`) only produce member sets;
//! validation and boundary computation are shared by all of them. Each region travels through
//! the pass as one `candidate::Candidate` (region, port order, verdict).

pub mod asserts;
pub mod boundary;
pub mod candidate;
pub mod checks;
pub mod collect;
pub mod modules;
pub mod pattern;
pub mod selectors;
pub mod validate;

use crate::graph::{Dim, TensorMeta};
use serde::Serialize;

/// How a region was chosen.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Origin {
    /// `with tta.lower_as(...)`
    Annotation,
    /// Every instance of a module type or path prefix (`tta.lower_modules`).
    Module { selector: String, path: String },
    /// An occurrence of a subgraph pattern (`tta.lower_pattern`).
    Pattern { pattern: String },
}

/// One region instance, before validation.
#[derive(Clone, Debug)]
pub struct Region {
    pub id: String,
    pub impl_key: String,
    pub origin: Origin,
    /// `file:line` of the `with` statement when known, else of the first member's user frame.
    pub source: Option<String>,
    /// Member node positions, ascending.
    pub members: Vec<usize>,
}

/// A value crossing the region boundary.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Port {
    /// The node producing the value (outside the region for inputs, inside for outputs).
    pub name: String,
    #[serde(flatten)]
    pub kind: PortKind,
    /// The region writes this input in place (only with an impl that declares mutation).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub mutated: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PortKind {
    /// `shape`: ints and symbolic expressions, as in the graph format.
    Tensor { dtype: String, shape: Vec<Dim> },
    /// A symbolic or constant integer produced outside the region (e.g. `sym_size`).
    SymInt { expr: String },
}

impl PortKind {
    pub fn tensor(t: &TensorMeta) -> PortKind {
        PortKind::Tensor { dtype: t.dtype.clone(), shape: t.shape.clone() }
    }
}

/// The boundary of a valid region.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Boundary {
    /// Values read from outside, in order of first use.
    pub inputs: Vec<Port>,
    /// Member values read outside (by other nodes or the graph output), in node order.
    pub outputs: Vec<Port>,
    /// Positions of the outside nodes that read an output: the only nodes outlining rewires.
    #[serde(skip)]
    pub readers: Vec<usize>,
    /// Symbolic sizes the region reads that are dims of its own tensor inputs: the plugin
    /// derives them from the input's shape instead of taking them as inputs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub derived: Vec<DerivedSize>,
}

/// A size read from outside that is dim `dim` of the tensor input `input`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DerivedSize {
    /// The node producing the size (outside the region, e.g. `sym_size`).
    pub name: String,
    /// The tensor input it is a dim of (a node name).
    pub input: String,
    pub dim: usize,
}
