//! Bindings of the PTX toolkit (`crate::ptx`). PTX and versions as str, CUBINs as bytes,
//! everything structured as JSON; errors have kind "ptx" (or "input" for a malformed version
//! string or JSON argument).

use super::guard::{guarded, input_err, json, to_py};
use crate::ptx;
use pyo3::prelude::*;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(ptx_parse, m)?)?;
    m.add_function(wrap_pyfunction!(ptx_permute_params, m)?)?;
    m.add_function(wrap_pyfunction!(ptx_drop_trailing_scratch, m)?)?;
    m.add_function(wrap_pyfunction!(ptx_check_version, m)?)?;
    m.add_function(wrap_pyfunction!(ptx_relabel_version, m)?)?;
    m.add_function(wrap_pyfunction!(ptx_drop_arch_suffix, m)?)?;
    m.add_function(wrap_pyfunction!(ptx_to_qdp_abi, m)?)?;
    m.add_function(wrap_pyfunction!(ptx_qdp_layout, m)?)?;
    m.add_function(wrap_pyfunction!(ptx_check_cubin_slots, m)?)?;
    m.add_function(wrap_pyfunction!(ptx_check_qdp_roles, m)?)?;
    m.add_function(wrap_pyfunction!(ptx_from_cubin, m)?)?;
    m.add_function(wrap_pyfunction!(ptx_cubin_params, m)?)?;
    m.add_function(wrap_pyfunction!(ptx_max_isa_for_driver, m)?)?;
    m.add_function(wrap_pyfunction!(ptx_stored_params, m)?)?;
    Ok(())
}

/// How a CUBIN is named in an internal error: its size (the bytes are not text).
fn cubin_label(cubin: &[u8]) -> String {
    format!("<CUBIN of {} bytes>", cubin.len())
}

/// Header and entries of a PTX module: JSON `{"version": "9.0", "target": [...], "address_size",
/// "has_intermediate_source", "entries": [{"name", "visible", "params": [{"name", "ty",
/// "array_len", "align", "ptr", "hidden", "size"}], "reqntid", "maxntid", "language",
/// "directives"}]}`.
#[pyfunction]
fn ptx_parse(ptx_text: &str) -> PyResult<String> {
    guarded("ptx_parse", ptx_text, || ptx::parse(ptx_text).map(|m| json(&m)).map_err(to_py))
}

/// Reorder the parameter declarations of `entry`; `order_json` is a list, new i = old order[i].
#[pyfunction]
fn ptx_permute_params(ptx_text: &str, entry: &str, order_json: &str) -> PyResult<String> {
    guarded("ptx_permute_params", ptx_text, || {
        let order: Vec<usize> = serde_json::from_str(order_json).map_err(|e| input_err("parameter order", e))?;
        ptx::permute_params(ptx_text, entry, &order).map_err(to_py)
    })
}

/// Drop Triton's trailing scratch parameters; `sizes_json` is `[global_scratch_size, profile_scratch_size]`.
#[pyfunction]
fn ptx_drop_trailing_scratch(ptx_text: &str, entry: &str, sizes_json: &str) -> PyResult<String> {
    guarded("ptx_drop_trailing_scratch", ptx_text, || {
        let sizes: Vec<u64> = serde_json::from_str(sizes_json).map_err(|e| input_err("scratch sizes", e))?;
        ptx::drop_trailing_scratch(ptx_text, entry, &sizes).map_err(to_py)
    })
}

/// Raise unless the PTX's `.version` is at most `max_version` ("9.0").
#[pyfunction]
fn ptx_check_version(ptx_text: &str, max_version: &str) -> PyResult<()> {
    guarded("ptx_check_version", ptx_text, || {
        let max = max_version.parse().map_err(to_py)?;
        ptx::check_version(ptx_text, max).map_err(to_py)
    })
}

/// Explicitly relabel `.version` down to `to` ("9.0") and drop `.language`.
#[pyfunction]
fn ptx_relabel_version(ptx_text: &str, to: &str) -> PyResult<String> {
    guarded("ptx_relabel_version", ptx_text, || {
        let to = to.parse().map_err(to_py)?;
        ptx::relabel_version(ptx_text, to).map_err(to_py)
    })
}

/// `.target sm_90a` -> `.target sm_90` (see `ptx::drop_arch_suffix`).
#[pyfunction]
fn ptx_drop_arch_suffix(ptx_text: &str) -> PyResult<String> {
    guarded("ptx_drop_arch_suffix", ptx_text, || ptx::drop_arch_suffix(ptx_text).map_err(to_py))
}

