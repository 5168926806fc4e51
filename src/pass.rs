//! The whole pass, in two steps so that Python can run user code (`meta_impl`) in between:
//!
//! 1. `analyze`: verify the graph, collect region instances, validate them (in parallel) and
//!    compute their boundaries. Python reads `Analysis::summary` to call each `meta_impl` on the
//!    region's inputs.
//! 2. `Analysis::outline`: check each signature against its impl and meta outputs, name the ops,
//!    outline the accepted regions, and report on every region.

use crate::error::{Error, ErrorKind, Result};
use crate::graph::{self, Dag, Graph};
use crate::lowering::outline::{self, Accepted};
use crate::lowering::{naming, signature, Edit, ImplDecl, MetaOut, Move, RegionReport, Status};
use crate::regions::{collect, validate, Boundary, Port, Region};
use indexmap::IndexMap;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
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
    pub analyze_ms: f64,
    pub outline_ms: f64,
}

pub struct Analysis {
    pub graph: Graph,
    pub impls: Impls,
    pub regions: Vec<Region>,
    pub verdicts: Vec<std::result::Result<Boundary, String>>,
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

pub struct Outcome {
    pub graph: Graph,
    pub edits: Vec<Edit>,
    pub moves: Vec<Move>,
    pub report: Vec<RegionReport>,
    pub timings: Timings,
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// Parse and analyze graph JSON, recording the parse time too.
pub fn analyze_json(graph_json: &str, impls: Impls, extra: Vec<Region>) -> Result<Analysis> {
    let t = Instant::now();
    let g = graph::from_json(graph_json)?;
    let parse_ms = ms(t);
    let mut a = analyze(g, impls, extra)?;
    a.timings.parse_ms = parse_ms;
    Ok(a)
}

/// Step 1. `extra` holds regions chosen by selectors other than annotations.
pub fn analyze(g: Graph, impls: Impls, extra: Vec<Region>) -> Result<Analysis> {
    let t = Instant::now();
    let index = graph::verify::verify(&g)?;
    let verify_ms = ms(t);

    let t = Instant::now();
    let dag = Dag::build(&g, &index);
    drop(index);
    let mut regions = collect::from_annotations(&g);
    regions.extend(extra);
    let mut verdicts = validate::validate_all(&g, &dag, &regions, &|r| impls.get(&r.impl_key).is_some_and(|d| d.mutates));
    for (r, v) in regions.iter().zip(verdicts.iter_mut()) {
        if v.is_ok() && !impls.contains_key(&r.impl_key) {
            *v = Err(format!("its impl `{}` is not registered with tta", r.impl_key));
        }
    }
    let analyze_ms = ms(t);
    Ok(Analysis { graph: g, impls, regions, verdicts, timings: Timings { verify_ms, analyze_ms, ..Default::default() } })
}

impl Analysis {
    pub fn summary(&self) -> Vec<RegionSummary<'_>> {
        self.regions
            .iter()
            .zip(&self.verdicts)
            .map(|(r, v)| {
                let (inputs, outputs): (&[Port], &[Port]) = match v {
                    Ok(b) => (&b.inputs, &b.outputs),
                    Err(_) => (&[], &[]),
                };
                RegionSummary { id: &r.id, impl_key: &r.impl_key, valid: v.is_ok(), inputs, outputs }
            })
            .collect()
    }

    /// Step 2. `meta` maps region ids to what their impl's `meta_impl` returned, when it has one.
    pub fn outline(&self, meta: &HashMap<String, MetaResult>) -> Result<Outcome> {
        for id in meta.keys() {
            if !self.regions.iter().any(|r| &r.id == id) {
                return Err(Error::new(ErrorKind::Input, format!("meta outputs given for unknown region `{id}`")));
            }
        }
        let t = Instant::now();
        let g = &self.graph;
        // Signature checks and naming, per region, in parallel.
        let decided: Vec<std::result::Result<String, String>> = self
            .regions
            .par_iter()
            .zip(&self.verdicts)
            .map(|(region, verdict)| {
                let b = verdict.as_ref().map_err(Clone::clone)?;
                let decl = &self.impls[&region.impl_key];
                let m = meta.get(&region.id).map(|m| match m {
                    MetaResult::Ok(v) => Ok(v.clone()),
                    MetaResult::Error(e) => Err(e.clone()),
                });
                signature::check(b, decl, m.as_ref())?;
                Ok(naming::op_name(g, region, b, &decl.name))
            })
            .collect();

        let accepted: Vec<Accepted> = self
            .regions
            .iter()
            .zip(&self.verdicts)
            .zip(&decided)
            .filter_map(|((region, verdict), d)| match (verdict, d) {
                (Ok(boundary), Ok(op)) => Some(Accepted { region, boundary, op: op.clone() }),
                _ => None,
            })
            .collect();
        let out = outline::outline(g, &accepted);

        let node_of: HashMap<&str, &str> = out.edits.iter().map(|e| (e.region.as_str(), e.node.as_str())).collect();
        let report = self
            .regions
            .iter()
            .zip(&self.verdicts)
            .zip(&decided)
            .map(|((region, verdict), d)| {
                let (inputs, outputs) = match verdict {
                    Ok(b) => (b.inputs.clone(), b.outputs.clone()),
                    Err(_) => (Vec::new(), Vec::new()),
                };
                let (status, reason, op) = match d {
                    Ok(op) => (Status::Outlined, None, Some(op.clone())),
                    Err(why) => (Status::Refused, Some(why.clone()), None),
                };
                RegionReport {
                    id: region.id.clone(),
                    impl_key: region.impl_key.clone(),
                    origin: region.origin.clone(),
                    source: region.source.clone(),
                    status,
                    reason,
                    op,
                    node: node_of.get(region.id.as_str()).map(|s| s.to_string()),
                    nodes: region.members.iter().map(|&m| g.nodes[m].name.clone()).collect(),
                    inputs,
                    outputs,
                }
            })
            .collect();
        let timings = Timings { outline_ms: ms(t), ..self.timings.clone() };
        Ok(Outcome { graph: out.graph, edits: out.edits, moves: out.moves, report, timings })
    }
}

impl Outcome {
    /// Compare Python's re-serialized graph with ours; the error names the first difference.
    pub fn check_matches(&self, other: &Graph) -> Result<()> {
        let mismatch = |m: String| Err(Error::new(ErrorKind::Mismatch, m));
        if other.nodes.len() != self.graph.nodes.len() {
            return mismatch(format!(
                "the rewritten fx graph has {} nodes, the pass produced {}",
                other.nodes.len(),
                self.graph.nodes.len()
            ));
        }
        for (i, (a, b)) in other.nodes.iter().zip(&self.graph.nodes).enumerate() {
            if a != b {
                return mismatch(format!(
                    "node #{i} differs:\n  fx:   {}\n  pass: {}",
                    serde_json::to_string(a).unwrap(),
                    serde_json::to_string(b).unwrap()
                ));
            }
        }
        if other.regions != self.graph.regions {
            return mismatch("the region declarations differ".into());
        }
        Ok(())
    }
}
