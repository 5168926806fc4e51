//! Outlining: replace each accepted region by one `tta.<op>.default` call (plus one getitem per
//! output when there are several) and rewire the outside readers.
//!
//! The new node takes the place of the region's last member. That order is valid unless an
//! outside reader of a region output sat between the members; then the graph is re-sorted
//! stably (`order.rs`) and the moves that Python must replay are recorded.
//!
//! Steps: mint fresh names (`Namer`), build the replacement nodes of each region (`replace`,
//! every node made by one constructor, `derived`), splice them in while moving the untouched
//! nodes (`splice`), and prune the declarations of regions that no longer tag a node.

use super::order::{self, Move};
use crate::graph::{Arg, Graph, Node, Nodes, OpKind, Value};
use crate::regions::{Boundary, Region};
use serde::Serialize;
use std::collections::{HashMap, HashSet};

/// One accepted region, ready to outline.
pub struct Accepted<'a> {
    pub region: &'a Region,
    pub boundary: &'a Boundary,
    pub op: String,
}

/// What Python applies to its fx graph, in this order: for each edit insert the call after
/// `after` (then the getitems), point readers of `outputs` at the replacements, erase `remove`;
/// finally replay `moves` (`node` goes right after `after`).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Edit {
    pub region: String,
    pub op: String,
    pub node: String,
    pub inputs: Vec<String>,
    /// Original region outputs, replaced in order by `getitems` (or by `node` when single).
    pub outputs: Vec<String>,
    pub getitems: Vec<String>,
    /// Positions of inputs the op writes in place.
    pub mutated: Vec<usize>,
    pub after: String,
    pub remove: Vec<String>,
    /// Sizes the region reads that the op derives from an input's shape: `node` is dim `dim`
    /// of input number `input`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub derived: Vec<DerivedEdit>,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct DerivedEdit {
    pub node: String,
    pub input: usize,
    pub dim: usize,
}

/// The rewritten graph, and the edits and moves that make it from the input graph.
pub struct Rewrite {
    pub graph: Graph,
    pub edits: Vec<Edit>,
    pub moves: Vec<Move>,
    /// Per node of `graph`: new, or reads a replaced value. Every other node is as it was.
    pub changed: Vec<bool>,
}

/// Consumes the graph: untouched nodes move into the result instead of being copied (a 100k-node
/// graph is mostly untouched).
pub fn outline(g: Graph, accepted: &[Accepted]) -> Rewrite {
    let mut namer = Namer::new(&g);
    let mut plan = Plan {
        removed: vec![false; g.nodes.len()],
        rewire: vec![false; g.nodes.len()],
        insert_at: Vec::with_capacity(accepted.len()),
        rename: HashMap::new(),
    };
    let edits: Vec<Edit> = accepted.iter().map(|a| replace(&g, a, &mut namer, &mut plan)).collect();
    drop(namer);
    let (mut graph, mut changed, in_order) = splice(g, plan);
    prune_declarations(&mut graph);
    let mut moves = Vec::new();
    if !in_order {
        let (m, order) = order::legalize(&mut graph);
        moves = m;
        if let Some(order) = order {
            changed = order.into_iter().map(|i| changed[i]).collect();
        }
    }
    Rewrite { graph, edits, moves, changed }
}

/// Fresh node names. Every name minted here starts with `tta_`; only existing names like that
/// can collide.
struct Namer<'g> {
    existing: HashSet<&'g str>,
    minted: HashSet<String>,
    /// Next suffix to try per base: names are only ever added, so the smallest free suffix never
    /// goes down, and thousands of regions sharing one base stay linear.
    next_suffix: HashMap<String, usize>,
}

impl<'g> Namer<'g> {
    fn new(g: &'g Graph) -> Self {
        let existing = g.nodes.iter().map(|n| n.name.as_str()).filter(|n| n.starts_with("tta_")).collect();
        Namer { existing, minted: HashSet::new(), next_suffix: HashMap::new() }
    }

