//! pyo3 bindings: JSON strings in, JSON strings out (and fx graphs read in, `fx.rs`). No pass
//! logic lives here. Every entry point runs
//! inside `guarded`, so a Rust panic reaches Python as a `CoreError`, never as an abort.

mod expr;
mod fx;
mod guard;
mod pass;
mod ptx;

use guard::CoreError;
use pyo3::prelude::*;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("CoreError", m.py().get_type::<CoreError>())?;
    pass::register(m)?;
    m.add_class::<fx::PyFxReader>()?;
    expr::register(m)?;
    ptx::register(m)?;
    Ok(())
}
