//! The last stage of the pipeline, a verifier of the host's side: Python replays the pass's
//! edits on its fx graph, and the edited graph must equal the graph the pass produced before
//! the rewrite counts as done. `check_delta` compares only what can have changed (cheap);
//! `check_matches` compares a full re-serialization.

use super::outline::Outcome;
use crate::error::{Error, ErrorKind, Result};
use crate::graph::{Graph, Node};
use std::collections::HashMap;

/// What Python sends for the cheap check: the rewritten fx graph's node order, and the
/// re-serialized nodes that differ (by object identity) from what it serialized before.
pub struct Delta {
    pub order: Vec<String>,
    pub nodes: HashMap<String, Node>,
}

fn mismatch(message: String) -> Error {
    Error::new(ErrorKind::Mismatch, message)
}

fn same_length(theirs: usize, ours: usize) -> Result<()> {
    if theirs != ours {
        return Err(mismatch(format!("the rewritten fx graph has {theirs} nodes, the pass produced {ours}")));
    }
    Ok(())
}

fn node_differs(i: usize, theirs: &Node, ours: &Node) -> Error {
    mismatch(format!(
        "node #{i} differs:\n  fx:   {}\n  pass: {}",
        serde_json::to_string(theirs).unwrap(),
        serde_json::to_string(ours).unwrap()
    ))
}

impl Outcome {
    /// The same verdict as `check_matches` without a full re-serialization: the order must
    /// match, every node the pass changed must come back re-serialized and equal, and no other
    /// node may have changed on the Python side.
    pub fn check_delta(&self, delta: &Delta) -> Result<()> {
        same_length(delta.order.len(), self.graph.nodes.len())?;
        for (i, (name, node)) in delta.order.iter().zip(&self.graph.nodes).enumerate() {
            if name != &node.name {
                return Err(mismatch(format!(
                    "node #{i} is `{name}` in the fx graph but `{}` in the pass's graph",
                    node.name
                )));
            }
            match (self.changed[i], delta.nodes.get(name)) {
                (true, Some(theirs)) if theirs == &**node => {}
                (true, Some(theirs)) => return Err(node_differs(i, theirs, node)),
                (true, None) => {
                    return Err(mismatch(format!(
                        "node `{name}` should have changed but the fx graph did not change it"
                    )))
                }
                (false, Some(_)) => {
                    return Err(mismatch(format!(
                        "node `{name}` changed in the fx graph but the pass did not change it"
                    )))
                }
                (false, None) => {}
            }
        }
        Ok(())
    }

    /// Compare Python's re-serialized graph with ours; the error names the first difference.
    pub fn check_matches(&self, other: &Graph) -> Result<()> {
        same_length(other.nodes.len(), self.graph.nodes.len())?;
        if let Some((i, (a, b))) = other.nodes.iter().zip(&self.graph.nodes).enumerate().find(|(_, (a, b))| a != b) {
            return Err(node_differs(i, a, b));
        }
        if other.regions != self.graph.regions {
            return Err(mismatch("the region declarations differ".into()));
        }
        Ok(())
    }
}