    fn fresh(&mut self, base: &str) -> String {
        let k = self.next_suffix.entry(base.to_owned()).or_insert(0);
        let mut name = if *k == 0 { base.to_owned() } else { format!("{base}_{k}") };
        while self.existing.contains(name.as_str()) || self.minted.contains(&name) {
            *k += 1;
            name = format!("{base}_{k}");
        }
        *k += 1;
        self.minted.insert(name.clone());
        name
    }
}

/// What `splice` does to the old node list.
struct Plan {
    removed: Vec<bool>,
    /// Outside readers of region outputs: the only kept nodes whose arguments change.
    rewire: Vec<bool>,
    /// Position of a region's last member -> the nodes that replace it.
    insert_at: Vec<(usize, Vec<Node>)>,
    /// Region output -> the node that now provides it, and the old position it is inserted at
    /// (which tells whether a reader comes after it without a set of placed names).
    rename: HashMap<String, (String, usize)>,
}

/// A node the rewrite makes, placed (module, source line) like the region's first member.
fn derived(name: String, target: String, args: Vec<Arg>, val: Value, like: &Node, mutates: Vec<String>) -> Node {
    Node {
        name,
        op: OpKind::CallFunction,
        target,
        args,
        kwargs: Default::default(),
        val,
        regions: Vec::new(),
        module: like.module.clone(),
        module_stack: like.module_stack.clone(),
        source: like.source.clone(),
        mutates,
        aliases: false,
        weight: false,
        parsed_from: Default::default(),
    }
}

/// Plan the replacement of one region and describe it for Python.
fn replace(g: &Graph, a: &Accepted, namer: &mut Namer, plan: &mut Plan) -> Edit {
    let members = &a.region.members;
    let first = &g.nodes[members[0]];
    let last = *members.last().expect("a valid region has members");
    let call_name = namer.fresh(&format!("tta_{}", a.op.rsplit_once('_').map(|(base, _)| base).unwrap_or(&a.op)));
    let out_vals: Vec<Value> = a
        .boundary
        .outputs
        .iter()
        .map(|p| {
            g.nodes[members.iter().copied().find(|&m| g.nodes[m].name == p.name).expect("an output is a member")]
                .val
                .clone()
        })
        .collect();
    let mutated: Vec<usize> = a.boundary.inputs.iter().enumerate().filter(|(_, p)| p.mutated).map(|(i, _)| i).collect();
    let val = if out_vals.len() == 1 { out_vals[0].clone() } else { Value::Tuple(out_vals.clone()) };
    let args = a.boundary.inputs.iter().map(|p| Arg::Ref(p.name.clone())).collect();
    let call = derived(
        call_name.clone(),
        format!("tta.{}.default", a.op),
        args,
        val,
        first,
        mutated.iter().map(|i| i.to_string()).collect(),
    );
    let mut replacement = vec![call];
    let mut getitems = Vec::new();
    if out_vals.len() > 1 {
        for (i, (port, val)) in a.boundary.outputs.iter().zip(out_vals).enumerate() {
            let gi = namer.fresh(&format!("{call_name}_{i}"));
            plan.rename.insert(port.name.clone(), (gi.clone(), last));
            getitems.push(gi.clone());
            let args = vec![Arg::Ref(call_name.clone()), Arg::Int(i as i64)];
            replacement.push(derived(gi, "_operator.getitem".into(), args, val, first, Vec::new()));
        }
    } else {
        plan.rename.insert(a.boundary.outputs[0].name.clone(), (call_name.clone(), last));
    }
    for &m in members {
        plan.removed[m] = true;
    }
    for &r in &a.boundary.readers {
        plan.rewire[r] = true;
    }
    plan.insert_at.push((last, replacement));
    Edit {
        region: a.region.id.clone(),
        op: a.op.clone(),
        node: call_name,
        inputs: a.boundary.inputs.iter().map(|p| p.name.clone()).collect(),
        outputs: a.boundary.outputs.iter().map(|p| p.name.clone()).collect(),
        getitems,
        mutated,
        after: g.nodes[last].name.clone(),
        remove: members.iter().map(|&m| g.nodes[m].name.clone()).collect(),
        derived: a
            .boundary
            .derived
            .iter()
            .map(|d| DerivedEdit {
                node: d.name.clone(),
                input: a.boundary.inputs.iter().position(|p| p.name == d.input).expect("derived from an input"),
                dim: d.dim,
            })
            .collect(),
    }
}

