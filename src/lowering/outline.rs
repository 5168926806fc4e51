//! Outlining: replace each accepted region by one `tta.<op>.default` call (plus one getitem per
//! output when there are several) and rewire the outside readers.
//!
//! The new node takes the place of the region's last member. That order is valid unless an
//! outside reader of a region output sat between the members; then the graph is re-sorted
//! stably (`order.rs`) and the moves that Python must replay are recorded.

use super::order;
use crate::graph::{Arg, Graph, Node, OpKind, Value};
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
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Move {
    pub node: String,
    pub after: String,
}

pub struct Outlined {
    pub graph: Graph,
    pub edits: Vec<Edit>,
    pub moves: Vec<Move>,
    /// Nodes that are new or read a replaced value: every other node is as it was.
    pub changed: HashSet<String>,
}

/// Consumes the graph: untouched nodes move into the result instead of being copied (a 100k-node
/// graph is mostly untouched).
pub fn outline(g: Graph, accepted: &[Accepted]) -> Outlined {
    // Every name minted here starts with `tta_`; only existing names like that can collide.
    let existing: HashSet<&str> = g.nodes.iter().map(|n| n.name.as_str()).filter(|n| n.starts_with("tta_")).collect();
    let mut minted: HashSet<String> = HashSet::new();
    // Next suffix to try per base: names are only ever added, so the smallest free suffix never
    // goes down, and thousands of regions sharing one base stay linear.
    let mut next_suffix: HashMap<String, usize> = HashMap::new();
    let mut fresh = |base: &str| -> String {
        let k = next_suffix.entry(base.to_owned()).or_insert(0);
        let mut name = if *k == 0 { base.to_owned() } else { format!("{base}_{k}") };
        while existing.contains(name.as_str()) || minted.contains(&name) {
            *k += 1;
            name = format!("{base}_{k}");
        }
        *k += 1;
        minted.insert(name.clone());
        name
    };

    let mut removed = vec![false; g.nodes.len()];
    // Outside readers of region outputs: the only kept nodes whose arguments change.
    let mut rewire = vec![false; g.nodes.len()];
    // Position of a region's last member -> the nodes that replace it.
    let mut insert_at: Vec<(usize, Vec<Node>)> = Vec::with_capacity(accepted.len());
    let mut rename: HashMap<String, String> = HashMap::new();
    let mut edits = Vec::with_capacity(accepted.len());

    for a in accepted {
        let members = &a.region.members;
        let first = &g.nodes[members[0]];
        let call_name = fresh(&format!("tta_{}", a.op.rsplit_once('_').map(|(base, _)| base).unwrap_or(&a.op)));
        let out_vals: Vec<Value> = a
            .boundary
            .outputs
            .iter()
            .map(|p| g.nodes[members.iter().copied().find(|&m| g.nodes[m].name == p.name).unwrap()].val.clone())
            .collect();
        let mutated: Vec<usize> = a.boundary.inputs.iter().enumerate().filter(|(_, p)| p.mutated).map(|(i, _)| i).collect();
        let call = Node {
            name: call_name.clone(),
            op: OpKind::CallFunction,
            target: format!("tta.{}.default", a.op),
            args: a.boundary.inputs.iter().map(|p| Arg::Ref(p.name.clone())).collect(),
            kwargs: Default::default(),
            val: if out_vals.len() == 1 { out_vals[0].clone() } else { Value::Tuple(out_vals.clone()) },
            regions: Vec::new(),
            module: first.module.clone(),
            module_stack: first.module_stack.clone(),
            source: first.source.clone(),
            mutates: mutated.iter().map(|i| i.to_string()).collect(),
            aliases: false,
            weight: false,
        };
        let mut replacement = vec![call];
        let mut getitems = Vec::new();
        if out_vals.len() > 1 {
            for (i, (port, val)) in a.boundary.outputs.iter().zip(out_vals).enumerate() {
                let gi = fresh(&format!("{call_name}_{i}"));
                rename.insert(port.name.clone(), gi.clone());
                getitems.push(gi.clone());
                replacement.push(Node {
                    name: gi,
                    op: OpKind::CallFunction,
                    target: "_operator.getitem".into(),
                    args: vec![Arg::Ref(call_name.clone()), Arg::Int(i as i64)],
                    kwargs: Default::default(),
                    val,
                    regions: Vec::new(),
                    module: first.module.clone(),
                    module_stack: first.module_stack.clone(),
                    source: first.source.clone(),
                    mutates: Vec::new(),
                    aliases: false,
                    weight: false,
                });
            }
        } else {
            rename.insert(a.boundary.outputs[0].name.clone(), call_name.clone());
        }
        for &m in members {
            removed[m] = true;
        }
        for &r in &a.boundary.readers {
            rewire[r] = true;
        }
        let last = *members.last().unwrap();
        insert_at.push((last, replacement));
        edits.push(Edit {
            region: a.region.id.clone(),
            op: a.op.clone(),
            node: call_name,
            inputs: a.boundary.inputs.iter().map(|p| p.name.clone()).collect(),
            outputs: a.boundary.outputs.iter().map(|p| p.name.clone()).collect(),
            getitems,
            mutated,
            after: g.nodes[last].name.clone(),
            remove: members.iter().map(|&m| g.nodes[m].name.clone()).collect(),
        });
    }

    // Assemble in one pass, moving the untouched nodes. Readers of a region output may be
    // anywhere, including another region's new call; the new node sits where the region's last
    // member was, so the order stays valid unless a reader came before that (checked here, and
    // only then is the whole graph re-sorted).
    drop(existing);
    insert_at.sort_unstable_by_key(|(pos, _)| *pos);
    let extra: usize = insert_at.iter().map(|(_, new)| new.len()).sum();
    let mut inserts = insert_at.into_iter().peekable();
    let mut changed: HashSet<String> = HashSet::new();
    let mut placed: HashMap<String, usize> = HashMap::new();
    let mut in_order = true;
    let Graph { format, version, nodes: old, regions } = g;
    let mut nodes = Vec::with_capacity(old.len() + extra);
    let mut place = |mut n: Node, is_new: bool, nodes: &mut Vec<Node>, placed: &mut HashMap<String, usize>| {
        let mut touched = false;
        if is_new || !rename.is_empty() {
            n.map_refs(&mut |r| {
                let new = rename.get(r).cloned()?;
                touched = true;
                in_order &= placed.get(&new).is_some();
                Some(new)
            });
        }
        if touched || is_new {
            changed.insert(n.name.clone());
        }
        if is_new {
            placed.insert(n.name.clone(), nodes.len());
        }
        nodes.push(n);
    };
    for (i, node) in old.into_iter().enumerate() {
        if inserts.peek().is_some_and(|(pos, _)| *pos == i) {
            for n in inserts.next().unwrap().1 {
                place(n, true, &mut nodes, &mut placed);
            }
        }
        if removed[i] {
            continue;
        }
        if rewire[i] {
            place(node, false, &mut nodes, &mut placed);
        } else {
            nodes.push(node);
        }
    }
    drop(place);

    let mut graph = Graph { format, version, nodes, regions };
    // Declarations of regions that no longer tag any node (outlined ones) go away, as they do
    // when Python re-serializes the rewritten fx graph.
    let live: HashSet<&str> = graph.nodes.iter().flat_map(|n| n.regions.iter().map(String::as_str)).collect();
    let keep: Vec<String> = graph.regions.keys().filter(|k| live.contains(k.as_str())).cloned().collect();
    graph.regions.retain(|k, _| keep.contains(k));

    let moves = if in_order { Vec::new() } else { order::legalize(&mut graph) };
    Outlined { graph, edits, moves, changed }
}
