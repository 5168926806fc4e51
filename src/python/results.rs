//! The pass's results as Python reads them: frozen classes with a getter per field, built
//! from the core's structs (which stay free of pyo3). Tuples where the dataclasses these
//! replace held tuples, lists where they held lists (a report's fields).

use super::record::record;
use crate::graph::Dim;
use crate::lowering::{Edit, Move, RegionReport, Status};
use crate::pass::{RegionMembers, RegionSummary};
use crate::regions::{Origin, Port, PortKind};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use pyo3::IntoPyObjectExt;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyPort>()?;
    m.add_class::<PyOrigin>()?;
    m.add_class::<PyRegionReport>()?;
    m.add_class::<PyRegionSummary>()?;
    m.add_class::<PyRegionMembers>()?;
    m.add_class::<PyEdit>()?;
    m.add_class::<PyMove>()?;
    Ok(())
}

/// A shape as Python writes it: ints and symbolic expressions (str).
fn dims<'py>(py: Python<'py>, shape: &[Dim]) -> PyResult<Bound<'py, PyTuple>> {
    let items = shape
        .iter()
        .map(|d| match d {
            Dim::Const(n) => n.into_bound_py_any(py),
            Dim::Sym(s) => s.into_bound_py_any(py),
        })
        .collect::<PyResult<Vec<_>>>()?;
    PyTuple::new(py, items)
}

fn strs<'py, S: AsRef<str>>(py: Python<'py>, items: &[S]) -> PyResult<Bound<'py, PyTuple>> {
    PyTuple::new(py, items.iter().map(AsRef::as_ref))
}

/// A sequence from Python as a tuple (a list or tuple given to a constructor).
fn tuple_of<'py>(seq: Option<&Bound<'py, PyAny>>, py: Python<'py>) -> PyResult<Py<PyTuple>> {
    Ok(match seq {
        None => PyTuple::empty(py).unbind(),
        Some(s) => PyTuple::new(py, s.try_iter()?.collect::<PyResult<Vec<_>>>()?)?.unbind(),
    })
}

fn list_of<'py>(seq: Option<&Bound<'py, PyAny>>, py: Python<'py>) -> PyResult<Py<PyList>> {
    Ok(match seq {
        None => PyList::empty(py).unbind(),
        Some(s) => PyList::new(py, s.try_iter()?.collect::<PyResult<Vec<_>>>()?)?.unbind(),
    })
}

/// A value crossing a region's boundary: a tensor (`dtype`, `shape`) or an integer (`expr`)
/// produced outside the region. `name` is the node producing it.
#[pyclass(name = "Port", module = "tta._core", frozen, get_all)]
pub struct PyPort {
    name: String,
    /// "tensor" | "sym_int"
    kind: String,
    dtype: Option<String>,
    shape: Py<PyTuple>,
    expr: Option<String>,
    mutated: bool,
}

impl PyPort {
    pub fn of(py: Python<'_>, p: &Port) -> PyResult<Py<PyPort>> {
        let (kind, dtype, shape, expr) = match &p.kind {
            PortKind::Tensor { dtype, shape } => ("tensor", Some(dtype.clone()), dims(py, shape)?, None),
            PortKind::SymInt { expr } => ("sym_int", None, PyTuple::empty(py), Some(expr.clone())),
        };
        let port =
            PyPort { name: p.name.clone(), kind: kind.into(), dtype, shape: shape.unbind(), expr, mutated: p.mutated };
        Py::new(py, port)
    }
}

fn ports<'py>(py: Python<'py>, ps: &[Port]) -> PyResult<Vec<Py<PyPort>>> {
    ps.iter().map(|p| PyPort::of(py, p)).collect()
}

record!(PyPort, "Port", ["name", "kind", "dtype", "shape", "expr", "mutated"], hashable, {
    #[new]
    #[pyo3(signature = (name, kind, dtype=None, shape=None, expr=None, mutated=false))]
    fn new(
        py: Python<'_>,
        name: String,
        kind: String,
        dtype: Option<String>,
        shape: Option<Bound<'_, PyAny>>,
        expr: Option<String>,
        mutated: bool,
    ) -> PyResult<Self> {
        Ok(PyPort { name, kind, dtype, shape: tuple_of(shape.as_ref(), py)?, expr, mutated })
    }
    #[getter]
    fn is_tensor(&self) -> bool {
        self.kind == "tensor"
    }
    /// What makes two ports interchangeable for a plugin (everything but the node name).
    fn signature<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        (self.kind.as_str(), self.dtype.as_deref(), self.shape.bind(py), self.expr.as_deref(), self.mutated)
            .into_pyobject(py)
    }
});

