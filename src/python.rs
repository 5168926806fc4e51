//! pyo3 bindings: JSON strings in, JSON strings out. No logic lives here.

use crate::error::{Error, ErrorKind};
use crate::graph;
use crate::pass::{self, Analysis, MetaResult, Outcome};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use std::collections::HashMap;
use std::sync::Mutex;

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

/// Step 1's result. `outline` consumes it (the rewritten graph takes over its nodes), so the
/// analysis sits behind a lock and is gone after the first `outline`.
#[pyclass(name = "Analysis", module = "tta._core", frozen)]
struct PyAnalysis(Mutex<Option<Analysis>>);

impl PyAnalysis {
    fn with<T>(&self, f: impl FnOnce(&Analysis) -> T) -> PyResult<T> {
        let guard = self.0.lock().expect("analysis lock");
        guard.as_ref().map(f).ok_or_else(consumed)
    }
}

fn consumed() -> PyErr {
    to_py(Error::new(ErrorKind::Input, "this analysis was already outlined; analyze the graph again"))
}

#[pymethods]
impl PyAnalysis {
    /// Regions with their boundaries, for running meta_impls: JSON list.
    fn summary_json(&self) -> PyResult<String> {
        self.with(|a| json(&a.summary()))
    }

    /// Regions with their member node names (and why one was refused): JSON list.
    fn members_json(&self) -> PyResult<String> {
        self.with(|a| json(&a.members()))
    }

