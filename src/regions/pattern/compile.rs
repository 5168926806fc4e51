//! A pattern graph prepared for matching: body nodes with their references resolved to
//! indices, the inputs that are used, the outputs, and a static search plan.

use super::selector::PatternSelector;
use crate::error::{Error, ErrorKind, Result};
use crate::expr::{self, Poly};
use crate::graph::{verify, Arg, Dim, Graph, Node, OpKind, Value};
use crate::regions::checks::is_observer;
use std::collections::HashMap;

/// Ops whose first two operands can be swapped without changing the result.
const COMMUTATIVE: &[&str] = &[
    "aten.add.Tensor",
    "aten.mul.Tensor",
    "aten.maximum.default",
    "aten.minimum.default",
    "aten.eq.Tensor",
    "aten.ne.Tensor",
    "aten.logical_and.default",
    "aten.logical_or.default",
    "aten.logical_xor.default",
    "aten.bitwise_and.Tensor",
    "aten.bitwise_or.Tensor",
    "aten.bitwise_xor.Tensor",
    "_operator.add",
    "_operator.mul",
];

/// A pattern argument: a literal, a reference to an input or a body node, or a size.
#[derive(Clone, Debug)]
pub(crate) enum PArg {
    Lit(Arg),
    /// A size the pattern computed from its inputs' dims (index into `Pattern::sizes`): it
    /// matches a target literal or SymInt of the same value under the symbols' binding.
    Size(usize),
    Input(usize),
    Body(usize),
    List(Vec<PArg>),
    Slice(Box<[PArg; 3]>),
}

#[derive(Clone, Debug)]
pub(crate) struct PNode {
    pub name: String,
    pub op: OpKind,
    pub target: String,
    pub args: Vec<PArg>,
    pub kwargs: Vec<(String, PArg)>,
    pub commutative: bool,
}

/// One step of the search. `Expand(p)`: `p`'s image is known; match its arguments.
/// `Forward`: `node` is reached from the image of `via` through its users.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Step {
    Expand(usize),
    Forward { node: usize, via: PRef },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PRef {
    Input(usize),
    Body(usize),
}

/// Dim `dim` of pattern input `input` is the pattern symbol `symbol`.
#[derive(Clone, Debug)]
pub(crate) struct SymbolDim {
    pub symbol: String,
    pub input: usize,
    pub dim: usize,
}

#[derive(Debug)]
pub struct Pattern {
    pub name: String,
    pub impl_key: String,
    pub(crate) nodes: Vec<PNode>,
    /// Names of the placeholders that are pattern inputs, in placeholder order.
    pub(crate) inputs: Vec<String>,
    /// Body indices, in the order the pattern returns them.
    pub(crate) outputs: Vec<usize>,
    pub(crate) is_output: Vec<bool>,
    pub(crate) anchor: usize,
    pub(crate) plan: Vec<Step>,
    /// Size expressions over pattern symbols, read by `PArg::Size`.
    pub(crate) sizes: Vec<Poly>,
    /// Where each pattern symbol is first seen among the inputs' dims: binding an input binds
    /// its symbols to the target producer's dims.
    pub(crate) symbols: Vec<SymbolDim>,
}

fn err(name: &str, node: Option<&Node>, msg: String) -> Error {
    let msg = format!("pattern `{name}`: {msg}");
    match node {
        Some(n) => Error::at(ErrorKind::Input, &n.name, n.source.as_deref(), msg),
        None => Error::new(ErrorKind::Input, msg),
    }
}

impl Pattern {
    /// Each form of the selector (its graph, then its alternative forms) as a pattern.
    pub fn compile_all(sel: &PatternSelector) -> Result<Vec<Pattern>> {
        let forms: Vec<Pattern> = std::iter::once(&sel.graph)
            .chain(&sel.forms)
            .map(|g| Pattern::compile(&sel.name, &sel.impl_key, g))
            .collect::<Result<_>>()?;
        let (i0, o0) = (forms[0].inputs.len(), forms[0].outputs.len());
        if let Some(f) = forms.iter().find(|f| f.inputs.len() != i0 || f.outputs.len() != o0) {
            return Err(err(
                &sel.name,
                None,
                format!(
                    "its forms disagree: one takes {i0} input(s) and returns {o0}, another takes {} and returns {}",
                    f.inputs.len(),
                    f.outputs.len()
                ),
            ));
        }
        Ok(forms)
    }

