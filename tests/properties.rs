//! Properties of the pass and the expression algebra on random inputs (proptest):
//! - on random DAGs with random region sets, the pass never outlines an overlapping, non-convex
//!   or mutually dependent set, and its output verifies;
//! - inlining every outlined node's body back gives the original graph;
//! - op names do not depend on node names, and change when the signature does;
//! - canonical forms evaluate like the expressions they came from; overflow is an error.

mod common;

use proptest::prelude::*;
use serde_json::json;
use std::collections::{HashMap, HashSet};
use tta::graph::{Arg, Graph, Node};
use tta::lowering::{Edit, Status};

// ---- random graphs ----------------------------------------------------------------------------

/// A random DAG: `inputs` placeholders, then call nodes reading 1 to 3 earlier nodes, then the
/// output reading every node nobody reads. Regions: each call node joins region `r{k}` for each
/// bit k set in its mask (mostly one bit or none; several make regions overlap).
#[derive(Clone, Debug)]
struct Spec {
    inputs: usize,
    calls: Vec<(Vec<usize>, u8)>,
    regions: usize,
    dim: i64,
}

fn spec() -> impl Strategy<Value = Spec> {
    (1usize..3, 2usize..16, 1usize..4, 1i64..4).prop_flat_map(|(inputs, n, regions, dim)| {
        let calls = (0..n)
            .map(|i| {
                let avail = inputs + i;
                // Mostly one region or none per node; sometimes several (overlap).
                let mask = prop_oneof![9 => (0u8..4).prop_map(|r| if r == 3 { 0 } else { 1 << r }), 1 => any::<u8>()];
                (prop::collection::vec(0..avail, 1..=3.min(avail).max(1)), mask)
            })
            .collect::<Vec<_>>();
        (Just(inputs), calls, Just(regions), Just(dim)).prop_map(|(inputs, calls, regions, dim)| Spec {
            inputs,
            calls,
            regions,
            dim,
        })
    })
}

const TARGETS: [&str; 3] = ["aten.add.Tensor", "aten.mul.Tensor", "aten.sub.Tensor"];

fn build(s: &Spec, prefix: &str) -> Graph {
    let t = json!({"dtype": "float32", "shape": [s.dim, 4]});
    let name = |i: usize| if i < s.inputs { format!("{prefix}in{i}") } else { format!("{prefix}n{}", i - s.inputs) };
    let mut nodes = Vec::new();
    for i in 0..s.inputs {
        nodes.push(json!({"name": name(i), "op": "placeholder", "target": name(i), "val": t}));
    }
    let mut used = HashSet::new();
    for (k, (args, mask)) in s.calls.iter().enumerate() {
        let i = s.inputs + k;
        let mut refs: Vec<usize> = args.clone();
        refs.dedup();
        used.extend(refs.iter().copied());
        let args: Vec<_> = refs.iter().map(|&a| json!({"ref": name(a)})).collect();
        // Unary relu for one argument, a binary op (second operand repeated if needed) otherwise.
        let (target, args) = if args.len() == 1 {
            ("aten.relu.default".to_string(), args)
        } else {
            (TARGETS[(k + refs.len()) % 3].to_string(), args[..2].to_vec())
        };
        let regions: Vec<String> = (0..s.regions).filter(|r| mask & (1 << r) != 0).map(|r| format!("r{r}")).collect();
        nodes.push(json!({"name": name(i), "op": "call_function", "target": target, "args": args, "val": t, "regions": regions}));
    }
    let sinks: Vec<_> =
        (s.inputs..s.inputs + s.calls.len()).filter(|i| !used.contains(i)).map(|i| json!({"ref": name(i)})).collect();
    nodes.push(json!({"name": format!("{prefix}output"), "op": "output", "target": "output", "args": [sinks]}));
    let decls: serde_json::Map<String, serde_json::Value> =
        (0..s.regions).map(|r| (format!("r{r}"), json!({"impl": "k"}))).collect();
    common::graph_of(serde_json::Value::Array(nodes), serde_json::Value::Object(decls))
}

fn impls() -> tta::pass::Impls {
    common::impls(&[("k", "kern")])
}

/// `reach[a]` holds every node reachable from `a` (a included).
fn reachability(g: &Graph) -> Vec<HashSet<usize>> {
    let pos: HashMap<&str, usize> = g.nodes.iter().enumerate().map(|(i, n)| (n.name.as_str(), i)).collect();
    let mut reach: Vec<HashSet<usize>> = vec![HashSet::new(); g.nodes.len()];
    for i in (0..g.nodes.len()).rev() {
        reach[i].insert(i);
        for (j, n) in g.nodes.iter().enumerate().skip(i + 1) {
            if n.refs().any(|r| pos[r] == i) {
                let r = reach[j].clone();
                reach[i].extend(r);
            }
        }
    }
    reach
}

