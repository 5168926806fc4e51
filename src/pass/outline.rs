//! Step 2 of the pass: decide each valid region (signature against its impl and meta outputs,
//! op name), outline the accepted ones, verify the result and report on every candidate.

use super::analyze::{ms, Analysis, Impls, MetaResult, Timings};
use crate::error::{Error, ErrorKind, Result};
use crate::graph::{self, Graph};
use crate::lowering::outline::{self, Accepted};
use crate::lowering::{naming, signature, Edit, Move, RegionReport, Status};
use crate::regions::candidate::{Candidate, Verdict};
use crate::regions::pattern::Unmatched;
use std::collections::HashMap;
use std::time::Instant;

pub struct Outcome {
    pub graph: Graph,
    pub edits: Vec<Edit>,
    pub moves: Vec<Move>,
    /// Per node of `graph`: created or rewired by the rewrite (see `check_delta`).
    pub changed: Vec<bool>,
    pub report: Vec<RegionReport>,
    /// Patterns that occur nowhere, with their closest partial match.
    pub unmatched: Vec<Unmatched>,
    pub timings: Timings,
}

impl Outcome {
    /// The rewritten graph's JSON (`graph::to_json`) when its input came as a header and the
    /// node `texts` (`analyze_parts`): each node the pass left as it was is written as its text.
    pub fn graph_json_reusing<S: AsRef<str> + Sync>(&self, texts: &[S]) -> String {
        graph::to_json_reusing(&self.graph, |i, n| match (self.changed.get(i), n.parsed_from.0) {
            (Some(false), Some(k)) => texts.get(k as usize).map(AsRef::as_ref),
            _ => None,
        })
    }

    /// The region reports, then each pattern that occurs nowhere with its closest match.
    pub fn report_text(&self) -> String {
        let mut text: String = self.report.iter().map(|r| r.to_string()).collect();
        for u in &self.unmatched {
            text.push_str(&format!("pattern {} occurs nowhere; {}\n", u.pattern, u.closest));
        }
        text
    }
}

impl Analysis {
    /// Step 2. `meta` maps region ids to what their impl's `meta_impl` returned, when it has one.
    /// Consumes the analysis: the graph's untouched nodes move into the rewritten graph.
    pub fn outline(self, meta: &HashMap<String, MetaResult>) -> Result<Outcome> {
        for id in meta.keys() {
            if !self.candidates.iter().any(|c| &c.region.id == id) {
                return Err(Error::new(ErrorKind::Input, format!("meta outputs given for unknown region `{id}`")));
            }
        }
        let t = Instant::now();
        let Analysis { graph, impls, mut candidates, unmatched, timings } = self;
        // Signature checks and naming, per region, in parallel: the op name, or why not.
        crate::par::for_each_mut(&mut candidates, |c| decide(&graph, &impls, c, meta.get(&c.region.id)));
        // Reports now: outlining consumes the graph (member names) and borrows the boundaries.
        let mut report: Vec<RegionReport> = candidates.iter().map(|c| report_of(&graph, c)).collect();
        let accepted: Vec<Accepted> = candidates
            .iter()
            .filter_map(|c| Some(Accepted { region: &c.region, boundary: c.boundary()?, op: c.op()?.to_owned() }))
            .collect();
        let out = outline::outline(graph, &accepted);
        // The verifier runs after the pass as before it: a rewritten graph that breaks an
        // invariant is a bug here, never something to hand back.
        graph::verify::verify_rewritten(&out.graph, &out.changed).map_err(|e| {
            Error::new(ErrorKind::Verify, format!("internal error: the rewritten graph is invalid: {e}"))
        })?;
        let node_of: HashMap<&str, &str> = out.edits.iter().map(|e| (e.region.as_str(), e.node.as_str())).collect();
        for r in &mut report {
            r.node = node_of.get(r.id.as_str()).map(|s| s.to_string());
        }
        let timings = Timings { outline_ms: ms(t), ..timings };
        Ok(Outcome {
            graph: out.graph,
            edits: out.edits,
            moves: out.moves,
            changed: out.changed,
            report,
            unmatched,
            timings,
        })
    }
}

/// Accept a valid region (its op name), or refuse it with why its signature does not fit.
fn decide(g: &Graph, impls: &Impls, c: &mut Candidate, meta: Option<&MetaResult>) {
    let Some(b) = c.boundary() else {
        if matches!(c.verdict, Verdict::Pending) {
            c.decision = Some(Err("it was not validated".to_owned()));
        }
        return;
    };
    let decl = &impls[&c.region.impl_key];
    let m = meta.map(|m| match m {
        MetaResult::Ok(v) => Ok(v.clone()),
        MetaResult::Error(e) => Err(e.clone()),
    });
    c.decision = Some(signature::check(b, decl, m.as_ref()).map(|()| naming::op_name(g, &c.region, b, &decl.name)));
}

fn names_of(g: &Graph, nodes: &[usize]) -> Vec<String> {
    nodes.iter().map(|&m| g.nodes[m].name.clone()).collect()
}

fn report_of(g: &Graph, c: &Candidate) -> RegionReport {
    let (inputs, outputs) = match c.boundary() {
        Some(b) => (b.inputs.clone(), b.outputs.clone()),
        None => (Vec::new(), Vec::new()),
    };
    let status = if c.op().is_some() { Status::Outlined } else { Status::Refused };
    RegionReport {
        id: c.region.id.clone(),
        impl_key: c.region.impl_key.clone(),
        origin: c.region.origin.clone(),
        source: c.region.source.clone(),
        status,
        reason: c.reason().map(str::to_owned),
        op: c.op().map(str::to_owned),
        node: None,
        nodes: names_of(g, &c.region.members),
        absorbed: names_of(g, &c.absorbed),
        inputs,
        outputs,
    }
}