    pub fn compile(name: &str, impl_key: &str, pg: &Graph) -> Result<Pattern> {
        verify::verify(pg).map_err(|e| err(name, None, format!("the pattern graph is invalid: {e}")))?;
        let mut users = vec![0usize; pg.nodes.len()];
        let pos: HashMap<&str, usize> = pg.nodes.iter().enumerate().map(|(i, n)| (n.name.as_str(), i)).collect();
        for n in &pg.nodes {
            n.refs().for_each(|r| users[pos[r]] += 1);
        }
        let out_node = pg.nodes.last().expect("verified: the output node is last");
        let mut out_pos: Vec<usize> = Vec::new();
        out_node.refs().for_each(|r| out_pos.push(pos[r]));

        // Classify: placeholders are inputs (kept when used), observers are dropped, integer
        // computations (`sym_size`, products of sizes) become size expressions, the rest are
        // body nodes; graph positions -> input / body indices.
        let dim_symbols: Vec<String> = pg
            .nodes
            .iter()
            .filter(|n| n.op == OpKind::Placeholder)
            .filter_map(|n| n.val.as_tensor())
            .flat_map(|t| t.shape.iter())
            .filter_map(|d| match d {
                Dim::Sym(s) => Some(s.clone()),
                Dim::Const(_) => None,
            })
            .collect();
        let mut kind: Vec<Option<PRef>> = vec![None; pg.nodes.len()];
        let mut size_of: HashMap<usize, Poly> = HashMap::new();
        let mut body_pos = Vec::new();
        for (i, n) in pg.nodes.iter().enumerate() {
            match n.op {
                OpKind::Placeholder | OpKind::Output => {}
                OpKind::CallFunction | OpKind::CallMethod => {
                    if !out_pos.contains(&i) && is_observer(n, users[i]) {
                        continue;
                    }
                    // A size that is a function of the inputs' dims; a data-dependent one
                    // (`nonzero`'s count) stays an op matched like any other.
                    if let Some(Ok(p)) = size_value(&n.val) {
                        if !out_pos.contains(&i) && p.symbols().iter().all(|s| dim_symbols.contains(s)) {
                            size_of.insert(i, p);
                            continue;
                        }
                    }
                    if users[i] == 0 {
                        return Err(err(
                            name,
                            Some(n),
                            format!("`{}` is computed but neither used nor returned", n.name),
                        ));
                    }
                    kind[i] = Some(PRef::Body(body_pos.len()));
                    body_pos.push(i);
                }
                other => {
                    return Err(err(
                        name,
                        Some(n),
                        format!(
                            "`{}` is a {} node; patterns hold calls only (pass constants as inputs)",
                            n.name,
                            other.as_str()
                        ),
                    ))
                }
            }
        }
        let mut inputs = Vec::new();
        let mut symbols: Vec<SymbolDim> = Vec::new();
        for (i, n) in pg.nodes.iter().enumerate() {
            let used = body_pos.iter().any(|&b| pg.nodes[b].refs().any(|r| r == n.name));
            if n.op == OpKind::Placeholder && used {
                if let Value::Tensor(t) = &n.val {
                    for (d, dim) in t.shape.iter().enumerate() {
                        if let Dim::Sym(s) = dim {
                            if !symbols.iter().any(|x| &x.symbol == s) {
                                symbols.push(SymbolDim { symbol: s.clone(), input: inputs.len(), dim: d });
                            }
                        }
                    }
                }
                kind[i] = Some(PRef::Input(inputs.len()));
                inputs.push(n.name.clone());
            }
        }
        // Every size must be a function of the inputs' dims, or it could not be bound.
        let mut sizes: Vec<Poly> = Vec::new();
        let mut size_index: HashMap<usize, usize> = HashMap::new();
        for (&i, p) in &size_of {
            if let Some(s) = p.symbols().into_iter().find(|s| !symbols.iter().any(|x| &x.symbol == s)) {
                let n = &pg.nodes[i];
                return Err(err(
                    name,
                    Some(n),
                    format!(
                        "the size `{}` = {p} depends on `{s}`, a dim of an input no operation of the pattern reads",
                        n.name
                    ),
                ));
            }
        }
        for &b in &body_pos {
            pg.nodes[b].refs().for_each(|r| {
                let i = pos[r];
                if let Some(p) = size_of.get(&i) {
                    size_index.entry(i).or_insert_with(|| {
                        sizes.push(p.clone());
                        sizes.len() - 1
                    });
                }
            });
        }
        if body_pos.is_empty() {
            return Err(err(name, None, "the pattern has no operations".into()));
        }
        let mut outputs = Vec::new();
        for &p in &out_pos {
            match kind[p] {
                Some(PRef::Body(b)) if !outputs.contains(&b) => outputs.push(b),
                Some(PRef::Body(_)) => return Err(err(name, None, format!("it returns `{}` twice", pg.nodes[p].name))),
                _ => {
                    return Err(err(
                        name,
                        None,
                        format!("it returns `{}`, which is not computed by the pattern", pg.nodes[p].name),
                    ))
                }
            }
        }
        if outputs.is_empty() {
            return Err(err(name, None, "the pattern returns nothing".into()));
        }

        let nodes: Vec<PNode> = body_pos
            .iter()
            .map(|&i| {
                let n = &pg.nodes[i];
                let conv = |a: &Arg| convert(a, &pos, &kind, &size_index);
                let commutative =
                    COMMUTATIVE.contains(&n.target.as_str()) && n.args.len() >= 2 && !n.kwargs.contains_key("alpha");
                PNode {
                    name: n.name.clone(),
                    op: n.op,
                    target: n.target.clone(),
                    args: n.args.iter().map(conv).collect(),
                    kwargs: n.kwargs.iter().map(|(k, a)| (k.clone(), conv(a))).collect(),
                    commutative,
                }
            })
            .collect();
        let mut is_output = vec![false; nodes.len()];
        outputs.iter().for_each(|&o| is_output[o] = true);
        let anchor = *outputs.iter().max().unwrap();
        let plan = plan(&nodes, anchor).map_err(|b| {
            err(
                name,
                Some(&pg.nodes[body_pos[b]]),
                format!(
                    "it is not connected: `{}` shares no value with the output `{}`",
                    nodes[b].name, nodes[anchor].name
                ),
            )
        })?;
        Ok(Pattern {
            name: name.to_owned(),
            impl_key: impl_key.to_owned(),
            nodes,
            inputs,
            outputs,
            is_output,
            anchor,
            plan,
            sizes,
            symbols,
        })
    }
}

