//! Backtracking search for one embedding of a pattern at a given anchor.
//!
//! The plan (`compile::plan`) visits the anchor, then producers: matching a node's arguments
//! fixes the images of its producers and the bindings of its inputs, so those steps only
//! branch on the operand order of commutative ops. A pattern node that no later node reads
//! (a second output) is reached forward, through the users of a known image. Each anchor
//! therefore costs about the pattern's size, and the whole search is linear in the number of
//! candidate anchors; assignments are undone through a trail on backtracking.

use super::compile::{PArg, PRef, Pattern, Step};
use super::selector::PortOrder;
use crate::expr::{self, Poly};
use crate::graph::verify::NameIndex;
use crate::graph::{Arg, Dag, Dim, Graph, Value};
use crate::regions::checks;
use std::collections::HashMap;

const NONE: usize = usize::MAX;

/// One embedding, as node positions in the target.
#[derive(Clone, Debug)]
pub(crate) struct Occurrence {
    pub anchor: usize,
    /// Ascending.
    pub members: Vec<usize>,
    pub order: PortOrder,
}

/// What the search found at one anchor.
pub(crate) enum AnchorResult {
    Valid(Occurrence),
    /// Every embedding at this anchor is invalid; the first one found and why.
    Invalid(Occurrence, String),
    None,
}

/// Where a search got furthest before failing: for "occurs nowhere", the closest partial match.
#[derive(Clone, Debug)]
pub(crate) struct Near {
    /// Pattern body nodes matched when it failed.
    pub matched: usize,
    /// Plan steps completed (the primary measure of progress).
    pub steps: usize,
    pub anchor: usize,
    pub pattern_node: usize,
    pub target_node: usize,
    pub reason: String,
}

/// One assignment, for undoing it.
#[derive(Clone, Copy, Debug)]
enum Undo {
    Map(usize),
    Bind(usize),
    /// A size comparison queued for `accept`.
    Size,
    /// A literal difference let through by a lenient search.
    Soft,
}

pub(crate) struct Search<'a> {
    pat: &'a Pattern,
    g: &'a Graph,
    index: &'a NameIndex<'a>,
    dag: &'a Dag,
    /// Nodes only checks read (`checks::check_only`).
    checks: &'a [bool],
    /// Nodes taken by earlier occurrences of this pattern.
    pub claimed: Vec<bool>,
    /// Body node -> target node.
    map: Vec<usize>,
    /// Pattern input -> target producer.
    bind: Vec<usize>,
    /// Assignments in the order made, for undoing them.
    trail: Vec<Undo>,
    /// Body nodes mapped so far.
    depth: usize,
    /// Pattern sizes (index into `Pattern::sizes`) and the target values they met, checked once
    /// every input is bound.
    sizes: Vec<(usize, Poly)>,
    /// Parsed symbolic values of target nodes and dims, by node.
    parsed: HashMap<usize, Option<Poly>>,
    anchor_image: usize,
    /// The plan step being matched: progress, for `near`.
    at_step: usize,
    /// Lenient search (for diagnostics only): literals and sizes that differ are noted in
    /// `soft` and let through, so an embedding of the ops shows which literal kept it apart.
    lenient: bool,
    soft: Vec<Near>,
    pub near: Option<Near>,
    valid: Option<Occurrence>,
    invalid: Option<(Occurrence, String)>,
}

fn lit_eq(a: &Arg, b: &Arg) -> bool {
    match (a, b) {
        (Arg::List(xs), Arg::List(ys)) => xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| lit_eq(x, y)),
        (Arg::Slice(xs), Arg::Slice(ys)) => xs.iter().zip(ys.iter()).all(|(x, y)| lit_eq(x, y)),
        (Arg::Opaque(_), _) | (_, Arg::Opaque(_)) | (Arg::Ref(_), _) | (_, Arg::Ref(_)) => false,
        _ => a == b,
    }
}

use crate::regions::checks::at;

fn dim_poly(d: &Dim) -> Option<Poly> {
    match d {
        Dim::Const(c) => Some(Poly::constant(*c)),
        Dim::Sym(s) => expr::parse(s).ok(),
    }
}

impl<'a> Search<'a> {
    /// `claimed`: nodes taken by occurrences found before (of another form of the pattern).
    pub fn new(
        pat: &'a Pattern,
        g: &'a Graph,
        index: &'a NameIndex<'a>,
        dag: &'a Dag,
        checks: &'a [bool],
        claimed: Vec<bool>,
    ) -> Self {
        Search {
            pat,
            g,
            index,
            dag,
            checks,
            claimed,
            map: vec![NONE; pat.nodes.len()],
            bind: vec![NONE; pat.inputs.len()],
            trail: Vec::with_capacity(pat.nodes.len() + pat.inputs.len()),
            depth: 0,
            sizes: Vec::new(),
            parsed: HashMap::new(),
            anchor_image: NONE,
            at_step: 0,
            lenient: false,
            soft: Vec::new(),
            near: None,
            valid: None,
            invalid: None,
        }
    }

