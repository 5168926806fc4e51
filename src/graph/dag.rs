//! The dataflow view of a verified graph: petgraph node `i` is graph node `i`, edges run from
//! producer to consumer (one edge per distinct producer). Used for reachability (region
//! convexity) and subgraph matching.

use petgraph::graph::{DiGraph, NodeIndex};
use std::ops::Index;

pub struct Dag {
    pub graph: DiGraph<(), ()>,
    /// Distinct producers of each node, in first-use order.
    pub inputs: Adjacency,
    /// Distinct consumers of each node, in node order.
    pub users: Adjacency,
}

/// A list of node positions per node, all in one buffer: a 100k-node graph's lists would
/// otherwise be 100k small allocations to make and as many to free. `adjacency[i]` is node
/// `i`'s list.
pub struct Adjacency {
    /// Node `i`'s list is `items[starts[i]..starts[i + 1]]`.
    starts: Vec<usize>,
    items: Vec<usize>,
}

impl Adjacency {
    /// The lists of consecutive runs of nodes, each run as its lists' lengths and their items
    /// end to end.
    pub fn from_pieces(pieces: Vec<(Vec<usize>, Vec<usize>)>) -> Adjacency {
        let n: usize = pieces.iter().map(|(lens, _)| lens.len()).sum();
        let mut starts = Vec::with_capacity(n + 1);
        starts.push(0);
        let mut items = Vec::with_capacity(pieces.iter().map(|(_, items)| items.len()).sum());
        for (lens, run) in pieces {
            for len in lens {
                starts.push(starts[starts.len() - 1] + len);
            }
            items.extend_from_slice(&run);
        }
        Adjacency { starts, items }
    }

    /// How many lists (nodes) there are.
    pub fn len(&self) -> usize {
        self.starts.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Index<usize> for Adjacency {
    type Output = [usize];

    fn index(&self, i: usize) -> &[usize] {
        &self.items[self.starts[i]..self.starts[i + 1]]
    }
}

impl Dag {
    /// Build from each node's distinct producers (as `verify` resolves them).
    pub fn from_inputs(inputs: Adjacency) -> Dag {
        let n = inputs.len();
        let edges = inputs.items.len();
        let mut graph = DiGraph::with_capacity(n, edges);
        for _ in 0..n {
            graph.add_node(());
        }
        // Users by counting: each node's count, the running sum as its start, then each edge
        // placed at its producer's next free slot (consumers in node order).
        let mut starts = vec![0usize; n + 1];
        for &j in &inputs.items {
            starts[j + 1] += 1;
        }
        for i in 0..n {
            starts[i + 1] += starts[i];
        }
        let mut next = starts.clone();
        let mut users = vec![0usize; edges];
        for i in 0..n {
            for &j in &inputs[i] {
                users[next[j]] = i;
                next[j] += 1;
                graph.add_edge(NodeIndex::new(j), NodeIndex::new(i), ());
            }
        }
        Dag { graph, inputs, users: Adjacency { starts, items: users } }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn inputs_and_users_are_each_nodes_lists() {
        let pieces = vec![(vec![0, 1, 2], vec![0, 1, 0]), (vec![0, 3], vec![2, 3, 0])];
        let dag = super::Dag::from_inputs(super::Adjacency::from_pieces(pieces));
        let lists = |a: &super::Adjacency| (0..5).map(|i| a[i].to_vec()).collect::<Vec<_>>();
        assert_eq!(lists(&dag.inputs), vec![vec![], vec![0], vec![1, 0], vec![], vec![2, 3, 0]]);
        assert_eq!(lists(&dag.users), vec![vec![1, 2, 4], vec![2], vec![4], vec![4], vec![]]);
        assert_eq!((dag.inputs.len(), dag.users.len(), dag.graph.edge_count()), (5, 5, 6));
    }
}
