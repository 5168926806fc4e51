//! Backtracking search for one embedding of a pattern at a given anchor.
//!
//! The plan (`compile::plan`) visits the anchor, then producers: matching a node's arguments
//! fixes the images of its producers and the bindings of its inputs, so those steps only
//! branch on the operand order of commutative ops. A pattern node that no later node reads
//! (a second output) is reached forward, through the users of a known image. Each anchor
//! therefore costs about the pattern's size, and the whole search is linear in the number of
//! candidate anchors; assignments are undone through a trail on backtracking.

use super::compile::{is_observer, PArg, PRef, Pattern, Step};
use super::selector::PortOrder;
use crate::graph::{Arg, Dag, Graph};
use std::collections::HashMap;

const NONE: usize = usize::MAX;

/// One embedding, as node positions in the target.
#[derive(Clone, Debug)]
pub(crate) struct Occurrence {
    pub anchor: usize,
    /// Ascending.
    pub members: Vec<usize>,
    pub ports: PortOrder,
}

pub(crate) enum Outcome {
    Valid(Occurrence),
    /// Every embedding at this anchor is invalid; the first one found and why.
    Invalid(Occurrence, String),
    None,
}

pub(crate) struct Search<'a> {
    pat: &'a Pattern,
    g: &'a Graph,
    index: &'a HashMap<&'a str, usize>,
    dag: &'a Dag,
    /// Nodes taken by earlier occurrences of this pattern.
    pub claimed: Vec<bool>,
    /// Body node -> target node.
    map: Vec<usize>,
    /// Pattern input -> target producer.
    bind: Vec<usize>,
    /// Assignments in the order made, for undoing them.
    trail: Vec<PRef>,
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

/// `name` (target, file:line): how errors point at a target node.
fn at(g: &Graph, i: usize) -> String {
    let n = &g.nodes[i];
    match &n.source {
        Some(src) => format!("`{}` ({}, {})", n.name, n.target, src),
        None => format!("`{}` ({})", n.name, n.target),
    }
}

impl<'a> Search<'a> {
    pub fn new(pat: &'a Pattern, g: &'a Graph, index: &'a HashMap<&'a str, usize>, dag: &'a Dag) -> Self {
        Search {
            pat,
            g,
            index,
            dag,
            claimed: vec![false; g.nodes.len()],
            map: vec![NONE; pat.nodes.len()],
            bind: vec![NONE; pat.inputs.len()],
            trail: Vec::with_capacity(pat.nodes.len() + pat.inputs.len()),
            valid: None,
            invalid: None,
        }
    }

    /// The first valid embedding whose anchor image is `t`, avoiding claimed nodes.
    pub fn run_anchor(&mut self, t: usize) -> Outcome {
        self.undo(0);
        self.valid = None;
        self.invalid = None;
        if self.assign(self.pat.anchor, t) && self.step(0) {
            return Outcome::Valid(self.valid.take().expect("accept() stored it"));
        }
        self.undo(0);
        match self.invalid.take() {
            Some((occ, why)) => Outcome::Invalid(occ, why),
            None => Outcome::None,
        }
    }

    fn image(&self, r: PRef) -> usize {
        match r {
            PRef::Body(b) => self.map[b],
            PRef::Input(x) => self.bind[x],
        }
    }

    fn in_use(&self, u: usize) -> bool {
        self.trail.iter().any(|&r| self.image(r) == u)
    }

    fn undo(&mut self, mark: usize) {
        while self.trail.len() > mark {
            match self.trail.pop().unwrap() {
                PRef::Body(b) => self.map[b] = NONE,
                PRef::Input(x) => self.bind[x] = NONE,
            }
        }
    }

    /// Map body node `q` to target node `u` when their op, target and arity agree.
    fn assign(&mut self, q: usize, u: usize) -> bool {
        if self.map[q] != NONE {
            return self.map[q] == u;
        }
        let (p, n) = (&self.pat.nodes[q], &self.g.nodes[u]);
        if self.claimed[u] || p.op != n.op || p.target != n.target || p.args.len() != n.args.len() || p.kwargs.len() != n.kwargs.len() {
            return false;
        }
        if self.in_use(u) {
            return false;
        }
        self.map[q] = u;
        self.trail.push(PRef::Body(q));
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
        self.trail.push(PRef::Input(x));
        true
    }

    fn unify(&mut self, pa: &PArg, ta: &Arg) -> bool {
        match (pa, ta) {
            (PArg::Lit(l), _) => lit_eq(l, ta),
            (PArg::Input(x), Arg::Ref(r)) => self.bind_input(*x, self.index[r.as_str()]),
            (PArg::Body(b), Arg::Ref(r)) => self.assign(*b, self.index[r.as_str()]),
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
                return false;
            }
        }
        p.kwargs.iter().all(|(key, pa)| n.kwargs.get(key).is_some_and(|ta| self.unify(pa, ta)))
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
                false
            }
        }
    }

    /// A complete embedding: valid when only pattern outputs are read outside it (assertion
    /// nodes reading it join it) and every output is. Invalid ones are remembered (the first)
    /// and the search goes on.
    fn accept(&mut self) -> bool {
        let (g, dag, pat) = (self.g, self.dag, self.pat);
        let mut members = self.map.clone();
        members.sort_unstable();
        let inside = |x: usize| members.binary_search(&x).is_ok();
        let mut joined: Vec<usize> = Vec::new();
        let mut why = None;
        'nodes: for (q, &t) in self.map.iter().enumerate() {
            let mut read_outside = false;
            for &u in &dag.users[t] {
                if inside(u) || joined.contains(&u) {
                    continue;
                }
                if pat.is_output[q] {
                    read_outside = true;
                } else if !self.claimed[u]
                    && is_observer(&g.nodes[u], dag.users[u].len())
                    && dag.inputs[u].iter().all(|&x| inside(x) || self.bind.contains(&x))
                {
                    joined.push(u);
                } else {
                    why = Some(format!(
                        "{} (pattern node `{}`) is also read by {} outside the occurrence; only the pattern's outputs may be",
                        at(g, t),
                        pat.nodes[q].name,
                        at(g, u)
                    ));
                    break 'nodes;
                }
            }
            if pat.is_output[q] && !read_outside {
                why = Some(format!("{} (pattern output `{}`) is not used outside the occurrence", at(g, t), pat.nodes[q].name));
                break;
            }
        }
        members.extend(joined);
        members.sort_unstable();
        let occ = Occurrence {
            anchor: self.map[pat.anchor],
            members,
            ports: PortOrder { inputs: self.bind.clone(), outputs: pat.outputs.iter().map(|&o| self.map[o]).collect() },
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