    /// The first valid embedding whose anchor image is `t`, avoiding claimed nodes.
    pub fn run_anchor(&mut self, t: usize) -> AnchorResult {
        self.anchor_image = t;
        self.undo(0);
        self.valid = None;
        self.invalid = None;
        if let Some(why) = self.assign_refusal(self.pat.anchor, t) {
            self.note(self.pat.anchor, t, || why);
        }
        if self.assign(self.pat.anchor, t) && self.step(0) {
            return AnchorResult::Valid(self.valid.take().expect("accept() stored it"));
        }
        self.undo(0);
        match self.invalid.take() {
            Some((occ, why)) => AnchorResult::Invalid(occ, why),
            None => AnchorResult::None,
        }
    }

    fn image(&self, r: PRef) -> usize {
        match r {
            PRef::Body(b) => self.map[b],
            PRef::Input(x) => self.bind[x],
        }
    }

    fn in_use(&self, u: usize) -> bool {
        self.trail.iter().any(|&r| match r {
            Undo::Map(b) => self.map[b] == u,
            Undo::Bind(x) => self.bind[x] == u,
            Undo::Size | Undo::Soft => false,
        })
    }

    fn undo(&mut self, mark: usize) {
        while self.trail.len() > mark {
            match self.trail.pop().unwrap() {
                Undo::Map(b) => {
                    self.map[b] = NONE;
                    self.depth -= 1;
                }
                Undo::Bind(x) => self.bind[x] = NONE,
                Undo::Size => {
                    self.sizes.pop();
                }
                Undo::Soft => {
                    self.soft.pop();
                }
            }
        }
    }

    /// Why body node `q` cannot map to target node `u` (None: it can).
    fn assign_refusal(&self, q: usize, u: usize) -> Option<String> {
        let (p, n) = (&self.pat.nodes[q], &self.g.nodes[u]);
        if self.map[q] != NONE {
            return (self.map[q] != u).then(|| {
                format!("the pattern reads `{}` here, which is already matched to {}", p.name, at(self.g, self.map[q]))
            });
        }
        if p.op != n.op || p.target != n.target {
            return Some(format!("it is `{}` where the pattern has `{}`", n.target, p.target));
        }
        if p.args.len() != n.args.len() || p.kwargs.len() != n.kwargs.len() {
            return Some(format!(
                "it has {} argument(s) and {} keyword(s), the pattern's has {} and {}",
                n.args.len(),
                n.kwargs.len(),
                p.args.len(),
                p.kwargs.len()
            ));
        }
        if self.claimed[u] {
            return Some("it is part of another occurrence".into());
        }
        if self.in_use(u) {
            return Some("it is already matched to another pattern node".into());
        }
        None
    }

    /// Map body node `q` to target node `u` when their op, target and arity agree.
    fn assign(&mut self, q: usize, u: usize) -> bool {
        if self.map[q] != NONE {
            return self.map[q] == u;
        }
        if self.assign_refusal(q, u).is_some() {
            return false;
        }
        self.map[q] = u;
        self.depth += 1;
        self.trail.push(Undo::Map(q));
        true
    }

    fn bind_input(&mut self, x: usize, u: usize) -> bool {
        if self.bind[x] != NONE {
            return self.bind[x] == u;
        }
        if self.in_use(u) {
            return false;
        }
        self.bind[x] = u;
        self.trail.push(Undo::Bind(x));
        true
    }

    /// The value of a target size argument: a literal integer or an integer-valued node.
    fn target_size(&mut self, ta: &Arg) -> Option<Poly> {
        match ta {
            Arg::Int(c) => Some(Poly::constant(*c)),
            Arg::Ref(r) => {
                let u = self.index[r.as_str()];
                let g = self.g;
                self.parsed
                    .entry(u)
                    .or_insert_with(|| match &g.nodes[u].val {
                        Value::SymInt(e) => expr::parse(e).ok(),
                        Value::Int(c) => Some(Poly::constant(*c)),
                        _ => None,
                    })
                    .clone()
            }
            _ => None,
        }
    }

    fn unify(&mut self, pa: &PArg, ta: &Arg) -> bool {
        match (pa, ta) {
            (PArg::Lit(l), _) => lit_eq(l, ta),
            (PArg::Size(k), _) => match self.target_size(ta) {
                Some(p) => {
                    self.sizes.push((*k, p));
                    self.trail.push(Undo::Size);
                    true
                }
                None => false,
            },
            (PArg::Input(x), Arg::Ref(r)) => self.bind_input(*x, self.index[r.as_str()]),
            (PArg::Body(b), Arg::Ref(r)) => {
                let u = self.index[r.as_str()];
                match self.assign_refusal(*b, u) {
                    None => self.assign(*b, u),
                    Some(why) => {
                        self.note(*b, u, || why);
                        false
                    }
                }
            }
            (PArg::List(ps), Arg::List(ts)) => ps.len() == ts.len() && ps.iter().zip(ts).all(|(p, t)| self.unify(p, t)),
            (PArg::Slice(ps), Arg::Slice(ts)) => ps.iter().zip(ts.iter()).all(|(p, t)| self.unify(p, t)),
            _ => false,
        }
    }

