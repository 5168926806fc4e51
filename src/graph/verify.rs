//! The graph verifier: everything later passes rely on, checked once, each error naming its node.
//!
//! Invariants: the format and version are ours; node names are unique; every reference names a
//! node defined earlier (which also makes the graph acyclic, since edges only point backwards);
//! exactly one `output` node, and it is last; dtypes are known; symbolic dimensions parse; every
//! region tag is declared.

use super::dag::Adjacency;
use super::ir::{Dim, Graph, Node, OpKind, Value, FORMAT, VERSION};
use crate::error::{Error, ErrorKind, Result};
use crate::expr;
use std::collections::hash_map::Entry;
use std::collections::HashMap;

/// Node name -> position. Names are short and looked up once per argument of every node:
/// a fast non-cryptographic hash (the graph comes from the user's own program).
pub type NameIndex<'a> = HashMap<&'a str, usize, foldhash::fast::RandomState>;

/// torch dtypes by the name `str(dtype)` gives without the `torch.` prefix.
pub const KNOWN_DTYPES: &[&str] = &[
    "float32",
    "float64",
    "float16",
    "bfloat16",
    "complex32",
    "complex64",
    "complex128",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "int8",
    "int16",
    "int32",
    "int64",
    "bool",
    "float8_e4m3fn",
    "float8_e4m3fnuz",
    "float8_e5m2",
    "float8_e5m2fnuz",
    "float8_e8m0fnu",
    "float4_e2m1fn_x2",
    "qint8",
    "quint8",
    "qint32",
];

fn err(node: &Node, message: impl Into<String>) -> Error {
    Error::at(ErrorKind::Verify, &node.name, node.source.as_deref(), message)
}

/// What verification resolved on the way: the name -> position index, and each node's distinct
/// producers in first-use order (the dataflow edges, so `Dag` needs no second lookup pass).
pub struct Verified<'a> {
    pub index: NameIndex<'a>,
    pub inputs: Adjacency,
}

/// Check every invariant. The first error in node order is the one reported, as when the
/// nodes are checked one after another; past the names (one index, built in order), each
/// node's checks run in parallel on large graphs.
pub fn verify(g: &Graph) -> Result<Verified<'_>> {
    let (index, inputs) = verify_nodes(g, None)?;
    Ok(Verified { index, inputs })
}

/// `verify` on a graph a pass rewrote from a verified one: `changed` marks the nodes it made or
/// rewired. Every node's name, references and region tags are checked as `verify` checks them;
/// values only on changed nodes (the others' are as verified before); no producers are
/// collected.
pub fn verify_rewritten(g: &Graph, changed: &[bool]) -> Result<()> {
    verify_nodes(g, Some(changed)).map(drop)
}

