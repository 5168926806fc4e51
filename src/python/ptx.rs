//! Bindings of the PTX toolkit (`crate::ptx`). PTX and versions as str, CUBINs as bytes,
//! parameter orders, roles and QDP specs as JSON; modules, entries, parameters and slots come
//! back as typed classes. Errors have kind "ptx" (or "input" for a malformed version string
//! or JSON argument).

use super::guard::{guarded, input_err, to_py};
use super::record::record;
use crate::ptx;
use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyPtxParam>()?;
    m.add_class::<PyPtxEntry>()?;
    m.add_class::<PyPtxModule>()?;
    m.add_class::<PyQdpSlots>()?;
    m.add_class::<PyCubinParam>()?;
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
    m.add_function(wrap_pyfunction!(ptx_instruction_forms, m)?)?;
    Ok(())
}

/// How a CUBIN is named in an internal error: its size (the bytes are not text).
fn cubin_label(cubin: &[u8]) -> String {
    format!("<CUBIN of {} bytes>", cubin.len())
}

/// One `.param` of an entry.
#[pyclass(name = "PtxParam", module = "tta._core", frozen, get_all)]
pub struct PyPtxParam {
    name: String,
    /// ".u64", ".u32", ".b8" (byte arrays) ...
    ty: String,
    size: u64,
    array_len: Option<u64>,
    align: Option<u32>,
    /// ".global" for a `.ptr.global` pointer.
    ptr_space: Option<String>,
    is_ptr: bool,
    /// A parameter the compiler added (not in the user's signature).
    hidden: bool,
}

record!(
    PyPtxParam,
    "PtxParam",
    ["name", "ty", "size", "array_len", "align", "ptr_space", "is_ptr", "hidden"],
    hashable,
    {}
);

/// One `.entry` (kernel) of a module.
#[pyclass(name = "PtxEntry", module = "tta._core", frozen, get_all)]
pub struct PyPtxEntry {
    name: String,
    visible: bool,
    params: Py<PyTuple>,
    reqntid: Option<Py<PyTuple>>,
    maxntid: Option<Py<PyTuple>>,
    language: Option<u32>,
    directives: Py<PyTuple>,
}

impl PyPtxEntry {
    fn of(py: Python<'_>, e: &ptx::Entry) -> PyResult<Py<PyPtxEntry>> {
        let params = e
            .params
            .iter()
            .map(|p| {
                let param = PyPtxParam {
                    name: p.name.clone(),
                    ty: p.ty.clone(),
                    size: p.size,
                    array_len: p.array_len,
                    align: p.align,
                    ptr_space: p.ptr.as_ref().and_then(|q| q.space.clone()),
                    is_ptr: p.ptr.is_some(),
                    hidden: p.hidden,
                };
                Py::new(py, param)
            })
            .collect::<PyResult<Vec<_>>>()?;
        let dims = |d: &Option<Vec<u32>>| d.as_ref().map(|d| PyTuple::new(py, d).map(Bound::unbind)).transpose();
        let entry = PyPtxEntry {
            name: e.name.clone(),
            visible: e.visible,
            params: PyTuple::new(py, params)?.unbind(),
            reqntid: dims(&e.reqntid)?,
            maxntid: dims(&e.maxntid)?,
            language: e.language,
            directives: PyTuple::new(py, &e.directives)?.unbind(),
        };
        Py::new(py, entry)
    }
}

record!(
    PyPtxEntry,
    "PtxEntry",
    ["name", "visible", "params", "reqntid", "maxntid", "language", "directives"],
    hashable,
    {}
);

/// Header and entries of a PTX module.
#[pyclass(name = "PtxModule", module = "tta._core", frozen, get_all)]
pub struct PyPtxModule {
    /// ".version", as "9.0".
    version: String,
    target: Py<PyTuple>,
    address_size: Option<u32>,
    entries: Py<PyTuple>,
    has_intermediate_source: bool,
}

record!(
    PyPtxModule,
    "PtxModule",
    ["version", "target", "address_size", "entries", "has_intermediate_source"],
    hashable,
    {
        /// The entry named `name`; KeyError when there is none.
        fn entry(&self, py: Python<'_>, name: &str) -> PyResult<Py<PyPtxEntry>> {
            for e in self.entries.bind(py).iter() {
                let e = e.cast_into::<PyPtxEntry>()?;
                if e.get().name == name {
                    return Ok(e.unbind());
                }
            }
            Err(PyKeyError::new_err(name.to_string()))
        }
    }
);

/// How many parameters of each kind the QDP order has: (inputs, extras, outputs).
#[pyclass(name = "QdpSlots", module = "tta._core", frozen, get_all)]
pub struct PyQdpSlots {
    inputs: usize,
    extras: usize,
    outputs: usize,
}