// ---- the inliner ------------------------------------------------------------------------------

/// Replace every `tta.*` call by the body of its region (the original member nodes, wired to the
/// call's arguments) and every getitem of it by the member it stands for.
fn inline(rewritten: &Graph, original: &Graph, edits: &[Edit]) -> Graph {
    let by_name: HashMap<&str, &Node> = original.nodes.iter().map(|n| (n.name.as_str(), &**n)).collect();
    let edit_of: HashMap<&str, &Edit> = edits.iter().map(|e| (e.node.as_str(), e)).collect();
    // New value name -> the original value it replaces.
    let mut back: HashMap<String, String> = HashMap::new();
    for n in &rewritten.nodes {
        if let Some(e) = edit_of.get(n.name.as_str()) {
            if e.getitems.is_empty() {
                back.insert(n.name.clone(), e.outputs[0].clone());
            }
        }
        if n.target == "_operator.getitem" {
            if let (Some(Arg::Ref(call)), Some(Arg::Int(k))) = (n.args.first(), n.args.get(1)) {
                if let Some(e) = edit_of.get(call.as_str()) {
                    back.insert(n.name.clone(), e.outputs[*k as usize].clone());
                }
            }
        }
    }
    let mut nodes = Vec::new();
    for n in &rewritten.nodes {
        if let Some(e) = edit_of.get(n.name.as_str()) {
            // The call's arguments are the region inputs, in the order of the op's signature.
            let args: HashMap<&str, String> = e
                .inputs
                .iter()
                .zip(&n.args)
                .map(|(port, a)| match a {
                    Arg::Ref(r) => (port.as_str(), back.get(r).cloned().unwrap_or_else(|| r.clone())),
                    _ => panic!("a call argument is a reference"),
                })
                .collect();
            for m in &e.remove {
                let mut body = by_name[m.as_str()].clone();
                body.map_refs(&mut |r| args.get(r).cloned());
                nodes.push(body);
            }
        } else if !back.contains_key(&n.name) {
            let mut n = (**n).clone();
            n.map_refs(&mut |r| back.get(r).cloned());
            nodes.push(n);
        }
    }
    let mut g = Graph::new(nodes);
    g.regions = original.regions.clone();
    g
}

fn without_tags(g: &Graph) -> HashMap<String, Node> {
    g.nodes
        .iter()
        .map(|n| {
            let mut n = (**n).clone();
            n.regions.clear();
            (n.name.clone(), n)
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, .. ProptestConfig::default() })]

    #[test]
    fn never_outlines_an_overlapping_nonconvex_or_mutually_dependent_set(s in spec()) {
        let g = build(&s, "");
        let reach = reachability(&g);
        let o = common::run(g.clone(), impls(), &HashMap::new());
        tta::graph::verify::verify(&o.graph).unwrap();
        let pos: HashMap<&str, usize> = g.nodes.iter().enumerate().map(|(i, n)| (n.name.as_str(), i)).collect();
        let sets: Vec<HashSet<usize>> = o.report.iter()
            .filter(|r| r.status == Status::Outlined)
            .map(|r| r.nodes.iter().map(|n| pos[n.as_str()]).collect())
            .collect();
        for (a, sa) in sets.iter().enumerate() {
            // Convex: no node outside lies on a path between two members.
            for x in 0..g.nodes.len() {
                if sa.contains(&x) { continue; }
                let from_inside = sa.iter().any(|&m| m != x && reach[m].contains(&x));
                let back_inside = sa.iter().any(|&m| reach[x].contains(&m));
                prop_assert!(!(from_inside && back_inside), "region {a} is not convex at {}", g.nodes[x].name);
            }
            for (b, sb) in sets.iter().enumerate().skip(a + 1) {
                prop_assert!(sa.is_disjoint(sb), "regions {a} and {b} overlap");
                let a_to_b = sa.iter().any(|&m| sb.iter().any(|&k| reach[m].contains(&k)));
                let b_to_a = sb.iter().any(|&m| sa.iter().any(|&k| reach[m].contains(&k)));
                prop_assert!(!(a_to_b && b_to_a), "regions {a} and {b} depend on each other");
            }
        }
        // Longer cycles through three or more regions: the quotient graph must order.
        let mut group: Vec<usize> = (0..g.nodes.len()).collect();
        for (k, sa) in sets.iter().enumerate() {
            for &m in sa { group[m] = g.nodes.len() + k; }
        }
        let gpos = |i: usize| group[i];
        let mut edges: HashSet<(usize, usize)> = HashSet::new();
        for (j, n) in g.nodes.iter().enumerate() {
            for r in n.refs() {
                let i = pos[r];
                if gpos(i) != gpos(j) { edges.insert((gpos(i), gpos(j))); }
            }
        }
        let mut dg = petgraph::graph::DiGraph::<(), ()>::new();
        for _ in 0..g.nodes.len() + sets.len() { dg.add_node(()); }
        for &(a, b) in &edges { dg.add_edge(petgraph::graph::NodeIndex::new(a), petgraph::graph::NodeIndex::new(b), ()); }
        prop_assert!(petgraph::algo::toposort(&dg, None).is_ok(), "the outlined regions form a cycle");
    }

    #[test]
    fn inline_after_outline_is_the_identity(s in spec()) {
        let g = build(&s, "");
        let o = common::run(g.clone(), impls(), &HashMap::new());
        let back = inline(&o.graph, &g, &o.edits);
        // Same nodes (region tags aside: outlined regions lose theirs), in a valid order.
        prop_assert_eq!(without_tags(&back), without_tags(&g));
        let mut seen = HashSet::new();
        for n in &back.nodes {
            for r in n.refs() { prop_assert!(seen.contains(r), "{} reads {} before it is defined", n.name, r); }
            seen.insert(n.name.as_str());
        }
    }

    #[test]
    fn op_names_ignore_node_names_and_follow_the_signature(s in spec()) {
        let ops = |g: Graph| -> Vec<Option<String>> {
            common::run(g, impls(), &HashMap::new()).report.into_iter().map(|r| r.op).collect()
        };
        let plain = ops(build(&s, ""));
        prop_assert_eq!(&plain, &ops(build(&s, "renamed_")));
        let wider = ops(build(&Spec { dim: s.dim + 10, ..s.clone() }, ""));
        for (a, b) in plain.iter().zip(&wider) {
            if let (Some(a), Some(b)) = (a, b) { prop_assert_ne!(a, b); }
        }
    }
}