/// What chose a region: a `lower_as` annotation, a module selector or a pattern.
#[pyclass(name = "Origin", module = "tta._core", frozen, get_all)]
pub struct PyOrigin {
    /// "annotation" | "module" | "pattern"
    kind: String,
    /// Module selectors: the type or path prefix.
    selector: Option<String>,
    /// Module selectors: the module's path.
    path: Option<String>,
    /// Pattern selectors: the pattern's name.
    pattern: Option<String>,
}

impl PyOrigin {
    fn of(o: &Origin) -> PyOrigin {
        let none = PyOrigin { kind: String::new(), selector: None, path: None, pattern: None };
        match o {
            Origin::Annotation => PyOrigin { kind: "annotation".into(), ..none },
            Origin::Module { selector, path } => {
                PyOrigin { kind: "module".into(), selector: Some(selector.clone()), path: Some(path.clone()), ..none }
            }
            Origin::Pattern { pattern } => PyOrigin { kind: "pattern".into(), pattern: Some(pattern.clone()), ..none },
        }
    }
}

record!(PyOrigin, "Origin", ["kind", "selector", "path", "pattern"], hashable, {
    #[new]
    #[pyo3(signature = (kind, selector=None, path=None, pattern=None))]
    fn new(kind: String, selector: Option<String>, path: Option<String>, pattern: Option<String>) -> Self {
        PyOrigin { kind, selector, path, pattern }
    }
});

/// The pass's verdict on one region: the op that replaced it, or why it was refused. Its
/// lists are Python lists, as the dataclass it replaced held (so it is not hashable).
#[pyclass(name = "RegionReport", module = "tta._core", frozen, get_all)]
pub struct PyRegionReport {
    id: String,
    #[pyo3(name = "impl")]
    impl_key: String,
    origin: Py<PyOrigin>,
    source: Option<String>,
    /// "outlined" | "refused"
    status: String,
    nodes: Py<PyList>,
    inputs: Py<PyList>,
    outputs: Py<PyList>,
    reason: Option<String>,
    op: Option<String>,
    node: Option<String>,
    /// Export's untagged checks of a value inside the region (assertions and the nodes only
    /// they read, such as `sym_size` -> `le`), taken into it.
    absorbed: Py<PyList>,
}

impl PyRegionReport {
    pub fn of(py: Python<'_>, r: &RegionReport) -> PyResult<Py<PyRegionReport>> {
        let status = match r.status {
            Status::Outlined => "outlined",
            Status::Refused => "refused",
        };
        let report = PyRegionReport {
            id: r.id.clone(),
            impl_key: r.impl_key.clone(),
            origin: Py::new(py, PyOrigin::of(&r.origin))?,
            source: r.source.clone(),
            status: status.into(),
            nodes: PyList::new(py, &r.nodes)?.unbind(),
            inputs: PyList::new(py, ports(py, &r.inputs)?)?.unbind(),
            outputs: PyList::new(py, ports(py, &r.outputs)?)?.unbind(),
            reason: r.reason.clone(),
            op: r.op.clone(),
            node: r.node.clone(),
            absorbed: PyList::new(py, &r.absorbed)?.unbind(),
        };
        Py::new(py, report)
    }
}

record!(
    PyRegionReport,
    "RegionReport",
    ["id", "impl", "origin", "source", "status", "nodes", "inputs", "outputs", "reason", "op", "node", "absorbed"],
    {
        #[new]
        #[pyo3(signature = (id, r#impl, origin, source, status, nodes, inputs, outputs, reason=None, op=None, node=None, absorbed=None))]
        #[allow(clippy::too_many_arguments)]
        fn new(
            py: Python<'_>,
            id: String,
            r#impl: String,
            origin: Py<PyOrigin>,
            source: Option<String>,
            status: String,
            nodes: Bound<'_, PyAny>,
            inputs: Bound<'_, PyAny>,
            outputs: Bound<'_, PyAny>,
            reason: Option<String>,
            op: Option<String>,
            node: Option<String>,
            absorbed: Option<Bound<'_, PyAny>>,
        ) -> PyResult<Self> {
            Ok(PyRegionReport {
                id,
                impl_key: r#impl,
                origin,
                source,
                status,
                nodes: list_of(Some(&nodes), py)?,
                inputs: list_of(Some(&inputs), py)?,
                outputs: list_of(Some(&outputs), py)?,
                reason,
                op,
                node,
                absorbed: list_of(absorbed.as_ref(), py)?,
            })
        }
        #[getter]
        fn outlined(&self) -> bool {
            self.status == "outlined"
        }
    }
);

