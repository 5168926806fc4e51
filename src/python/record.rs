//! What every result class shares with the frozen dataclass it replaced: a repr naming each
//! field, equality (and, where the class holds no list, hashing) by field values, and
//! `__match_args__`, the field names in order (`tta report --json` and the stub test read them).

use pyo3::basic::CompareOp;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// The values of `fields`, read through the getters (as the dataclass compared them).
fn values<'py>(obj: &Bound<'py, PyAny>, fields: &[&str]) -> PyResult<Bound<'py, PyTuple>> {
    let vals = fields.iter().map(|f| obj.getattr(*f)).collect::<PyResult<Vec<_>>>()?;
    PyTuple::new(obj.py(), vals)
}

pub fn repr(obj: &Bound<'_, PyAny>, name: &str, fields: &[&str]) -> PyResult<String> {
    let mut parts = Vec::with_capacity(fields.len());
    for f in fields {
        parts.push(format!("{f}={}", obj.getattr(*f)?.repr()?));
    }
    Ok(format!("{name}({})", parts.join(", ")))
}

/// `==` and `!=` between two objects of one class; anything else is NotImplemented.
pub fn richcmp(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>, op: CompareOp, fields: &[&str]) -> PyResult<Py<PyAny>> {
    let py = a.py();
    if !b.get_type().is(a.get_type()) || !matches!(op, CompareOp::Eq | CompareOp::Ne) {
        return Ok(py.NotImplemented());
    }
    let same = values(a, fields)?.eq(values(b, fields)?)?;
    Ok(pyo3::types::PyBool::new(py, same == matches!(op, CompareOp::Eq)).to_owned().into_any().unbind())
}

pub fn hash(obj: &Bound<'_, PyAny>, fields: &[&str]) -> PyResult<isize> {
    values(obj, fields)?.hash()
}

/// The `#[pymethods]` block of a result class: `__match_args__`, `__repr__`, `__richcmp__`
/// (and `__hash__` with `hashable`), then the class's own items.
macro_rules! record {
    ($ty:ident, $name:literal, [$($field:literal),* $(,)?], hashable, { $($extra:tt)* }) => {
        record!($ty, $name, [$($field),*], {
            fn __hash__(slf: &Bound<'_, Self>) -> PyResult<isize> {
                $crate::python::record::hash(slf.as_any(), Self::FIELDS)
            }
            $($extra)*
        });
    };
    ($ty:ident, $name:literal, [$($field:literal),* $(,)?], { $($extra:tt)* }) => {
        impl $ty {
            const FIELDS: &'static [&'static str] = &[$($field),*];
        }
        #[pymethods]
        impl $ty {
            #[classattr]
            fn __match_args__(py: Python<'_>) -> PyResult<Py<pyo3::types::PyTuple>> {
                Ok(pyo3::types::PyTuple::new(py, Self::FIELDS)?.unbind())
            }
            fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
                $crate::python::record::repr(slf.as_any(), $name, Self::FIELDS)
            }
            fn __richcmp__(
                slf: &Bound<'_, Self>,
                other: &Bound<'_, PyAny>,
                op: pyo3::basic::CompareOp,
            ) -> PyResult<Py<PyAny>> {
                $crate::python::record::richcmp(slf.as_any(), other, op, Self::FIELDS)
            }
            $($extra)*
        }
    };
}
pub(crate) use record;
