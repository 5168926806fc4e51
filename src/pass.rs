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
use crate::regions::selectors::{self, Selection, Selectors, Unmatched};
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
    /// Module and pattern selectors (part of `analyze_ms`).
    pub select_ms: f64,
    pub analyze_ms: f64,
    pub outline_ms: f64,
}

pub struct Analysis {
    pub graph: Graph,
    pub impls: Impls,
    pub regions: Vec<Region>,
    pub verdicts: Vec<std::result::Result<Boundary, String>>,
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

pub struct Outcome {
    pub graph: Graph,
    pub edits: Vec<Edit>,
    pub moves: Vec<Move>,
    /// Names of nodes the rewrite created or rewired (see `check_delta`).
    pub changed: std::collections::HashSet<String>,
    pub report: Vec<RegionReport>,
    pub unmatched: Vec<Unmatched>,
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

/// `analyze_json` with module and pattern selectors (`regions::selectors`).
pub fn analyze_json_selected(graph_json: &str, impls: Impls, sel: &Selectors) -> Result<Analysis> {
    let t = Instant::now();
    let g = graph::from_json(graph_json)?;
    let parse_ms = ms(t);
    let mut a = analyze_selected(g, impls, sel)?;
    a.timings.parse_ms = parse_ms;
    Ok(a)
}

/// Step 1. `extra` holds regions chosen by selectors other than annotations.
pub fn analyze(g: Graph, impls: Impls, extra: Vec<Region>) -> Result<Analysis> {
    analyze_with(g, impls, |_, _, _| Ok(Selection::from(extra)))
}

/// Step 1 with module and pattern selectors, run on the verified graph.
pub fn analyze_selected(g: Graph, impls: Impls, sel: &Selectors) -> Result<Analysis> {
    analyze_with(g, impls, |g, index, dag| selectors::select(g, index, dag, sel))
}

/// `select` runs on the verified graph, its name -> position index and the dataflow view.
fn analyze_with(g: Graph, impls: Impls, select: impl FnOnce(&Graph, &HashMap<&str, usize>, &Dag) -> Result<Selection>) -> Result<Analysis> {
    let t = Instant::now();
    let verified = graph::verify::verify(&g)?;
    let verify_ms = ms(t);

    let t = Instant::now();
    let index = verified.index;
    let dag = Dag::from_inputs(verified.inputs);
    let mut regions = collect::from_annotations(&g);
    let ts = Instant::now();
    let selection = select(&g, &index, &dag)?;
    let select_ms = ms(ts);
    drop(index);
    let first_selected = regions.len();
    regions.extend(selection.regions);
    let mut verdicts = validate::validate_all(&g, &dag, &regions, &|r| impls.get(&r.impl_key).is_some_and(|d| d.mutates));
    // A pattern fixes the order of its region's ports (the impl's signature).
    for (v, order) in verdicts[first_selected..].iter_mut().zip(&selection.ports) {
        if let (Ok(b), Some(order)) = (v.as_mut(), order) {
            selectors::apply_order(&g, b, order);
        }
    }
    let unmatched = selection.unmatched;
    // Occurrences refused by a selector skip validation (and the overlap check).
    for (r, why) in selection.refused {
        regions.push(r);
        verdicts.push(Err(why));
    }
    let mut ids = std::collections::HashSet::new();
    if let Some(r) = regions.iter().find(|r| !ids.insert(r.id.as_str())) {
        return Err(Error::new(ErrorKind::Input, format!("two regions have the id `{}`; region ids must be unique", r.id)));
    }
    for (r, v) in regions.iter().zip(verdicts.iter_mut()) {
        if v.is_ok() && !impls.contains_key(&r.impl_key) {
            *v = Err(format!("its impl `{}` is not registered with tta", r.impl_key));
        }
    }
    let analyze_ms = ms(t);
    Ok(Analysis { graph: g, impls, regions, verdicts, unmatched, timings: Timings { verify_ms, select_ms, analyze_ms, ..Default::default() } })
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

    /// Each region's id and member names, and the reason when it was refused before outlining:
    /// what a caller that only looks for regions (inspection tools, benchmarks) needs.
    pub fn members(&self) -> Vec<RegionMembers<'_>> {
        self.regions
            .iter()
            .zip(&self.verdicts)
            .map(|(r, v)| RegionMembers {
                id: &r.id,
                reason: v.as_ref().err().map(String::as_str),
                nodes: r.members.iter().map(|&m| self.graph.nodes[m].name.as_str()).collect(),
            })
            .collect()
    }

