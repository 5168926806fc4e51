//! The last stage of the pipeline, a verifier of the host's side: Python replays the pass's
//! edits on its fx graph, and the edited graph must equal the graph the pass produced before
//! the rewrite counts as done. `check_delta` compares only what can have changed (cheap);
//! `check_matches` compares a full re-serialization.

use super::outline::Outcome;
use crate::error::{Error, ErrorKind, Result};
use crate::graph::Graph;
use serde::Deserialize;
use std::collections::HashMap;

/// What Python sends for the cheap check: the rewritten fx graph's node order, and the
/// re-serialized nodes that differ (by object identity) from what it serialized before.
#[derive(Deserialize)]
pub struct Delta {
    pub order: Vec<String>,
    pub nodes: HashMap<String, crate::graph::Node>,
}

impl Outcome {
    /// The same verdict as `check_matches` without a full re-serialization: the order must
    /// match, every node the pass changed must come back re-serialized and equal, and no other
    /// node may have changed on the Python side.
    pub fn check_delta(&self, delta: &Delta) -> Result<()> {
        let mismatch = |m: String| Err(Error::new(ErrorKind::Mismatch, m));
        if delta.order.len() != self.graph.nodes.len() {
            return mismatch(format!(
                "the rewritten fx graph has {} nodes, the pass produced {}",
                delta.order.len(),
                self.graph.nodes.len()
            ));
        }
        for (i, (name, node)) in delta.order.iter().zip(&self.graph.nodes).enumerate() {
            if name != &node.name {
                return mismatch(format!("node #{i} is `{name}` in the fx graph but `{}` in the pass's graph", node.name));
            }
            match (self.changed[i], delta.nodes.get(name)) {
                (true, Some(theirs)) if theirs == node => {}
                (true, Some(theirs)) => {
                    return mismatch(format!(
                        "node #{i} differs:\n  fx:   {}\n  pass: {}",
                        serde_json::to_string(theirs).unwrap(),
                        serde_json::to_string(node).unwrap()
                    ))
                }
                (true, None) => return mismatch(format!("node `{name}` should have changed but the fx graph did not change it")),
                (false, Some(_)) => return mismatch(format!("node `{name}` changed in the fx graph but the pass did not change it")),
                (false, None) => {}
            }
        }
        Ok(())
    }

    /// Compare Python's re-serialized graph with ours; the error names the first difference.
    pub fn check_matches(&self, other: &Graph) -> Result<()> {
        let mismatch = |m: String| Err(Error::new(ErrorKind::Mismatch, m));
        if other.nodes.len() != self.graph.nodes.len() {
            return mismatch(format!(
                "the rewritten fx graph has {} nodes, the pass produced {}",
                other.nodes.len(),
                self.graph.nodes.len()
            ));
        }
        for (i, (a, b)) in other.nodes.iter().zip(&self.graph.nodes).enumerate() {
            if a != b {
                return mismatch(format!(
                    "node #{i} differs:\n  fx:   {}\n  pass: {}",
                    serde_json::to_string(a).unwrap(),
                    serde_json::to_string(b).unwrap()
                ));
            }
        }
        if other.regions != self.graph.regions {
            return mismatch("the region declarations differ".into());
        }
        Ok(())
    }
}
