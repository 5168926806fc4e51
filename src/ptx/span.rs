//! Byte spans into PTX text, and the error every PTX reader and rewriter returns.

use crate::error::{Error, ErrorKind};

/// Byte range `start..end` in the PTX text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

impl Span {
    pub fn of(self, src: &str) -> &str {
        &src[self.start..self.end]
    }
}

pub(crate) fn ptx_err(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Ptx, message)
}