    /// Step 2. `meta` maps region ids to what their impl's `meta_impl` returned, when it has one.
    /// Consumes the analysis: the graph's untouched nodes move into the rewritten graph.
    pub fn outline(self, meta: &HashMap<String, MetaResult>) -> Result<Outcome> {
        for id in meta.keys() {
            if !self.regions.iter().any(|r| &r.id == id) {
                return Err(Error::new(ErrorKind::Input, format!("meta outputs given for unknown region `{id}`")));
            }
        }
        let t = Instant::now();
        let Analysis { graph, impls, regions, verdicts, unmatched, timings } = self;
        let g = &graph;
        // Signature checks and naming, per region, in parallel.
        let decided: Vec<std::result::Result<String, String>> = regions
            .par_iter()
            .zip(&verdicts)
            .map(|(region, verdict)| {
                let b = verdict.as_ref().map_err(Clone::clone)?;
                let decl = &impls[&region.impl_key];
                let m = meta.get(&region.id).map(|m| match m {
                    MetaResult::Ok(v) => Ok(v.clone()),
                    MetaResult::Error(e) => Err(e.clone()),
                });
                signature::check(b, decl, m.as_ref())?;
                Ok(naming::op_name(g, region, b, &decl.name))
            })
            .collect();

        let mut report: Vec<RegionReport> = regions
            .iter()
            .zip(&verdicts)
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
                    node: None,
                    nodes: region.members.iter().map(|&m| g.nodes[m].name.clone()).collect(),
                    inputs,
                    outputs,
                }
            })
            .collect();

        let accepted: Vec<Accepted> = regions
            .iter()
            .zip(&verdicts)
            .zip(&decided)
            .filter_map(|((region, verdict), d)| match (verdict, d) {
                (Ok(boundary), Ok(op)) => Some(Accepted { region, boundary, op: op.clone() }),
                _ => None,
            })
            .collect();
        let out = outline::outline(graph, &accepted);
        let node_of: HashMap<&str, &str> = out.edits.iter().map(|e| (e.region.as_str(), e.node.as_str())).collect();
        for r in &mut report {
            r.node = node_of.get(r.id.as_str()).map(|s| s.to_string());
        }
        let timings = Timings { outline_ms: ms(t), ..timings };
        Ok(Outcome { graph: out.graph, edits: out.edits, moves: out.moves, changed: out.changed, report, unmatched, timings })
    }
}

/// What Python sends for the cheap check: the rewritten fx graph's node order, and the
/// re-serialized nodes that differ (by object identity) from what it serialized before.
#[derive(Deserialize)]
pub struct Delta {
    pub order: Vec<String>,
    pub nodes: HashMap<String, crate::graph::Node>,
}

impl Outcome {
    /// The region reports, then each pattern that occurs nowhere with its closest match.
    pub fn report_text(&self) -> String {
        let mut text: String = self.report.iter().map(|r| r.to_string()).collect();
        for u in &self.unmatched {
            text.push_str(&format!("pattern {} occurs nowhere; {}\n", u.pattern, u.closest));
        }
        text
    }

    /// The same verdict as `check_matches` without a full re-serialization: the order must
    /// match, every node the pass changed must come back re-serialized and equal, and no other
    /// node may have changed on the Python side.
    pub fn check_delta(&self, delta: &Delta) -> Result<()> {
        let mismatch = |m: String| Err(Error::new(ErrorKind::Mismatch, m));
        if delta.order.len() != self.graph.nodes.len() {
            return mismatch(format!(
                "the rewritten fx graph has {} nodes, the pass produced {}",
                delta.order.len(),
                self.graph.nodes.len()
            ));
        }
        for (i, (name, node)) in delta.order.iter().zip(&self.graph.nodes).enumerate() {
            if name != &node.name {
                return mismatch(format!("node #{i} is `{name}` in the fx graph but `{}` in the pass's graph", node.name));
            }
            match (self.changed.contains(name), delta.nodes.get(name)) {
                (true, Some(theirs)) if theirs == node => {}
                (true, Some(theirs)) => {
                    return mismatch(format!(
                        "node #{i} differs:\n  fx:   {}\n  pass: {}",
                        serde_json::to_string(theirs).unwrap(),
                        serde_json::to_string(node).unwrap()
                    ))
                }
                (true, None) => return mismatch(format!("node `{name}` should have changed but the fx graph did not change it")),
                (false, Some(_)) => return mismatch(format!("node `{name}` changed in the fx graph but the pass did not change it")),
                (false, None) => {}
            }
        }
        Ok(())
    }

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