/// Assemble in one pass, moving the untouched nodes. Readers of a region output may be
/// anywhere, including another region's new call; the new node sits where the region's last
/// member was, so the order stays valid unless a reader came before that (returned as the
/// third value; only then is the whole graph re-sorted). The second value flags, per new
/// position, the nodes that are new or rewired.
///
/// The node list is reused when every replacement can take the slot of a member removed
/// before it (a region has at least as many members as it has replacement nodes, nearly
/// always): on a 100k-node graph a second list is tens of megabytes of fresh memory.
fn splice(g: Graph, plan: Plan) -> (Graph, Vec<bool>, bool) {
    let Plan { removed, rewire, mut insert_at, rename } = plan;
    insert_at.sort_unstable_by_key(|(pos, _)| *pos);
    let Graph { format, version, nodes, regions } = g;
    let mut s = Spliced { changed: Vec::with_capacity(nodes.len()), in_order: true, rename: &rename };
    let nodes = if fits_in_place(&removed, &insert_at) {
        s.in_place(nodes, &removed, &rewire, insert_at)
    } else {
        s.copying(nodes, &removed, &rewire, insert_at)
    };
    (Graph { format, version, nodes, regions }, s.changed, s.in_order)
}

/// What `splice` tracks besides the nodes.
struct Spliced<'a> {
    changed: Vec<bool>,
    in_order: bool,
    rename: &'a HashMap<String, (String, usize)>,
}

impl Spliced<'_> {
    /// Point `n`'s references to region outputs at their replacements; `at` is the old
    /// position `n` is placed at: a replacement inserted at `q` is placed before it exactly
    /// when `q < at` (the node at `q` itself is a removed member). Returns whether any changed.
    fn rewire(&mut self, n: &mut Node, at: usize) -> bool {
        let (rename, in_order) = (self.rename, &mut self.in_order);
        let mut touched = false;
        n.map_refs(&mut |r| {
            let (new, q) = rename.get(r)?;
            touched = true;
            *in_order &= *q < at;
            Some(new.clone())
        });
        if touched {
            n.parsed_from = Default::default(); // no longer its text
        }
        touched
    }

    fn in_place(
        &mut self,
        mut nodes: Nodes,
        removed: &[bool],
        rewire: &[bool],
        inserts: Vec<(usize, Vec<Node>)>,
    ) -> Nodes {
        // Slots [0, w) hold the result so far, [w, i) removed members, [i, ..) what is left.
        let mut w = 0;
        let mut inserts = inserts.into_iter().peekable();
        for i in 0..nodes.len() {
            while let Some((_, new)) = inserts.next_if(|(pos, _)| *pos == i) {
                for mut n in new {
                    self.rewire(&mut n, i);
                    // Into the removed member's box: no new allocation.
                    *nodes[w] = n;
                    self.changed.push(true);
                    w += 1;
                }
            }
            if removed[i] {
                continue;
            }
            if w != i {
                nodes.swap(w, i);
            }
            let touched = rewire[i] && self.rewire(&mut nodes[w], i);
            self.changed.push(touched);
            w += 1;
        }
        nodes.truncate(w);
        nodes
    }

    fn copying(&mut self, old: Nodes, removed: &[bool], rewire: &[bool], inserts: Vec<(usize, Vec<Node>)>) -> Nodes {
        let extra: usize = inserts.iter().map(|(_, new)| new.len()).sum();
        let mut nodes = Vec::with_capacity(old.len() + extra);
        let mut inserts = inserts.into_iter().peekable();
        for (i, mut node) in old.into_iter().enumerate() {
            while let Some((_, new)) = inserts.next_if(|(pos, _)| *pos == i) {
                for mut n in new {
                    self.rewire(&mut n, i);
                    nodes.push(Box::new(n));
                    self.changed.push(true);
                }
            }
            if removed[i] {
                continue;
            }
            let touched = rewire[i] && self.rewire(&mut node, i);
            self.changed.push(touched);
            nodes.push(node);
        }
        nodes
    }
}

