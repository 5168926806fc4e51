//! Step 2 of the pass: decide each valid region (signature against its impl and meta outputs,
//! op name), outline the accepted ones, verify the result and report on every candidate.

use super::analyze::{ms, Analysis, MetaResult, Timings};
use crate::error::{Error, ErrorKind, Result};
use crate::graph::{self, Graph};
use crate::lowering::outline::{self, Accepted};
use crate::lowering::{naming, signature, Edit, Move, RegionReport, Status};
use crate::regions::candidate::{Candidate, Verdict};
use crate::regions::pattern::Unmatched;
use std::collections::HashMap;
use std::time::Instant;

/// What Python replays on its fx graph (`Outcome::edits_json`), serialized straight from the
/// outcome: building a `serde_json::Value` first would hold a second copy of every edit.
#[derive(serde::Serialize)]
pub struct EditsOut<'a> {
    pub edits: &'a [Edit],
    pub moves: &'a [Move],
}

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
    pub fn edits_out(&self) -> EditsOut<'_> {
        EditsOut { edits: &self.edits, moves: &self.moves }
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
        let Analysis { graph, impls, candidates, unmatched, timings } = self;
        // Signature checks and naming, per region, in parallel: the op name, or why not.
        let decided: Vec<std::result::Result<String, String>> =
            crate::par::map(&candidates, |_, c| decide(&graph, &impls, c, meta.get(&c.region.id)));
        // Member names now: outlining consumes the graph. Ports move into the report afterwards.
        let names: Vec<Vec<String>> =
            candidates.iter().map(|c| names_of(&graph, &c.region.members)).collect();
        let absorbed: Vec<Vec<String>> = candidates.iter().map(|c| names_of(&graph, &c.absorbed)).collect();
        let accepted: Vec<Accepted> = candidates
            .iter()
            .zip(&decided)
            .filter_map(|(c, d)| match (c.boundary(), d) {
                (Some(boundary), Ok(op)) => Some(Accepted { region: &c.region, boundary, op: op.clone() }),
                _ => None,
            })
            .collect();
        let out = outline::outline(graph, &accepted);
        drop(accepted);
        let mut report: Vec<RegionReport> =
            candidates.into_iter().zip(decided).zip(names.into_iter().zip(absorbed)).map(|((c, d), n)| report_of(c, d, n)).collect();
        // The verifier runs after the pass as before it: a rewritten graph that breaks an
        // invariant is a bug here, never something to hand back.
        graph::verify::verify(&out.graph).map_err(|e| {
            Error::new(ErrorKind::Verify, format!("internal error: the rewritten graph is invalid: {e}"))
        })?;
        let node_of: HashMap<&str, &str> = out.edits.iter().map(|e| (e.region.as_str(), e.node.as_str())).collect();
        for r in &mut report {
            r.node = node_of.get(r.id.as_str()).map(|s| s.to_string());
        }
        let timings = Timings { outline_ms: ms(t), ..timings };
        Ok(Outcome { graph: out.graph, edits: out.edits, moves: out.moves, changed: out.changed, report, unmatched, timings })
    }
}

fn decide(g: &Graph, impls: &super::Impls, c: &Candidate, meta: Option<&MetaResult>) -> std::result::Result<String, String> {
    let b = match c.boundary() {
        Some(b) => b,
        None => return Err(c.reason().unwrap_or("it was not validated").to_owned()),
    };
    let decl = &impls[&c.region.impl_key];
    let m = meta.map(|m| match m {
        MetaResult::Ok(v) => Ok(v.clone()),
        MetaResult::Error(e) => Err(e.clone()),
    });
    signature::check(b, decl, m.as_ref())?;
    Ok(naming::op_name(g, &c.region, b, &decl.name))
}

fn names_of(g: &Graph, nodes: &[usize]) -> Vec<String> {
    nodes.iter().map(|&m| g.nodes[m].name.clone()).collect()
}

/// `names`: the region's members and the assertion nodes among them it absorbed.
fn report_of(c: Candidate, decided: std::result::Result<String, String>, names: (Vec<String>, Vec<String>)) -> RegionReport {
    let (nodes, absorbed) = names;
    let Candidate { region, verdict, .. } = c;
    let (inputs, outputs) = match verdict {
        Verdict::Valid(b) => (b.inputs, b.outputs),
        _ => (Vec::new(), Vec::new()),
    };
    let (status, reason, op) = match decided {
        Ok(op) => (Status::Outlined, None, Some(op)),
        Err(why) => (Status::Refused, Some(why), None),
    };
    RegionReport {
        id: region.id,
        impl_key: region.impl_key,
        origin: region.origin,
        source: region.source,
        status,
        reason,
        op,
        node: None,
        nodes,
        absorbed,
        inputs,
        outputs,
    }
}
