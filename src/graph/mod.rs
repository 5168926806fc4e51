//! Graph IR, its JSON codec, the verifier and the petgraph view.

mod codec;
pub mod dag;
pub mod display;
pub mod ir;
pub mod verify;

pub use dag::Dag;
pub use ir::*;

use crate::error::{Error, ErrorKind, Result};

/// Parse graph JSON (the format of docs/graph-format.md).
pub fn from_json(text: &str) -> Result<Graph> {
    // Small lists keep the spare capacity parsing leaves (JSON arrays carry no length): giving
    // it back reallocates nearly every list, which costs more than the whole parse.
    serde_json::from_str(text).map_err(|e| Error::new(ErrorKind::Parse, format!("graph JSON: {e}")))
}

pub fn to_json(g: &Graph) -> String {
    serde_json::to_string(g).expect("graph serialization cannot fail")
}