/// Whether each replacement finds a removed member's slot before its position.
fn fits_in_place(removed: &[bool], inserts: &[(usize, Vec<Node>)]) -> bool {
    let mut free = 0usize;
    let mut inserts = inserts.iter().peekable();
    for (i, &gone) in removed.iter().enumerate() {
        while let Some((_, new)) = inserts.next_if(|(pos, _)| *pos == i) {
            if new.len() > free {
                return false;
            }
            free -= new.len();
        }
        free += usize::from(gone);
    }
    true
}

/// Declarations of regions that no longer tag any node (outlined ones) go away, as they do when
/// Python re-serializes the rewritten fx graph.
fn prune_declarations(graph: &mut Graph) {
    let live: HashSet<&str> = graph.nodes.iter().flat_map(|n| n.regions.iter().map(String::as_str)).collect();
    let keep: HashSet<String> = graph.regions.keys().filter(|k| live.contains(k.as_str())).cloned().collect();
    graph.regions.retain(|k, _| keep.contains(k));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::Value;

    fn node(name: &str, args: &[&str]) -> Node {
        let like = Node {
            name: String::new(),
            op: OpKind::CallFunction,
            target: String::new(),
            args: Vec::new(),
            kwargs: Default::default(),
            val: Value::None,
            regions: Vec::new(),
            module: None,
            module_stack: Vec::new(),
            source: None,
            mutates: Vec::new(),
            aliases: false,
            weight: false,
            parsed_from: Default::default(),
        };
        derived(
            name.into(),
            "aten.relu.default".into(),
            args.iter().map(|a| Arg::Ref(a.to_string())).collect(),
            Value::None,
            &like,
            Vec::new(),
        )
    }

    /// Nodes, region members, kept outputs, insertions and renames of one outline case.
    type Case = (Vec<Node>, Vec<bool>, Vec<bool>, Vec<(usize, Vec<Node>)>, HashMap<String, (String, usize)>);

    /// a -> [b, c] -> d: the region {b, c} becomes `k` new nodes at c's position.
    fn case(k: usize) -> Case {
        let nodes = vec![node("a", &[]), node("b", &["a"]), node("c", &["b"]), node("d", &["c", "a"])];
        let new: Vec<Node> = (0..k).map(|i| node(&format!("t{i}"), &["a"])).collect();
        let rename = HashMap::from([("c".to_string(), (format!("t{}", k - 1), 2))]);
        (nodes, vec![false, true, true, false], vec![false, false, false, true], vec![(2, new)], rename)
    }

    #[test]
    fn both_ways_of_splicing_agree_and_the_list_is_reused_when_it_fits() {
        for k in 1..=3 {
            let (nodes, removed, rewire, inserts, rename) = case(k);
            let nodes: Nodes = nodes.into_iter().map(Box::new).collect();
            assert_eq!(fits_in_place(&removed, &inserts), k == 1, "k = {k}");
            let mut a = Spliced { changed: Vec::new(), in_order: true, rename: &rename };
            let mut b = Spliced { changed: Vec::new(), in_order: true, rename: &rename };
            let copied = a.copying(nodes.clone(), &removed, &rewire, inserts.clone());
            let names: Vec<&str> = copied.iter().map(|n| n.name.as_str()).collect();
            let want: Vec<String> = ["a"]
                .into_iter()
                .map(String::from)
                .chain((0..k).map(|i| format!("t{i}")))
                .chain(["d".into()])
                .collect();
            assert_eq!(names, want);
            assert_eq!(copied.last().unwrap().args[0], Arg::Ref(format!("t{}", k - 1)));
            assert!(a.in_order && a.changed == [vec![false], vec![true; k], vec![true]].concat());
            if k == 1 {
                assert_eq!(b.in_place(nodes, &removed, &rewire, inserts), copied);
                assert_eq!((a.changed, a.in_order), (b.changed, b.in_order));
            }
        }
    }
}