/// A region between the two steps of the pass: its boundary, for running `meta_impl`.
#[pyclass(name = "RegionSummary", module = "tta._core", frozen, get_all)]
pub struct PyRegionSummary {
    id: String,
    #[pyo3(name = "impl")]
    impl_key: String,
    valid: bool,
    inputs: Py<PyTuple>,
    outputs: Py<PyTuple>,
}

impl PyRegionSummary {
    pub fn of(py: Python<'_>, r: &RegionSummary<'_>) -> PyResult<Py<PyRegionSummary>> {
        let summary = PyRegionSummary {
            id: r.id.into(),
            impl_key: r.impl_key.into(),
            valid: r.valid,
            inputs: PyTuple::new(py, ports(py, r.inputs)?)?.unbind(),
            outputs: PyTuple::new(py, ports(py, r.outputs)?)?.unbind(),
        };
        Py::new(py, summary)
    }
}

record!(PyRegionSummary, "RegionSummary", ["id", "impl", "valid", "inputs", "outputs"], hashable, {});

/// A region's member nodes, and why it was refused before outlining (None when valid).
#[pyclass(name = "RegionMembers", module = "tta._core", frozen, get_all)]
pub struct PyRegionMembers {
    id: String,
    nodes: Py<PyTuple>,
    reason: Option<String>,
}

impl PyRegionMembers {
    pub fn of(py: Python<'_>, r: &RegionMembers<'_>) -> PyResult<Py<PyRegionMembers>> {
        let members =
            PyRegionMembers { id: r.id.into(), nodes: strs(py, &r.nodes)?.unbind(), reason: r.reason.map(Into::into) };
        Py::new(py, members)
    }
}

record!(PyRegionMembers, "RegionMembers", ["id", "nodes", "reason"], hashable, {});

/// One outlined region, as the fx graph replays it: insert `node` (a call of `op` on
/// `inputs`) after `after`, then `getitems`; point readers of `outputs` at them; erase
/// `remove`. `derived`: sizes the region reads that the op derives from an input's shape,
/// as (node, input number, dim).
#[pyclass(name = "Edit", module = "tta._core", frozen, get_all)]
pub struct PyEdit {
    region: String,
    op: String,
    node: String,
    inputs: Py<PyTuple>,
    outputs: Py<PyTuple>,
    getitems: Py<PyTuple>,
    mutated: Py<PyTuple>,
    after: String,
    remove: Py<PyTuple>,
    derived: Py<PyTuple>,
}

impl PyEdit {
    pub fn of(py: Python<'_>, e: &Edit) -> PyResult<Py<PyEdit>> {
        let derived = e
            .derived
            .iter()
            .map(|d| (d.node.as_str(), d.input, d.dim).into_pyobject(py))
            .collect::<PyResult<Vec<_>>>()?;
        let edit = PyEdit {
            region: e.region.clone(),
            op: e.op.clone(),
            node: e.node.clone(),
            inputs: strs(py, &e.inputs)?.unbind(),
            outputs: strs(py, &e.outputs)?.unbind(),
            getitems: strs(py, &e.getitems)?.unbind(),
            mutated: PyTuple::new(py, &e.mutated)?.unbind(),
            after: e.after.clone(),
            remove: strs(py, &e.remove)?.unbind(),
            derived: PyTuple::new(py, derived)?.unbind(),
        };
        Py::new(py, edit)
    }
}

record!(
    PyEdit,
    "Edit",
    ["region", "op", "node", "inputs", "outputs", "getitems", "mutated", "after", "remove", "derived"],
    hashable,
    {}
);

/// After every edit: `node` goes right after `after` (a reader sat between members).
#[pyclass(name = "Move", module = "tta._core", frozen, get_all)]
pub struct PyMove {
    node: String,
    after: String,
}

impl PyMove {
    pub fn of(py: Python<'_>, m: &Move) -> PyResult<Py<PyMove>> {
        Py::new(py, PyMove { node: m.node.clone(), after: m.after.clone() })
    }
}

record!(PyMove, "Move", ["node", "after"], hashable, {});