impl PyQdpSlots {
    fn core(&self) -> ptx::QdpSlots {
        ptx::QdpSlots { inputs: self.inputs, extras: self.extras, outputs: self.outputs }
    }
}

record!(PyQdpSlots, "QdpSlots", ["inputs", "extras", "outputs"], hashable, {
    #[new]
    fn new(inputs: usize, extras: usize, outputs: usize) -> Self {
        PyQdpSlots { inputs, extras, outputs }
    }
    /// As a QDP spec's `"slots"`.
    fn encode<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("inputs", self.inputs)?;
        d.set_item("extras", self.extras)?;
        d.set_item("outputs", self.outputs)?;
        Ok(d)
    }
});

/// A kernel parameter as ptxas laid it out in a CUBIN.
#[pyclass(name = "CubinParam", module = "tta._core", frozen, get_all)]
pub struct PyCubinParam {
    ordinal: u16,
    offset: u16,
    size: u16,
}

record!(PyCubinParam, "CubinParam", ["ordinal", "offset", "size"], hashable, {});

/// Header and entries of a PTX module.
#[pyfunction]
fn ptx_parse(py: Python<'_>, ptx_text: &str) -> PyResult<Py<PyPtxModule>> {
    guarded("ptx_parse", ptx_text, || {
        let m = ptx::parse(ptx_text).map_err(to_py)?;
        let entries = m.entries.iter().map(|e| PyPtxEntry::of(py, e)).collect::<PyResult<Vec<_>>>()?;
        let module = PyPtxModule {
            version: m.version.to_string(),
            target: PyTuple::new(py, &m.target)?.unbind(),
            address_size: m.address_size,
            entries: PyTuple::new(py, entries)?.unbind(),
            has_intermediate_source: m.has_intermediate_source,
        };
        Py::new(py, module)
    })
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
/// Returns the new PTX and its entry.
#[pyfunction]
fn ptx_to_qdp_abi(py: Python<'_>, ptx_text: &str, spec_json: &str) -> PyResult<(String, Py<PyPtxEntry>)> {
    guarded("ptx_to_qdp_abi", ptx_text, || {
        let spec: ptx::QdpSpec = serde_json::from_str(spec_json).map_err(|e| input_err("QDP spec", e))?;
        let q = ptx::to_qdp_abi(ptx_text, &spec).map_err(to_py)?;
        Ok((q.ptx, PyPtxEntry::of(py, &q.entry)?))
    })
}

/// The QDP order and slots of parameters with these roles: `roles_json` is `[[role, index], ..]`
/// (role "input", "extra" or "output"): the order (new i = old order[i]) and the slots.
#[pyfunction]
fn ptx_qdp_layout(roles_json: &str) -> PyResult<(Vec<usize>, PyQdpSlots)> {
    guarded("ptx_qdp_layout", roles_json, || {
        let roles: Vec<ptx::ParamRole> =
            serde_json::from_str(roles_json).map_err(|e| input_err("parameter roles", e))?;
        let s = ptx::QdpSlots::of(&roles);
        Ok((ptx::qdp_order(&roles), PyQdpSlots { inputs: s.inputs, extras: s.extras, outputs: s.outputs }))
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

/// Raise unless the CUBIN's kernel `entry` lays out its parameters as TensorRT passes `slots`.
#[pyfunction]
fn ptx_check_cubin_slots(cubin: &[u8], entry: &str, slots: PyRef<'_, PyQdpSlots>) -> PyResult<()> {
    guarded("ptx_check_cubin_slots", &cubin_label(cubin), || {
        ptx::check_cubin_slots(cubin, entry, slots.core()).map_err(to_py)
    })
}

/// The PTX tileiras embedded in a cuTile CUBIN.
#[pyfunction]
fn ptx_from_cubin(cubin: &[u8]) -> PyResult<String> {
    guarded("ptx_from_cubin", &cubin_label(cubin), || ptx::debug_ptx_from_cubin(cubin).map_err(to_py))
}

/// Parameter layout of kernel `entry` in a CUBIN, in the order the CUBIN lists it.
#[pyfunction]
fn ptx_cubin_params(cubin: &[u8], entry: &str) -> PyResult<Vec<PyCubinParam>> {
    guarded("ptx_cubin_params", &cubin_label(cubin), || {
        let params = ptx::cubin_params(cubin, entry).map_err(to_py)?;
        Ok(params.iter().map(|p| PyCubinParam { ordinal: p.ordinal, offset: p.offset, size: p.size }).collect())
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

/// The module's instruction forms (see `ptx::instruction_forms`).
#[pyfunction]
fn ptx_instruction_forms(ptx_text: &str) -> PyResult<Vec<String>> {
    guarded("ptx_instruction_forms", ptx_text, || ptx::instruction_forms(ptx_text).map_err(to_py))
}
