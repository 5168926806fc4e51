//! One error type for the whole pass. Every error that concerns a node names it, and the user's
//! source line when the graph carries one, so Python can show it as is.

use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub kind: ErrorKind,
    /// The node the error is about, if any.
    pub node: Option<String>,
    /// `file:line` of the user's code that produced the node, if known.
    pub source: Option<String>,
    pub message: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The JSON is not a graph of this format and version.
    Parse,
    /// The graph breaks an invariant (names, references, dtypes, shape expressions).
    Verify,
    /// The pass's other inputs (impl declarations, meta outputs, selectors) are malformed.
    Input,
    /// Python's rewritten graph differs from the one the pass produced.
    Mismatch,
    /// PTX text could not be parsed or does not fit the target.
    Ptx,
    /// A bug in tta (a caught panic): the message names the entry point and its input.
    Internal,
}

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error { kind, node: None, source: None, message: message.into() }
    }
    pub fn at(kind: ErrorKind, node: &str, source: Option<&str>, message: impl Into<String>) -> Self {
        Error { kind, node: Some(node.to_owned()), source: source.map(str::to_owned), message: message.into() }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(node) = &self.node {
            write!(f, "node `{node}`")?;
            if let Some(src) = &self.source {
                write!(f, " ({src})")?;
            }
            f.write_str(": ")?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;
