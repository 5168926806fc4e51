//! Step 1 of the pass: verify the graph, choose the candidate regions and validate them.

use crate::error::{Error, ErrorKind, Result};
use crate::graph::{self, Dag, Graph};
use crate::lowering::{ImplDecl, MetaOut};
use crate::regions::candidate::{Candidate, Verdict};
use crate::regions::pattern::Unmatched;
use crate::regions::selectors::{self, Selectors};
use crate::regions::{asserts, boundary, collect, validate, Port};
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::time::Instant;

pub type Impls = IndexMap<String, ImplDecl>;

/// What a `meta_impl` gave for one region: its outputs, or the error it raised.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum MetaResult {
    Ok(Vec<MetaOut>),
    Error(String),
}

/// Milliseconds spent in each step, for the benchmark.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Timings {
    pub parse_ms: f64,
    pub verify_ms: f64,
    /// Module and pattern selectors (part of `analyze_ms`).
    pub select_ms: f64,
    pub analyze_ms: f64,
    pub outline_ms: f64,
}

pub struct Analysis {
    pub graph: Graph,
    pub impls: Impls,
    /// Annotation regions, then selected ones; those a selector refused come last.
    pub candidates: Vec<Candidate>,
    /// Patterns that occur nowhere, with their closest partial match.
    pub unmatched: Vec<Unmatched>,
    pub timings: Timings,
}

/// One region as Python needs it between the two steps.
#[derive(Serialize)]
pub struct RegionSummary<'a> {
    pub id: &'a str,
    #[serde(rename = "impl")]
    pub impl_key: &'a str,
    pub valid: bool,
    pub inputs: &'a [Port],
    pub outputs: &'a [Port],
}

#[derive(Serialize)]
pub struct RegionMembers<'a> {
    pub id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'a str>,
    pub nodes: Vec<&'a str>,
}

pub(super) fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// Parse and analyze graph JSON, recording the parse time too.
pub fn analyze_json(graph_json: &str, impls: Impls, sel: &Selectors) -> Result<Analysis> {
    analyze_parsed(|| graph::from_json(graph_json), impls, sel)
}

/// `analyze_json` on a graph given as a header and one JSON text per node (`graph::from_parts`).
pub fn analyze_parts<S: AsRef<str> + Sync>(
    header: &str,
    nodes: &[S],
    impls: Impls,
    sel: &Selectors,
) -> Result<Analysis> {
    analyze_parsed(|| graph::from_parts(header, nodes), impls, sel)
}

/// `analyze_json` on nodes read already (from the fx graph itself, `src/python/fx.rs`) and a
/// header as in `analyze_parts`; reading them took `read_ms`, counted as the parse.
pub fn analyze_nodes(
    header: &str,
    nodes: graph::Nodes,
    read_ms: f64,
    impls: Impls,
    sel: &Selectors,
) -> Result<Analysis> {
    let mut a = analyze_parsed(
        || {
            let mut g = graph::from_parts::<&str>(header, &[])?;
            g.nodes = nodes;
            Ok(g)
        },
        impls,
        sel,
    )?;
    a.timings.parse_ms += read_ms;
    Ok(a)
}

fn analyze_parsed(parse: impl FnOnce() -> Result<Graph>, impls: Impls, sel: &Selectors) -> Result<Analysis> {
    let t = Instant::now();
    let g = parse()?;
    let parse_ms = ms(t);
    let mut a = analyze(g, impls, sel)?;
    a.timings.parse_ms = parse_ms;
    Ok(a)
}

/// Step 1. `sel` chooses regions besides the annotated ones (`Selectors::default()`: none).
pub fn analyze(g: Graph, impls: Impls, sel: &Selectors) -> Result<Analysis> {
    let t = Instant::now();
    let verified = graph::verify::verify(&g)?;
    let verify_ms = ms(t);

    let t = Instant::now();
    let index = verified.index;
    let dag = Dag::from_inputs(verified.inputs);
    let ts = Instant::now();
    let (selected, unmatched) = selectors::select(&g, &index, &dag, sel)?;
    let select_ms = ms(ts);
    drop(index);
    let mut candidates: Vec<Candidate> = collect::from_annotations(&g).into_iter().map(Candidate::new).collect();
    // Those a selector refused go last (stable), as the report has always listed them.
    let (pending, refused): (Vec<Candidate>, Vec<Candidate>) =
        selected.into_iter().partition(|c| matches!(c.verdict, Verdict::Pending));
    candidates.extend(pending);
    asserts::absorb(&g, &dag, &mut candidates);
    candidates.extend(refused);

    let mut ids = HashSet::new();
    if let Some(c) = candidates.iter().find(|c| !ids.insert(c.region.id.as_str())) {
        return Err(Error::new(
            ErrorKind::Input,
            format!("two regions have the id `{}`; region ids must be unique", c.region.id),
        ));
    }
    validate::validate_all(&g, &dag, &mut candidates, &|r| impls.get(&r.impl_key).is_some_and(|d| d.mutates));
    pin_annotated_ports(&g, &mut candidates);
    for c in &mut candidates {
        if c.boundary().is_some() && !impls.contains_key(&c.region.impl_key) {
            c.refuse(format!("its impl `{}` is not registered with tta", c.region.impl_key));
        }
    }
    let analyze_ms = ms(t);
    Ok(Analysis {
        graph: g,
        impls,
        candidates,
        unmatched,
        timings: Timings { verify_ms, select_ms, analyze_ms, ..Default::default() },
    })
}

/// `lower_as(..., inputs=...)` fixes the order of an annotated region's inputs;
/// `lower_as(..., outputs=...)`, or the return order of a decorated function, that of its outputs.
fn pin_annotated_ports(g: &Graph, candidates: &mut [Candidate]) {
    for c in candidates {
        let Some(decl) = g.regions.get(&c.region.id) else { continue };
        let members = &c.region.members;
        let computed = |name: &str| members.iter().any(|&m| g.nodes[m].name == name);
        let Verdict::Valid(b) = &mut c.verdict else { continue };
        let mut pinned = match &decl.inputs {
            Some(order) => boundary::pin_inputs(b, order),
            None => Ok(()),
        };
        if pinned.is_ok() {
            pinned = match (&decl.outputs, &decl.returns) {
                (Some(order), _) => boundary::pin_outputs(b, order, true, &computed),
                (None, Some(order)) => boundary::pin_outputs(b, order, false, &computed),
                (None, None) => Ok(()),
            };
        }
        if let Err(why) = pinned {
            c.refuse(why);
        }
    }
}

impl Analysis {
    pub fn summary(&self) -> Vec<RegionSummary<'_>> {
        self.candidates
            .iter()
            .map(|c| {
                let (inputs, outputs): (&[Port], &[Port]) = match c.boundary() {
                    Some(b) => (&b.inputs, &b.outputs),
                    None => (&[], &[]),
                };
                RegionSummary {
                    id: &c.region.id,
                    impl_key: &c.region.impl_key,
                    valid: c.boundary().is_some(),
                    inputs,
                    outputs,
                }
            })
            .collect()
    }

    /// Each region's id and member names, and the reason when it was refused before outlining:
    /// what a caller that only looks for regions (inspection tools, benchmarks) needs.
    pub fn members(&self) -> Vec<RegionMembers<'_>> {
        self.candidates
            .iter()
            .map(|c| RegionMembers {
                id: &c.region.id,
                reason: c.reason(),
                nodes: c.region.members.iter().map(|&m| self.graph.nodes[m].name.as_str()).collect(),
            })
            .collect()
    }
}