/// All QDP changes at once. `spec_json`: `{"entry", "trailing_scratch": [..], "roles": [[role,
/// index], ..] | "order": [..], "slots": {"inputs", "extras", "outputs"}, "max_version": "9.0"}`
/// (all but `entry` optional).
/// Returns JSON `{"ptx": str, "entry": <entry as in ptx_parse>}`.
#[pyfunction]
fn ptx_to_qdp_abi(ptx_text: &str, spec_json: &str) -> PyResult<String> {
    guarded("ptx_to_qdp_abi", ptx_text, || {
        let spec: ptx::QdpSpec = serde_json::from_str(spec_json).map_err(|e| input_err("QDP spec", e))?;
        ptx::to_qdp_abi(ptx_text, &spec).map(|q| json(&q)).map_err(to_py)
    })
}

/// The QDP order and slots of parameters with these roles: `roles_json` is `[[role, index], ..]`
/// (role "input", "extra" or "output"); JSON `{"order": [..], "slots": {"inputs", "extras", "outputs"}}`.
#[pyfunction]
fn ptx_qdp_layout(roles_json: &str) -> PyResult<String> {
    guarded("ptx_qdp_layout", roles_json, || {
        let roles: Vec<ptx::ParamRole> =
            serde_json::from_str(roles_json).map_err(|e| input_err("parameter roles", e))?;
        Ok(json(&serde_json::json!({"order": ptx::qdp_order(&roles), "slots": ptx::QdpSlots::of(&roles)})))
    })
}

/// Raise unless parameters with these roles (`[[role, index], ..]`) take each of `inputs` inputs
/// and `outputs` outputs exactly once.
#[pyfunction]
fn ptx_check_qdp_roles(roles_json: &str, inputs: usize, outputs: usize) -> PyResult<()> {
    guarded("ptx_check_qdp_roles", roles_json, || {
        let roles: Vec<ptx::ParamRole> =
            serde_json::from_str(roles_json).map_err(|e| input_err("parameter roles", e))?;
        ptx::check_roles(&roles, inputs, outputs).map_err(to_py)
    })
}

/// Raise unless the CUBIN's kernel `entry` lays out its parameters as TensorRT passes `slots_json`
/// (`{"inputs", "extras", "outputs"}`).
#[pyfunction]
fn ptx_check_cubin_slots(cubin: &[u8], entry: &str, slots_json: &str) -> PyResult<()> {
    guarded("ptx_check_cubin_slots", &cubin_label(cubin), || {
        let slots: ptx::QdpSlots = serde_json::from_str(slots_json).map_err(|e| input_err("QDP slots", e))?;
        ptx::check_cubin_slots(cubin, entry, slots).map_err(to_py)
    })
}

/// The PTX tileiras embedded in a cuTile CUBIN.
#[pyfunction]
fn ptx_from_cubin(cubin: &[u8]) -> PyResult<String> {
    guarded("ptx_from_cubin", &cubin_label(cubin), || ptx::debug_ptx_from_cubin(cubin).map_err(to_py))
}

/// Parameter layout of kernel `entry` in a CUBIN: JSON `[{"ordinal", "offset", "size"}]`.
#[pyfunction]
fn ptx_cubin_params(cubin: &[u8], entry: &str) -> PyResult<String> {
    guarded("ptx_cubin_params", &cubin_label(cubin), || {
        ptx::cubin_params(cubin, entry).map(|p| json(&p)).map_err(to_py)
    })
}

/// The newest PTX ISA a CUDA driver accepts ("13.0" -> "9.0"), or None outside the table.
#[pyfunction]
fn ptx_max_isa_for_driver(cuda: &str) -> PyResult<Option<String>> {
    guarded("ptx_max_isa_for_driver", cuda, || {
        let cuda = cuda.parse().map_err(to_py)?;
        Ok(ptx::max_isa_for_driver(cuda).map(|v| v.to_string()))
    })
}

/// Indices of the parameters of `entry` the kernel may store through (see `ptx::stored_params`).
#[pyfunction]
fn ptx_stored_params(ptx_text: &str, entry: &str) -> PyResult<Vec<usize>> {
    guarded("ptx_stored_params", ptx_text, || ptx::stored_params(ptx_text, entry).map_err(to_py))
}
