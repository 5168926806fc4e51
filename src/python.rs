//! pyo3 bindings: JSON strings in, JSON strings out. No logic lives here.

use crate::error::{Error, ErrorKind};
use crate::graph;
use crate::pass::{self, Analysis, MetaResult, Outcome};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use std::collections::HashMap;

create_exception!(_core, CoreError, PyException, "An error from tta's Rust core: args = (kind, message, node, source).");

fn to_py(e: Error) -> PyErr {
    let kind = match e.kind {
        ErrorKind::Parse => "parse",
        ErrorKind::Verify => "verify",
        ErrorKind::Input => "input",
        ErrorKind::Mismatch => "mismatch",
        ErrorKind::Ptx => "ptx",
    };
    CoreError::new_err((kind, e.to_string(), e.node, e.source))
}

fn input_err(what: &str, e: serde_json::Error) -> PyErr {
    to_py(Error::new(ErrorKind::Input, format!("{what}: {e}")))
}

fn json<T: serde::Serialize + ?Sized>(v: &T) -> String {
    serde_json::to_string(v).expect("serializable")
}

#[pyclass(name = "Analysis", module = "tta._core", frozen)]
struct PyAnalysis(Analysis);

#[pymethods]
impl PyAnalysis {
    /// Regions with their boundaries, for running meta_impls: JSON list.
    fn summary_json(&self) -> String {
        json(&self.0.summary())
    }

    /// Step 2 of the pass; `meta_json` maps region ids to {"ok": [outputs]} or {"error": "..."}.
    fn outline(&self, py: Python<'_>, meta_json: &str) -> PyResult<PyOutcome> {
        let meta: HashMap<String, MetaResult> = serde_json::from_str(meta_json).map_err(|e| input_err("meta outputs", e))?;
        py.detach(|| self.0.outline(&meta)).map(PyOutcome).map_err(to_py)
    }
}

#[pyclass(name = "Outcome", module = "tta._core", frozen)]
struct PyOutcome(Outcome);

#[pymethods]
impl PyOutcome {
    fn edits_json(&self) -> String {
        json(&serde_json::json!({"edits": self.0.edits, "moves": self.0.moves}))
    }
    fn report_json(&self) -> String {
        json(&self.0.report)
    }
    fn report_text(&self) -> String {
        self.0.report.iter().map(|r| r.to_string()).collect()
    }
    fn graph_json(&self) -> String {
        graph::to_json(&self.0.graph)
    }
    fn graph_text(&self) -> String {
        self.0.graph.to_string()
    }
    fn timings_json(&self) -> String {
        json(&self.0.timings)
    }
    /// Raise CoreError("mismatch", ...) unless `graph_json` equals the rewritten graph.
    fn check_matches(&self, py: Python<'_>, graph_json: &str) -> PyResult<()> {
        py.detach(|| {
            let other = graph::from_json(graph_json)?;
            self.0.check_matches(&other)
        })
        .map_err(to_py)
    }
}

/// Step 1 of the pass: verify the graph, collect and validate regions.
#[pyfunction]
fn analyze(py: Python<'_>, graph_json: &str, impls_json: &str) -> PyResult<PyAnalysis> {
    let impls: pass::Impls = serde_json::from_str(impls_json).map_err(|e| input_err("impl declarations", e))?;
    py.detach(|| pass::analyze_json(graph_json, impls, Vec::new())).map(PyAnalysis).map_err(to_py)
}

fn expr_err(e: crate::lowering::expr::ExprError) -> PyErr {
    to_py(Error::new(ErrorKind::Input, e.0))
}

/// Canonical text of a shape expression (raises on a malformed one).
#[pyfunction]
fn canonical_expr(text: &str) -> PyResult<String> {
    crate::lowering::expr::canonical(text).map_err(expr_err)
}

/// Value of a shape expression; `env_json` maps symbols to integers.
#[pyfunction]
fn eval_expr(text: &str, env_json: &str) -> PyResult<i64> {
    let env: HashMap<String, i64> = serde_json::from_str(env_json).map_err(|e| input_err("symbol values", e))?;
    crate::lowering::expr::parse(text).and_then(|p| p.eval(&env)).map_err(expr_err)
}

/// The expression in trtp's shape arithmetic; `leaves_json` maps symbols to Python source
/// (e.g. `{"i0_1": "inp0.shape_expr[1]"}`).
#[pyfunction]
fn trtp_expr(text: &str, leaves_json: &str) -> PyResult<String> {
    let leaves: HashMap<String, String> = serde_json::from_str(leaves_json).map_err(|e| input_err("leaves", e))?;
    let leaf = |s: &str| leaves.get(s).cloned().unwrap_or_else(|| s.to_owned());
    crate::lowering::expr::parse(text).and_then(|p| p.to_trtp(&leaf)).map_err(expr_err)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("CoreError", m.py().get_type::<CoreError>())?;
    m.add_class::<PyAnalysis>()?;
    m.add_class::<PyOutcome>()?;
    m.add_function(wrap_pyfunction!(analyze, m)?)?;
    m.add_function(wrap_pyfunction!(canonical_expr, m)?)?;
    m.add_function(wrap_pyfunction!(eval_expr, m)?)?;
    m.add_function(wrap_pyfunction!(trtp_expr, m)?)?;
    Ok(())
}