/// The value of an integer-valued node (`Some`), parsed; `None` for every other node.
fn size_value(v: &Value) -> Option<std::result::Result<Poly, expr::ExprError>> {
    match v {
        Value::SymInt(e) => Some(expr::parse(e)),
        Value::Int(c) => Some(Ok(Poly::constant(*c))),
        _ => None,
    }
}

fn convert(a: &Arg, pos: &HashMap<&str, usize>, kind: &[Option<PRef>], sizes: &HashMap<usize, usize>) -> PArg {
    let mut has_ref = false;
    a.for_each_ref(&mut |_| has_ref = true);
    if !has_ref {
        return PArg::Lit(a.clone());
    }
    match a {
        Arg::Ref(r) => {
            let i = pos[r.as_str()];
            match kind[i] {
                Some(PRef::Input(x)) => PArg::Input(x),
                Some(PRef::Body(b)) => PArg::Body(b),
                None => PArg::Size(*sizes.get(&i).expect("body nodes read inputs, body nodes and sizes")),
            }
        }
        Arg::List(items) => PArg::List(items.iter().map(|x| convert(x, pos, kind, sizes)).collect()),
        Arg::Slice(parts) => PArg::Slice(Box::new(parts.clone().map(|x| convert(&x, pos, kind, sizes)))),
        _ => unreachable!("only refs, lists and slices hold references"),
    }
}

fn refs_of(a: &PArg, out: &mut Vec<PRef>) {
    match a {
        PArg::Lit(_) | PArg::Size(_) => {}
        PArg::Input(x) => out.push(PRef::Input(*x)),
        PArg::Body(b) => out.push(PRef::Body(*b)),
        PArg::List(items) => items.iter().for_each(|x| refs_of(x, out)),
        PArg::Slice(parts) => parts.iter().for_each(|x| refs_of(x, out)),
    }
}

pub(crate) fn node_refs(n: &PNode) -> Vec<PRef> {
    let mut out = Vec::new();
    n.args.iter().chain(n.kwargs.iter().map(|(_, a)| a)).for_each(|a| refs_of(a, &mut out));
    out
}

/// The search order: the anchor, then producers breadth first (their images follow from the
/// arguments, so they cost no branching), and only when none is left a node reached forward
/// from a known value through its users. Fails with a body node that nothing reaches.
fn plan(nodes: &[PNode], anchor: usize) -> std::result::Result<Vec<Step>, usize> {
    let mut known = vec![false; nodes.len()];
    let mut bound: Vec<usize> = Vec::new();
    let mut plan = vec![Step::Expand(anchor)];
    known[anchor] = true;
    let mut i = 0;
    loop {
        while i < plan.len() {
            let p = match plan[i] {
                Step::Expand(p) | Step::Forward { node: p, .. } => p,
            };
            for r in node_refs(&nodes[p]) {
                match r {
                    PRef::Body(b) if !known[b] => {
                        known[b] = true;
                        plan.push(Step::Expand(b));
                    }
                    PRef::Input(x) if !bound.contains(&x) => bound.push(x),
                    _ => {}
                }
            }
            i += 1;
        }
        let Some(next) = (0..nodes.len()).find(|&q| !known[q]) else { return Ok(plan) };
        let reach = (0..nodes.len()).filter(|&q| !known[q]).find_map(|q| {
            node_refs(&nodes[q])
                .into_iter()
                .find(|r| match *r {
                    PRef::Body(b) => known[b],
                    PRef::Input(x) => bound.contains(&x),
                })
                .map(|via| (q, via))
        });
        let Some((q, via)) = reach else { return Err(next) };
        known[q] = true;
        plan.push(Step::Forward { node: q, via });
    }
}
