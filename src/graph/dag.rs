//! The dataflow view of a verified graph: petgraph node `i` is graph node `i`, edges run from
//! producer to consumer (one edge per distinct producer). Used for reachability (region
//! convexity) and subgraph matching.

use petgraph::graph::{DiGraph, NodeIndex};

pub struct Dag {
    pub graph: DiGraph<(), ()>,
    /// Distinct producers of each node, in first-use order.
    pub inputs: Vec<Vec<usize>>,
    /// Distinct consumers of each node, in node order.
    pub users: Vec<Vec<usize>>,
}

impl Dag {
    /// Build from each node's distinct producers (as `verify` resolves them).
    pub fn from_inputs(inputs: Vec<Vec<usize>>) -> Dag {
        let n = inputs.len();
        let mut graph = DiGraph::with_capacity(n, n * 2);
        for _ in 0..n {
            graph.add_node(());
        }
        let mut users = vec![Vec::new(); n];
        for (i, ins) in inputs.iter().enumerate() {
            for &j in ins {
                users[j].push(i);
                graph.add_edge(NodeIndex::new(j), NodeIndex::new(i), ());
            }
        }
        Dag { graph, inputs, users }
    }
}
