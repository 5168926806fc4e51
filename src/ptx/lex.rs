//! The token level of the PTX reader: comments and strings masked out byte for byte, words and
//! punctuation, and skipping of statements and brace blocks the reader does not care about.

use super::span::{ptx_err, Span};
use crate::error::{Error, Result};

/// The text with comments blanked and string contents replaced, byte for byte, so that spans
/// found in it are spans in the source and `//`, `{` or `;` inside comments and strings
/// (`.file 1 "a//b.py"`) mean nothing.
pub(super) fn mask(src: &str) -> Result<Vec<u8>> {
    let b = src.as_bytes();
    let mut m = b.to_vec();
    let mut i = 0;
    let blank = |m: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut m[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    while i < b.len() {
        match (b[i], b.get(i + 1)) {
            (b'/', Some(b'/')) => {
                let end = b[i..].iter().position(|&c| c == b'\n').map_or(b.len(), |k| i + k);
                blank(&mut m, i, end);
                i = end;
            }
            (b'/', Some(b'*')) => {
                let end = find(b, i + 2, b"*/")
                    .map(|k| k + 2)
                    .ok_or_else(|| ptx_err(format!("a `/*` comment on line {} is never closed", line_of(b, i))))?;
                blank(&mut m, i, end);
                i = end;
            }
            (b'"', _) => {
                let mut k = i + 1;
                while k < b.len() && b[k] != b'"' && b[k] != b'\n' {
                    k += if b[k] == b'\\' { 2 } else { 1 };
                }
                let k = k.min(b.len());
                for c in &mut m[i + 1..k] {
                    *c = b'_';
                }
                i = k + 1;
            }
            _ => i += 1,
        }
    }
    Ok(m)
}

fn find(hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    hay.get(from..)?.windows(needle.len()).position(|w| w == needle).map(|k| from + k)
}

fn line_of(b: &[u8], at: usize) -> usize {
    1 + b[..at.min(b.len())].iter().filter(|&&c| c == b'\n').count()
}

/// A word (`.param`, `%r1`, `9.4`, `add_kernel_param_0`) or one punctuation byte.
#[derive(Clone, Copy, Debug)]
pub(super) struct Tok {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) punct: Option<u8>,
}

fn is_word_byte(c: u8) -> bool {
    // Bytes >= 0x80 stay inside words so that a span never splits a UTF-8 character.
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'$' | b'%') || c >= 0x80
}

pub(super) struct Parser<'a> {
    pub(super) src: &'a str,
    pub(super) m: Vec<u8>,
    pub(super) pos: usize,
}

impl<'a> Parser<'a> {
    pub(super) fn peek(&self) -> Option<Tok> {
        let m = &self.m;
        let mut i = self.pos;
        while i < m.len() && (m[i].is_ascii_whitespace() || m[i] == 0) {
            i += 1;
        }
        if i >= m.len() {
            return None;
        }
        if is_word_byte(m[i]) {
            let start = i;
            while i < m.len() && is_word_byte(m[i]) {
                i += 1;
            }
            Some(Tok { start, end: i, punct: None })
        } else {
            Some(Tok { start: i, end: i + 1, punct: Some(m[i]) })
        }
    }

    pub(super) fn next(&mut self) -> Option<Tok> {
        let t = self.peek()?;
        self.pos = t.end;
        Some(t)
    }

    pub(super) fn text(&self, t: Tok) -> &'a str {
        &self.src[t.start..t.end]
    }

    pub(super) fn span(&self, t: Tok) -> Span {
        Span { start: t.start, end: t.end }
    }

    pub(super) fn line(&self, at: usize) -> usize {
        line_of(&self.m, at)
    }

    pub(super) fn err_at(&self, t: Tok, what: &str) -> Error {
        ptx_err(format!("{what} (line {}, at `{}`)", self.line(t.start), self.text(t)))
    }

    pub(super) fn same_line(&self, t: Tok) -> bool {
        !self.m[self.pos..t.start].contains(&b'\n')
    }

    /// The next token, which must be a word on the same line as `after`.
    pub(super) fn word_after(&mut self, after: Tok, what: &str) -> Result<Tok> {
        match self.peek() {
            Some(t) if t.punct.is_none() && self.same_line(t) => {
                self.pos = t.end;
                Ok(t)
            }
            _ => Err(ptx_err(format!("expected {what} on line {}", self.line(after.start)))),
        }
    }

    pub(super) fn eat_on_line(&mut self, punct: u8) -> bool {
        match self.peek() {
            Some(t) if t.punct == Some(punct) && self.same_line(t) => {
                self.pos = t.end;
                true
            }
            _ => false,
        }
    }

    pub(super) fn skip_line(&mut self) {
        self.pos = self.m[self.pos..].iter().position(|&c| c == b'\n').map_or(self.m.len(), |k| self.pos + k);
    }

    /// Skip to the `;` that ends the statement begun by `first`, or past the `{ ... }` block it
    /// opens (and a `;` right after one, as in `= { 1, 2 };`).
    pub(super) fn skip_statement(&mut self, first: Tok) -> Result<()> {
        let mut t = first;
        loop {
            match t.punct {
                Some(b';') => return Ok(()),
                Some(b'{') => {
                    self.skip_block(t)?;
                    if self.peek().is_some_and(|n| n.punct == Some(b';')) {
                        self.next();
                    }
                    return Ok(());
                }
                _ => {}
            }
            t = match self.next() {
                Some(t) => t,
                None => return Ok(()),
            };
        }
    }

    /// `open` is a `{` just consumed; returns the span of the block, braces included.
    pub(super) fn skip_block(&mut self, open: Tok) -> Result<Span> {
        let mut depth = 1usize;
        let m = &self.m;
        let mut i = self.pos;
        while i < m.len() {
            match m[i] {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        self.pos = i + 1;
                        return Ok(Span { start: open.start, end: i + 1 });
                    }
                }
                _ => {}
            }
            i += 1;
        }
        Err(ptx_err(format!("the `{{` on line {} is never closed", self.line(open.start))))
    }
}