    fn unify_args(&mut self, q: usize, swap: bool) -> bool {
        let (pat, g) = (self.pat, self.g);
        let (p, n) = (&pat.nodes[q], &g.nodes[self.map[q]]);
        for (k, pa) in p.args.iter().enumerate() {
            let k = if swap && k < 2 { 1 - k } else { k };
            if !self.unify(pa, &n.args[k]) {
                let why = || format!("argument {k} is `{}` where the pattern has `{}`", n.args[k], show(pat, pa));
                if self.lenient && literal(pa) {
                    self.soften(q, why());
                    continue;
                }
                self.note(q, self.map[q], why);
                return false;
            }
        }
        for (key, pa) in &p.kwargs {
            let ok = match n.kwargs.get(key) {
                Some(ta) => self.unify(pa, ta),
                None => false,
            };
            if !ok {
                let got = n.kwargs.get(key).map_or("missing".to_string(), |a| format!("`{a}`"));
                let why = || format!("keyword `{key}` is {got} where the pattern has `{}`", show(pat, pa));
                if self.lenient && literal(pa) && n.kwargs.contains_key(key) {
                    self.soften(q, why());
                    continue;
                }
                self.note(q, self.map[q], why);
                return false;
            }
        }
        true
    }

    /// Remember a failure when the search got further than any before.
    fn note(&mut self, q: usize, u: usize, reason: impl FnOnce() -> String) {
        if self.lenient {
            return;
        }
        if self.near.as_ref().is_none_or(|n| (self.at_step, self.depth) > (n.steps, n.matched)) {
            self.near = Some(Near {
                matched: self.depth,
                steps: self.at_step,
                anchor: self.anchor_image,
                pattern_node: q,
                target_node: u,
                reason: reason(),
            });
        }
    }

    fn soften(&mut self, q: usize, reason: String) {
        let near =
            Near { matched: 0, steps: 0, anchor: self.anchor_image, pattern_node: q, target_node: self.map[q], reason };
        self.soft.push(near);
        self.trail.push(Undo::Soft);
    }

    /// After a search that found nothing: the first embedding of the pattern's ops that only
    /// literals or sizes keep apart, as the closest match (the first difference in plan order).
    pub fn closest_by_ops(&mut self, candidates: impl Iterator<Item = usize>) -> Option<Near> {
        self.lenient = true;
        let mut found = None;
        for t in candidates {
            if self.claimed[t] {
                continue;
            }
            self.anchor_image = t;
            self.undo(0);
            if self.assign(self.pat.anchor, t) && self.step(0) {
                found =
                    self.soft.first().cloned().map(|n| Near { matched: self.depth, steps: self.pat.plan.len(), ..n });
                break;
            }
        }
        self.undo(0);
        self.lenient = false;
        found
    }

    /// Match the arguments of `q` (already mapped), then run the rest of the plan.
    fn expand(&mut self, i: usize, q: usize) -> bool {
        let n = &self.g.nodes[self.map[q]];
        let orders = if self.pat.nodes[q].commutative && n.args[0] != n.args[1] { 2 } else { 1 };
        for swap in 0..orders {
            let mark = self.trail.len();
            if self.unify_args(q, swap == 1) && self.step(i + 1) {
                return true;
            }
            self.undo(mark);
        }
        false
    }

    fn step(&mut self, i: usize) -> bool {
        self.at_step = i;
        let Some(&step) = self.pat.plan.get(i) else { return self.accept() };
        match step {
            Step::Expand(q) => self.expand(i, q),
            Step::Forward { node: q, via } => {
                let dag = self.dag;
                for &u in &dag.users[self.image(via)] {
                    let mark = self.trail.len();
                    if self.assign(q, u) && self.expand(i, q) {
                        return true;
                    }
                    self.undo(mark);
                }
                let n = &self.pat.nodes[q];
                self.note(q, self.image(via), || {
                    format!("no reader of it matches the pattern's `{}` ({})", n.name, n.target)
                });
                false
            }
        }
    }

