//! Bindings of the pass: `analyze`, then `Analysis.outline`, then the `Outcome` accessors and
//! the checks of the host's edited graph.

use super::fx::PyFxReader;
use super::guard::{guarded, input_err, to_py};
use super::results::{PyEdit, PyMove, PyRegionMembers, PyRegionReport, PyRegionSummary};
use crate::error::{Error, ErrorKind};
use crate::graph;
use crate::lowering::dot;
use crate::pass::{self, Analysis, MetaResult, Outcome};
use crate::regions::selectors::{self, Selectors};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::{PyDict, PyList};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyAnalysis>()?;
    m.add_class::<PyOutcome>()?;
    m.add_function(wrap_pyfunction!(analyze, m)?)?;
    Ok(())
}

/// The node texts a graph was parsed from (`analyze(..., nodes=...)`), kept for writing the
/// rewritten graph (`Outcome::graph_json_reusing`).
type Texts = Option<Arc<Vec<PyBackedStr>>>;

/// Step 1's result. `outline` consumes it (the rewritten graph takes over its nodes), so the
/// analysis sits behind a lock and is gone after the first `outline`.
#[pyclass(name = "Analysis", module = "tta._core", frozen)]
struct PyAnalysis {
    analysis: Mutex<Option<Analysis>>,
    texts: Texts,
}

impl PyAnalysis {
    fn with<T>(&self, f: impl FnOnce(&Analysis) -> T) -> PyResult<T> {
        // A poisoned lock only means a panic was caught while it was held; the analysis is
        // never left half-updated (outline takes it out first).
        let guard = self.analysis.lock().unwrap_or_else(|p| p.into_inner());
        guard.as_ref().map(f).ok_or_else(consumed)
    }
}

fn consumed() -> PyErr {
    to_py(Error::new(ErrorKind::Input, "this analysis was already outlined; analyze the graph again"))
}

#[pymethods]
impl PyAnalysis {
    /// Regions with their boundaries, for running meta_impls.
    fn summary(&self, py: Python<'_>) -> PyResult<Vec<Py<PyRegionSummary>>> {
        guarded("Analysis.summary", "", || {
            self.with(|a| a.summary().iter().map(|r| PyRegionSummary::of(py, r)).collect())?
        })
    }

    /// Regions with their member node names (and why one was refused).
    fn members(&self, py: Python<'_>) -> PyResult<Vec<Py<PyRegionMembers>>> {
        guarded("Analysis.members", "", || {
            self.with(|a| a.members().iter().map(|r| PyRegionMembers::of(py, r)).collect())?
        })
    }

    /// Step 2 of the pass; `meta_json` maps region ids to {"ok": [outputs]} or {"error": "..."}.
    fn outline(&self, py: Python<'_>, meta_json: &str) -> PyResult<PyOutcome> {
        guarded("Analysis.outline", meta_json, || {
            let meta: HashMap<String, MetaResult> =
                serde_json::from_str(meta_json).map_err(|e| input_err("meta outputs", e))?;
            let analysis = self.analysis.lock().unwrap_or_else(|p| p.into_inner()).take().ok_or_else(consumed)?;
            let texts = self.texts.clone();
            py.detach(|| analysis.outline(&meta)).map(|outcome| PyOutcome { outcome, texts }).map_err(to_py)
        })
    }
}

/// Step 2's result, with the node texts its graph was parsed from, if it was.
#[pyclass(name = "Outcome", module = "tta._core", frozen)]
struct PyOutcome {
    outcome: Outcome,
    texts: Texts,
}

