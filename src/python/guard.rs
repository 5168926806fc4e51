//! The error boundary between Rust and Python: `CoreError`, its conversion from `Error`, and
//! `guarded`, which turns a panic into a `CoreError` of kind "internal" naming the entry point
//! and (a prefix of) the input it was given.

use crate::error::{Error, ErrorKind};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};

create_exception!(
    _core,
    CoreError,
    PyException,
    "An error from tta's Rust core: args = (kind, message, node, source)."
);

pub fn to_py(e: Error) -> PyErr {
    let kind = match e.kind {
        ErrorKind::Parse => "parse",
        ErrorKind::Verify => "verify",
        ErrorKind::Input => "input",
        ErrorKind::Mismatch => "mismatch",
        ErrorKind::Ptx => "ptx",
        ErrorKind::Internal => "internal",
    };
    CoreError::new_err((kind, e.to_string(), e.node, e.source))
}

pub fn input_err(what: &str, e: serde_json::Error) -> PyErr {
    to_py(Error::new(ErrorKind::Input, format!("{what}: {e}")))
}

pub fn json<T: serde::Serialize + ?Sized>(v: &T) -> String {
    serde_json::to_string(v).expect("serializable")
}

/// At most this many characters of an input are quoted in an internal error.
const QUOTE: usize = 120;

/// Run `f`; a panic inside becomes `CoreError("internal", ...)` naming `entry` and the input.
/// Nothing a panicking call touched escapes: every entry point either owns its state or
/// consumes it (`Analysis::outline`), so no half-updated object stays visible to Python.
pub fn guarded<T>(entry: &str, input: &str, f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => {
            let why = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            let quoted: String = input.chars().take(QUOTE).collect();
            let more = if input.chars().nth(QUOTE).is_some() { "..." } else { "" };
            Err(to_py(Error::new(
                ErrorKind::Internal,
                format!("internal error in {entry} (please report it) on input {quoted:?}{more}: {why}"),
            )))
        }
    }
}
