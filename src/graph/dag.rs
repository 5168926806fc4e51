//! The dataflow view of a verified graph: petgraph node `i` is graph node `i`, edges run from
//! producer to consumer (one edge per distinct producer). Used for reachability (region
//! convexity) and subgraph matching.

use super::ir::Graph;
use petgraph::graph::{DiGraph, NodeIndex};
use std::collections::HashMap;

pub struct Dag {
    pub graph: DiGraph<(), ()>,
    /// Distinct producers of each node, in first-use order.
    pub inputs: Vec<Vec<usize>>,
    /// Distinct consumers of each node, in node order.
    pub users: Vec<Vec<usize>>,
}

impl Dag {
    /// Build from a graph whose references were verified (`index` maps names to positions).
    pub fn build(g: &Graph, index: &HashMap<&str, usize>) -> Dag {
        let n = g.nodes.len();
        let mut graph = DiGraph::with_capacity(n, n * 2);
        for _ in 0..n {
            graph.add_node(());
        }
        let mut inputs = vec![Vec::new(); n];
        let mut users = vec![Vec::new(); n];
        for (i, node) in g.nodes.iter().enumerate() {
            let ins: &mut Vec<usize> = &mut inputs[i];
            node.args.iter().chain(node.kwargs.values()).for_each(|a| {
                a.for_each_ref(&mut |r| {
                    let j = index[r];
                    if !ins.contains(&j) {
                        ins.push(j);
                    }
                })
            });
            for &j in ins.iter() {
                users[j].push(i);
                graph.add_edge(NodeIndex::new(j), NodeIndex::new(i), ());
            }
        }
        Dag { graph, inputs, users }
    }
}