// ---- random expressions -----------------------------------------------------------------------

#[derive(Clone, Debug)]
enum E {
    Sym(usize),
    Int(i64),
    Add(Box<E>, Box<E>),
    Sub(Box<E>, Box<E>),
    Mul(Box<E>, Box<E>),
    Neg(Box<E>),
    /// The divisor is kept positive: a constant >= 1 or a symbol plus one.
    FloorDiv(Box<E>, Divisor),
    CeilDiv(Box<E>, Divisor),
    Mod(Box<E>, Divisor),
    Max(Box<E>, Box<E>),
    Min(Box<E>, Box<E>),
    Pow(Box<E>, u32),
}

#[derive(Clone, Debug)]
enum Divisor {
    Const(i64),
    SymPlusOne(usize),
}

fn expr() -> impl Strategy<Value = E> {
    let leaf = prop_oneof![
        (0usize..3).prop_map(E::Sym),
        prop_oneof![-5i64..20, Just(i64::MAX), Just(i64::MIN + 1), Just(1i64 << 40)].prop_map(E::Int),
    ];
    let divisor = prop_oneof![(1i64..9).prop_map(Divisor::Const), (0usize..3).prop_map(Divisor::SymPlusOne)];
    leaf.prop_recursive(5, 40, 2, move |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| E::Add(a.into(), b.into())),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| E::Sub(a.into(), b.into())),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| E::Mul(a.into(), b.into())),
            inner.clone().prop_map(|a| E::Neg(a.into())),
            (inner.clone(), divisor.clone()).prop_map(|(a, d)| E::FloorDiv(a.into(), d)),
            (inner.clone(), divisor.clone()).prop_map(|(a, d)| E::CeilDiv(a.into(), d)),
            (inner.clone(), divisor.clone()).prop_map(|(a, d)| E::Mod(a.into(), d)),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| E::Max(a.into(), b.into())),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| E::Min(a.into(), b.into())),
            (inner, 0u32..4).prop_map(|(a, n)| E::Pow(a.into(), n)),
        ]
    })
}