    /// A complete embedding: valid when only pattern outputs are read outside it (assertion
    /// nodes reading it join it) and every output is. Invalid ones are remembered (the first)
    /// and the search goes on.
    /// The pattern's sizes under the binding of its symbols to the bound inputs' dims.
    fn sizes_agree(&mut self) -> Result<(), String> {
        let (g, pat) = (self.g, self.pat);
        let mut env: HashMap<String, Poly> = HashMap::new();
        for s in &pat.symbols {
            let u = self.bind[s.input];
            let dim = match &g.nodes[u].val {
                Value::Tensor(t) => t.shape.get(s.dim).and_then(dim_poly),
                _ => None,
            };
            let Some(dim) = dim else {
                return Err(format!(
                    "the pattern's input `{}` is bound to {}, which has no dim {}",
                    pat.inputs[s.input],
                    at(g, u),
                    s.dim
                ));
            };
            env.insert(s.symbol.clone(), dim);
        }
        for (k, want) in &self.sizes {
            let have = pat.sizes[*k].substitute(&env).map_err(|e| e.to_string())?;
            if &have != want {
                return Err(format!(
                    "the pattern's size `{}` is `{have}` here, but the graph has `{want}`",
                    pat.sizes[*k]
                ));
            }
        }
        Ok(())
    }

    fn accept(&mut self) -> bool {
        if !self.sizes.is_empty() {
            if let Err(why) = self.sizes_agree() {
                let q = self.pat.anchor;
                if self.lenient {
                    self.soften(q, why);
                } else {
                    self.note(q, self.map[q], || why);
                    return false;
                }
            }
        }
        if self.lenient {
            return !self.soft.is_empty();
        }
        let (g, dag, pat) = (self.g, self.dag, self.pat);
        let mut members = self.map.clone();
        members.sort_unstable();
        let inside = |x: usize| members.binary_search(&x).is_ok();
        // Export's checks of the occurrence's values (assertion chains) join it.
        let mut joined: Vec<usize> = Vec::new();
        let mut why = None;
        let free = |x: usize| !self.claimed[x];
        for chain in checks::chains(dag, self.checks, &members, &inside, &free) {
            if chain.foreign {
                continue;
            }
            if chain.stray.is_none() {
                joined.extend(chain.nodes);
                continue;
            }
            // Reading only the pattern's outputs, it stays outside.
            let hidden =
                chain.reads.iter().find(|&&m| self.map.iter().position(|&t| t == m).is_some_and(|q| !pat.is_output[q]));
            if let Some(&m) = hidden {
                why = why.or_else(|| checks::stray_reason(g, dag, &chain, m, "is no output of the pattern"));
            }
        }
        joined.sort_unstable();
        'nodes: for (q, &t) in self.map.iter().enumerate() {
            let mut read_outside = false;
            for &u in &dag.users[t] {
                if inside(u) || joined.binary_search(&u).is_ok() {
                    continue;
                }
                if pat.is_output[q] {
                    read_outside = true;
                } else {
                    why = why.or_else(|| Some(format!(
                        "{} (pattern node `{}`) is also read by {} outside the occurrence; only the pattern's outputs may be",
                        at(g, t),
                        pat.nodes[q].name,
                        at(g, u)
                    )));
                    break 'nodes;
                }
            }
            if pat.is_output[q] && !read_outside {
                why = why.or_else(|| {
                    Some(format!(
                        "{} (pattern output `{}`) is not used outside the occurrence",
                        at(g, t),
                        pat.nodes[q].name
                    ))
                });
                break;
            }
        }
        members.extend(joined);
        members.sort_unstable();
        let occ = Occurrence {
            anchor: self.map[pat.anchor],
            members,
            order: PortOrder { inputs: self.bind.clone(), outputs: pat.outputs.iter().map(|&o| self.map[o]).collect() },
        };
        match why {
            None => {
                self.valid = Some(occ);
                true
            }
            Some(why) => {
                self.invalid.get_or_insert((occ, why));
                false
            }
        }
    }
}

/// A pattern argument as text: literals as they are, references by the pattern's node names.
fn show(pat: &Pattern, pa: &PArg) -> String {
    match pa {
        PArg::Lit(l) => l.to_string(),
        PArg::Size(k) => pat.sizes[*k].to_string(),
        PArg::Input(x) => format!("%{}", pat.inputs[*x]),
        PArg::Body(b) => format!("%{}", pat.nodes[*b].name),
        PArg::List(items) => format!("[{}]", items.iter().map(|a| show(pat, a)).collect::<Vec<_>>().join(", ")),
        PArg::Slice(p) => format!("slice({}, {}, {})", show(pat, &p[0]), show(pat, &p[1]), show(pat, &p[2])),
    }
}

/// A pattern argument with no references: a difference in it is a difference of literals.
fn literal(pa: &PArg) -> bool {
    match pa {
        PArg::Lit(_) | PArg::Size(_) => true,
        PArg::List(items) => items.iter().all(literal),
        PArg::Slice(p) => p.iter().all(literal),
        PArg::Input(_) | PArg::Body(_) => false,
    }
}
