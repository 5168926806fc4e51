//! pyo3 bindings: graphs and declarations in as JSON text (or fx graphs read in, `fx.rs`),
//! results out as typed classes (`results.rs`, `ptx.rs`). No pass logic lives here. Every entry point runs
//! inside `guarded`, so a Rust panic reaches Python as a `CoreError`, never as an abort.

mod expr;
mod fx;
mod guard;
mod pass;
mod ptx;
mod record;
mod results;

use guard::CoreError;
use pyo3::prelude::*;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("CoreError", m.py().get_type::<CoreError>())?;
    pass::register(m)?;
    results::register(m)?;
    m.add_class::<fx::PyFxReader>()?;
    expr::register(m)?;
    ptx::register(m)?;
    Ok(())
}