fn text(e: &E) -> String {
    let d = |d: &Divisor| match d {
        Divisor::Const(c) => c.to_string(),
        Divisor::SymPlusOne(s) => format!("(s{s} + 1)"),
    };
    let lit = |v: i64| if v < 0 { format!("({v})") } else { v.to_string() };
    match e {
        E::Sym(s) => format!("s{s}"),
        E::Int(v) => lit(*v),
        E::Add(a, b) => format!("({} + {})", text(a), text(b)),
        E::Sub(a, b) => format!("({} - {})", text(a), text(b)),
        E::Mul(a, b) => format!("{}*{}", text(a), text(b)),
        E::Neg(a) => format!("(-{})", text(a)),
        E::FloorDiv(a, b) => format!("FloorDiv({}, {})", text(a), d(b)),
        E::CeilDiv(a, b) => format!("CeilDiv({}, {})", text(a), d(b)),
        E::Mod(a, b) => format!("Mod({}, {})", text(a), d(b)),
        E::Max(a, b) => format!("Max({}, {})", text(a), text(b)),
        E::Min(a, b) => format!("Min({}, {})", text(a), text(b)),
        E::Pow(a, n) => format!("({})**{n}", text(a)),
    }
}

/// The exact value (Python semantics) in i128; None when even i128 overflows.
fn exact(e: &E, env: &[i64; 3]) -> Option<i128> {
    let d = |d: &Divisor| -> i128 {
        match d {
            Divisor::Const(c) => *c as i128,
            Divisor::SymPlusOne(s) => env[*s] as i128 + 1,
        }
    };
    Some(match e {
        E::Sym(s) => env[*s] as i128,
        E::Int(v) => *v as i128,
        E::Add(a, b) => exact(a, env)?.checked_add(exact(b, env)?)?,
        E::Sub(a, b) => exact(a, env)?.checked_sub(exact(b, env)?)?,
        E::Mul(a, b) => exact(a, env)?.checked_mul(exact(b, env)?)?,
        E::Neg(a) => exact(a, env)?.checked_neg()?,
        E::FloorDiv(a, b) => exact(a, env)?.div_euclid(d(b)),
        E::CeilDiv(a, b) => -((-exact(a, env)?).div_euclid(d(b))),
        E::Mod(a, b) => exact(a, env)?.rem_euclid(d(b)),
        E::Max(a, b) => exact(a, env)?.max(exact(b, env)?),
        E::Min(a, b) => exact(a, env)?.min(exact(b, env)?),
        E::Pow(a, n) => exact(a, env)?.checked_pow(*n)?,
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, .. ProptestConfig::default() })]

    #[test]
    fn canonical_forms_evaluate_like_the_expression(e in expr(), env in prop::array::uniform3(prop_oneof![0i64..50, Just(i64::MAX / 2), Just(1i64 << 31)])) {
        let src = text(&e);
        let Some(want) = exact(&e, &env) else { return Ok(()) };
        let parsed = tta::expr::parse(&src);
        let envm: HashMap<String, i64> = (0..3).map(|i| (format!("s{i}"), env[i])).collect();
        let got = parsed.as_ref().map_err(|e| e.clone()).and_then(|p| p.eval(&envm));
        match (i64::try_from(want), &got) {
            // A value that fits: the same value, or an overflow of some intermediate step.
            (Ok(w), Ok(g)) => prop_assert_eq!(w, *g, "{}", src),
            (Ok(_), Err(err)) => prop_assert!(err.0.contains("overflow") || err.0.contains("expands") || err.0.contains("int64"), "{src}: {err}"),
            // A value that does not fit is an error, never a wrapped number.
            (Err(_), Ok(g)) => prop_assert!(false, "{src} = {want} does not fit in int64, but evaluated to {g}"),
            (Err(_), Err(_)) => {}
        }
        // The canonical text means the same thing.
        if let Ok(p) = &parsed {
            let again = tta::expr::parse(&p.to_string()).expect("canonical text parses");
            prop_assert_eq!(&again, p);
            prop_assert_eq!(again.eval(&envm), got);
        }
    }
}

/// The random graphs reach every verdict the properties are about (else they prove little).
#[test]
fn random_graphs_reach_every_kind_of_verdict() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for _ in 0..400 {
        let s = spec().new_tree(&mut runner).unwrap().current();
        let o = common::run(build(&s, ""), impls(), &HashMap::new());
        for r in &o.report {
            let kind = match (&r.status, r.reason.as_deref()) {
                (Status::Outlined, _) => "outlined",
                (_, Some(w)) if w.contains("overlaps") => "overlap",
                (_, Some(w)) if w.contains("not convex") => "nonconvex",
                (_, Some(w)) if w.contains("depend on each other") => "mutual",
                _ => "other",
            };
            *seen.entry(kind).or_default() += 1;
        }
    }
    for kind in ["outlined", "overlap", "nonconvex", "mutual"] {
        assert!(seen.get(kind).copied().unwrap_or(0) > 0, "no {kind} region in {seen:?}");
    }
}
