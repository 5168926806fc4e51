//! Bindings of the shape-expression algebra (`crate::expr`).

use super::guard::{guarded, input_err, to_py};
use crate::error::{Error, ErrorKind};
use crate::expr::{self, ExprError};
use pyo3::prelude::*;
use std::collections::HashMap;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(canonical_expr, m)?)?;
    m.add_function(wrap_pyfunction!(eval_expr, m)?)?;
    m.add_function(wrap_pyfunction!(trtp_expr, m)?)?;
    Ok(())
}

fn expr_err(text: &str, e: ExprError) -> PyErr {
    to_py(Error::new(ErrorKind::Input, format!("shape expression {text:?}: {e}")))
}

/// Canonical text of a shape expression (raises on a malformed one).
#[pyfunction]
fn canonical_expr(text: &str) -> PyResult<String> {
    guarded("canonical_expr", text, || expr::canonical(text).map_err(|e| expr_err(text, e)))
}

/// Value of a shape expression; `env_json` maps symbols to integers.
#[pyfunction]
fn eval_expr(text: &str, env_json: &str) -> PyResult<i64> {
    guarded("eval_expr", text, || {
        let env: HashMap<String, i64> = serde_json::from_str(env_json).map_err(|e| input_err("symbol values", e))?;
        expr::parse(text).and_then(|p| p.eval(&env)).map_err(|e| expr_err(text, e))
    })
}

/// The expression in trtp's shape arithmetic; `leaves_json` maps symbols to Python source
/// (e.g. `{"i0_1": "inp0.shape_expr[1]"}`).
#[pyfunction]
fn trtp_expr(text: &str, leaves_json: &str) -> PyResult<String> {
    guarded("trtp_expr", text, || {
        let leaves: HashMap<String, String> = serde_json::from_str(leaves_json).map_err(|e| input_err("leaves", e))?;
        let leaf = |s: &str| leaves.get(s).cloned().unwrap_or_else(|| s.to_owned());
        expr::parse(text).and_then(|p| p.to_trtp(&leaf)).map_err(|e| expr_err(text, e))
    })
}