fn verify_nodes<'g>(g: &'g Graph, changed: Option<&[bool]>) -> Result<(NameIndex<'g>, Adjacency)> {
    if g.format != FORMAT || g.version != VERSION {
        return Err(Error::new(
            ErrorKind::Parse,
            format!("expected format {FORMAT:?} version {VERSION}, got {:?} version {}", g.format, g.version),
        ));
    }
    let mut index = NameIndex::with_capacity_and_hasher(g.nodes.len(), Default::default());
    // The first node whose name is empty or taken, and why: checked after the nodes before it.
    let mut bad_name = None;
    for (i, node) in g.nodes.iter().enumerate() {
        if node.name.is_empty() {
            bad_name = Some((i, Error::new(ErrorKind::Verify, format!("node #{i} has an empty name"))));
            break;
        }
        match index.entry(node.name.as_str()) {
            Entry::Vacant(slot) => {
                slot.insert(i);
            }
            Entry::Occupied(_) => {
                bad_name = Some((i, err(node, "the name is used by more than one node")));
                break;
            }
        }
    }
    let named = bad_name.as_ref().map_or(g.nodes.len(), |(i, _)| *i);
    let inputs = match changed {
        None => {
            // In runs of nodes, each run's producer lists in one buffer (`Adjacency`).
            let runs: Vec<std::ops::Range<usize>> =
                (0..named).step_by(NODES_PER_RUN).map(|s| s..(s + NODES_PER_RUN).min(named)).collect();
            let pieces = crate::par::try_map(&runs, |_, run| {
                let mut lens = Vec::with_capacity(run.len());
                let mut items = Vec::with_capacity(run.len() * 2);
                for i in run.clone() {
                    let before = items.len();
                    check_node(g, &index, i, &g.nodes[i], true, Some(&mut items))?;
                    lens.push(items.len() - before);
                }
                Ok::<_, Error>((lens, items))
            })?;
            Adjacency::from_pieces(pieces)
        }
        Some(changed) => {
            crate::par::first_err(&g.nodes[..named], |i, node| {
                check_node(g, &index, i, node, changed.get(i).copied().unwrap_or(true), None)
            })?;
            Adjacency::from_pieces(Vec::new())
        }
    };
    if let Some((_, e)) = bad_name {
        return Err(e);
    }
    let outputs = g.nodes.iter().filter(|n| n.op == OpKind::Output).count();
    if outputs != 1 {
        return Err(Error::new(ErrorKind::Verify, format!("a graph has exactly one output node, found {outputs}")));
    }
    Ok((index, inputs))
}

/// Nodes per run of `verify`'s parallel checks.
const NODES_PER_RUN: usize = 2048;

/// One node's checks given every name before it: its references and region tags, and with
/// `contents` its value. With `producers`, its distinct producers in first-use order are
/// appended there.
fn check_node(
    g: &Graph,
    index: &NameIndex<'_>,
    i: usize,
    node: &Node,
    contents: bool,
    mut producers: Option<&mut Vec<usize>>,
) -> Result<()> {
    let mut bad_ref = None;
    let start = producers.as_ref().map_or(0, |p| p.len());
    node.args.iter().chain(node.kwargs.values()).for_each(|a| {
        a.for_each_ref(&mut |r| match index.get(r) {
            Some(&j) if j < i => {
                if let Some(p) = producers.as_deref_mut() {
                    if !p[start..].contains(&j) {
                        p.push(j);
                    }
                }
            }
            _ => {
                if bad_ref.is_none() {
                    bad_ref = Some(r.to_owned());
                }
            }
        })
    });
    if let Some(r) = bad_ref {
        let why = if r == node.name { "refers to itself" } else { "is not defined before it is used" };
        return Err(err(node, format!("argument `{r}` {why}")));
    }
    if node.op == OpKind::Output && i + 1 != g.nodes.len() {
        return Err(err(node, "the output node must be the last node"));
    }
    if contents {
        verify_value(node, &node.val)?;
    }
    for r in &node.regions {
        if !g.regions.contains_key(r) {
            return Err(err(node, format!("region tag `{r}` has no declaration in the graph's regions")));
        }
    }
    Ok(())
}

fn verify_value(node: &Node, v: &Value) -> Result<()> {
    match v {
        Value::Tensor(t) => {
            if !KNOWN_DTYPES.contains(&t.dtype.as_str()) {
                return Err(err(node, format!("unknown dtype `{}`", t.dtype)));
            }
            for d in t.shape.iter().chain(t.stride.iter().flatten()) {
                if let Dim::Sym(e) = d {
                    expr::parse(e).map_err(|x| err(node, format!("shape expression `{e}` does not parse: {x}")))?;
                }
            }
            Ok(())
        }
        Value::SymInt(e) => {
            expr::parse(e).map_err(|x| err(node, format!("symbolic value `{e}` does not parse: {x}")))?;
            Ok(())
        }
        Value::Tuple(items) => items.iter().try_for_each(|x| verify_value(node, x)),
        _ => Ok(()),
    }
}