#[pymethods]
impl PyOutcome {
    /// What Python replays on its fx graph: one edit per outlined region, in order.
    fn edits(&self, py: Python<'_>) -> PyResult<Vec<Py<PyEdit>>> {
        guarded("Outcome.edits", "", || self.outcome.edits.iter().map(|e| PyEdit::of(py, e)).collect())
    }
    /// Nodes moved after every edit (a reader sat between members).
    fn moves(&self, py: Python<'_>) -> PyResult<Vec<Py<PyMove>>> {
        guarded("Outcome.moves", "", || self.outcome.moves.iter().map(|m| PyMove::of(py, m)).collect())
    }
    fn report(&self, py: Python<'_>) -> PyResult<Vec<Py<PyRegionReport>>> {
        guarded("Outcome.report", "", || self.outcome.report.iter().map(|r| PyRegionReport::of(py, r)).collect())
    }
    fn report_text(&self) -> PyResult<String> {
        guarded("Outcome.report_text", "", || Ok(self.outcome.report_text()))
    }
    /// Patterns that occur nowhere: (pattern, its closest partial match) each.
    fn unmatched(&self) -> PyResult<Vec<(String, String)>> {
        guarded("Outcome.unmatched", "", || {
            Ok(self.outcome.unmatched.iter().map(|u| (u.pattern.clone(), u.closest.clone())).collect())
        })
    }
    fn graph_json(&self) -> PyResult<String> {
        guarded("Outcome.graph_json", "", || {
            Ok(match &self.texts {
                Some(texts) => self.outcome.graph_json_reusing(texts),
                None => graph::to_json(&self.outcome.graph),
            })
        })
    }
    fn graph_text(&self) -> PyResult<String> {
        guarded("Outcome.graph_text", "", || Ok(self.outcome.graph.to_string()))
    }
    /// Graphviz DOT of `graph_json` (the graph before the rewrite) with each region as a
    /// cluster beside its plugin node (`lowering::dot`).
    #[pyo3(signature = (graph_json, max_nodes, base_dir=None))]
    fn dot(&self, py: Python<'_>, graph_json: &str, max_nodes: usize, base_dir: Option<String>) -> PyResult<String> {
        guarded("Outcome.dot", graph_json, || {
            py.detach(|| {
                let g = graph::from_json(graph_json)?;
                let opts = dot::DotOptions { max_nodes, base_dir, ..Default::default() };
                dot::to_dot(&g, &self.outcome.report, &opts)
            })
            .map_err(to_py)
        })
    }
    /// Milliseconds spent in each step, by step (`parse_ms`, ...).
    fn timings<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        guarded("Outcome.timings", "", || {
            let t = &self.outcome.timings;
            let d = PyDict::new(py);
            for (k, v) in [
                ("parse_ms", t.parse_ms),
                ("verify_ms", t.verify_ms),
                ("select_ms", t.select_ms),
                ("analyze_ms", t.analyze_ms),
                ("outline_ms", t.outline_ms),
            ] {
                d.set_item(k, v)?;
            }
            Ok(d)
        })
    }
    /// `check_delta` on the edited fx graph itself: `reader` (which read the graph before the
    /// edits) gives the node order and re-reads the nodes that changed. The nodes in `skip`
    /// (region members still in a graph edited in place, erased once it checked) do not count.
    #[pyo3(signature = (reader, nodes, skip=Vec::new()))]
    fn check_fx(
        &self,
        py: Python<'_>,
        reader: &Bound<'_, PyFxReader>,
        nodes: &Bound<'_, PyAny>,
        skip: Vec<Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        guarded("Outcome.check_fx", "", || {
            let (order, nodes) = reader.get().delta(nodes, &skip)?;
            py.detach(|| self.outcome.check_delta(&pass::Delta { order, nodes })).map_err(to_py)
        })
    }
    /// Raise CoreError("mismatch", ...) unless `graph_json` equals the rewritten graph.
    fn check_matches(&self, py: Python<'_>, graph_json: &str) -> PyResult<()> {
        guarded("Outcome.check_matches", graph_json, || {
            py.detach(|| {
                let other = graph::from_json(graph_json)?;
                self.outcome.check_matches(&other)
            })
            .map_err(to_py)
        })
    }
}

/// Step 1 of the pass: verify the graph, collect and validate regions. `selectors_json`
/// (optional) chooses more regions by module type/path and by pattern (`regions::selectors`).
/// With `nodes`, `graph_json` is the document without its nodes and `nodes` holds each node's
/// JSON text; they parse in parallel (`graph::from_parts`). With `reader`, the nodes are those
/// it read from the fx graph (`fx.rs`), and `graph_json` again the document without them.
#[pyfunction]
#[pyo3(signature = (graph_json, impls_json, selectors_json=None, nodes=None, reader=None))]
fn analyze(
    py: Python<'_>,
    graph_json: &str,
    impls_json: &str,
    selectors_json: Option<&str>,
    nodes: Option<Bound<'_, PyAny>>,
    reader: Option<Bound<'_, PyFxReader>>,
) -> PyResult<PyAnalysis> {
    guarded("analyze", graph_json, || {
        let nodes = nodes.map(|n| texts_of(&n)).transpose()?;
        let impls: pass::Impls = serde_json::from_str(impls_json).map_err(|e| input_err("impl declarations", e))?;
        let selectors = match selectors_json {
            Some(text) => selectors::from_json(text).map_err(to_py)?,
            None => Selectors::default(),
        };
        let read = reader.map(|r| r.get().take_nodes(py)).transpose()?;
        let texts = if read.is_none() { nodes.map(Arc::new) } else { None };
        py.detach(|| match (read, &texts) {
            (Some((read, read_ms)), _) => pass::analyze_nodes(graph_json, read, read_ms, impls, &selectors),
            (None, Some(nodes)) => pass::analyze_parts(graph_json, nodes, impls, &selectors),
            (None, None) => pass::analyze_json(graph_json, impls, &selectors),
        })
        .map(|a| PyAnalysis { analysis: Mutex::new(Some(a)), texts })
        .map_err(to_py)
    })
}

/// Node texts, each held by its reference (no copy): a list item by item (borrowed), any other
/// sequence as pyo3 extracts it.
fn texts_of(nodes: &Bound<'_, PyAny>) -> PyResult<Vec<PyBackedStr>> {
    let Ok(list) = nodes.cast::<PyList>() else {
        return nodes.extract();
    };
    let mut out = Vec::with_capacity(list.len());
    for item in list.iter() {
        out.push(item.extract()?);
    }
    Ok(out)
}