    /// Step 2 of the pass; `meta_json` maps region ids to {"ok": [outputs]} or {"error": "..."}.
    fn outline(&self, py: Python<'_>, meta_json: &str) -> PyResult<PyOutcome> {
        let meta: HashMap<String, MetaResult> = serde_json::from_str(meta_json).map_err(|e| input_err("meta outputs", e))?;
        let analysis = self.0.lock().expect("analysis lock").take().ok_or_else(consumed)?;
        py.detach(|| analysis.outline(&meta)).map(PyOutcome).map_err(to_py)
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
        self.0.report_text()
    }
    /// Patterns that occur nowhere: JSON list of {"pattern", "closest"}.
    fn unmatched_json(&self) -> String {
        json(&self.0.unmatched)
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
    /// Raise CoreError("mismatch", ...) unless the delta (`{"order": [...], "nodes": {...}}`)
    /// describes the rewritten graph (see `Outcome::check_delta`).
    fn check_delta(&self, py: Python<'_>, delta_json: &str) -> PyResult<()> {
        py.detach(|| {
            let delta: pass::Delta =
                serde_json::from_str(delta_json).map_err(|e| Error::new(ErrorKind::Input, format!("delta: {e}")))?;
            self.0.check_delta(&delta)
        })
        .map_err(to_py)
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

/// Step 1 of the pass: verify the graph, collect and validate regions. `selectors_json`
/// (optional) chooses more regions by module type/path and by pattern (`regions::selectors`).
#[pyfunction]
#[pyo3(signature = (graph_json, impls_json, selectors_json=None))]
fn analyze(py: Python<'_>, graph_json: &str, impls_json: &str, selectors_json: Option<&str>) -> PyResult<PyAnalysis> {
    let impls: pass::Impls = serde_json::from_str(impls_json).map_err(|e| input_err("impl declarations", e))?;
    let selectors = selectors_json.map(crate::regions::selectors::from_json).transpose().map_err(to_py)?;
    py.detach(|| match &selectors {
        Some(sel) => pass::analyze_json_selected(graph_json, impls, sel),
        None => pass::analyze_json(graph_json, impls, Vec::new()),
    })
    .map(|a| PyAnalysis(Mutex::new(Some(a))))
    .map_err(to_py)
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
    add_ptx_functions(m)?;
    Ok(())
}

// ---- PTX text work (`lowering::ptx`) ---------------------------------------------------------
// PTX and versions as str, CUBINs as bytes, everything structured as JSON; errors have kind "ptx"
// (or "input" for a malformed version string or JSON argument).

use crate::lowering::ptx;

fn add_ptx_functions(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(ptx_parse, m)?)?;
    m.add_function(wrap_pyfunction!(ptx_permute_params, m)?)?;
    m.add_function(wrap_pyfunction!(ptx_drop_trailing_scratch, m)?)?;
    m.add_function(wrap_pyfunction!(ptx_check_version, m)?)?;
    m.add_function(wrap_pyfunction!(ptx_relabel_version, m)?)?;
    m.add_function(wrap_pyfunction!(ptx_to_qdp_abi, m)?)?;
    m.add_function(wrap_pyfunction!(ptx_from_cubin, m)?)?;
    m.add_function(wrap_pyfunction!(ptx_cubin_params, m)?)?;
    m.add_function(wrap_pyfunction!(ptx_max_isa_for_driver, m)?)?;
    Ok(())
}

/// Header and entries of a PTX module: JSON `{"version": "9.0", "target": [...], "address_size",
/// "has_intermediate_source", "entries": [{"name", "visible", "params": [{"name", "ty",
/// "array_len", "align", "ptr", "hidden", "size"}], "reqntid", "maxntid", "language",
/// "directives"}]}`.
#[pyfunction]
fn ptx_parse(ptx_text: &str) -> PyResult<String> {
    ptx::parse(ptx_text).map(|m| json(&m)).map_err(to_py)
}

/// Reorder the parameter declarations of `entry`; `order_json` is a list, new i = old order[i].
#[pyfunction]
fn ptx_permute_params(ptx_text: &str, entry: &str, order_json: &str) -> PyResult<String> {
    let order: Vec<usize> = serde_json::from_str(order_json).map_err(|e| input_err("parameter order", e))?;
    ptx::permute_params(ptx_text, entry, &order).map_err(to_py)
}

/// Drop Triton's trailing scratch parameters; `sizes_json` is `[global_scratch_size, profile_scratch_size]`.
#[pyfunction]
fn ptx_drop_trailing_scratch(ptx_text: &str, entry: &str, sizes_json: &str) -> PyResult<String> {
    let sizes: Vec<u64> = serde_json::from_str(sizes_json).map_err(|e| input_err("scratch sizes", e))?;
    ptx::drop_trailing_scratch(ptx_text, entry, &sizes).map_err(to_py)
}

/// Raise unless the PTX's `.version` is at most `max_version` ("9.0").
#[pyfunction]
fn ptx_check_version(ptx_text: &str, max_version: &str) -> PyResult<()> {
    let max = max_version.parse().map_err(to_py)?;
    ptx::check_version(ptx_text, max).map_err(to_py)
}

/// Explicitly relabel `.version` down to `to` ("9.0") and drop `.language`.
#[pyfunction]
fn ptx_relabel_version(ptx_text: &str, to: &str) -> PyResult<String> {
    let to = to.parse().map_err(to_py)?;
    ptx::relabel_version(ptx_text, to).map_err(to_py)
}

/// All QDP changes at once. `spec_json`: `{"entry", "trailing_scratch": [..], "order": [..],
/// "slots": {"inputs", "extras", "outputs"}, "max_version": "9.0"}` (all but `entry` optional).
/// Returns JSON `{"ptx": str, "entry": <entry as in ptx_parse>}`.
#[pyfunction]
fn ptx_to_qdp_abi(ptx_text: &str, spec_json: &str) -> PyResult<String> {
    let spec: ptx::QdpSpec = serde_json::from_str(spec_json).map_err(|e| input_err("QDP spec", e))?;
    ptx::to_qdp_abi(ptx_text, &spec).map(|q| json(&q)).map_err(to_py)
}

/// The PTX tileiras embedded in a cuTile CUBIN.
#[pyfunction]
fn ptx_from_cubin(cubin: &[u8]) -> PyResult<String> {
    ptx::debug_ptx_from_cubin(cubin).map_err(to_py)
}

/// Parameter layout of kernel `entry` in a CUBIN: JSON `[{"ordinal", "offset", "size"}]`.
#[pyfunction]
fn ptx_cubin_params(cubin: &[u8], entry: &str) -> PyResult<String> {
    ptx::cubin_params(cubin, entry).map(|p| json(&p)).map_err(to_py)
}

/// The newest PTX ISA a CUDA driver accepts ("13.0" -> "9.0"), or None outside the table.
#[pyfunction]
fn ptx_max_isa_for_driver(cuda: &str) -> PyResult<Option<String>> {
    let cuda = cuda.parse().map_err(to_py)?;
    Ok(ptx::max_isa_for_driver(cuda).map(|v| v.to_string()))
}
