//! Tokenizer and recursive-descent parser for the integer expressions sympy prints.
//!
//! Nesting (parentheses, call arguments, unary signs, exponents) is limited to `MAX_NESTING`
//! levels: deeper input is an error, never a stack overflow, on any thread (rayon workers have
//! small stacks). Every other recursion over an expression (comparison, display, evaluation,
//! drop) follows the parsed structure, so it is bounded by the same limit.

use super::error::ExprError;
use super::poly::{Atom, Poly};

/// Deepest nesting the parser accepts (sympy prints sizes a few levels deep).
pub const MAX_NESTING: usize = 64;
/// Largest exponent of `**`: the degree bound, so every canonical text parses back.
pub const MAX_EXPONENT: u32 = super::poly::MAX_DEGREE;

/// Parse a sympy-printed integer expression (`s0`, `2*s0 + 1`, `(s0//2)`, `Max(1, s0)`, ...).
pub fn parse(text: &str) -> Result<Poly, ExprError> {
    let tokens = tokenize(text)?;
    let mut p = Parser { tokens, pos: 0, depth: 0 };
    let e = p.sum()?;
    if p.pos != p.tokens.len() {
        return Err(ExprError(format!("unexpected `{}` after a complete expression", p.tokens[p.pos])));
    }
    Ok(e)
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Int(i64),
    Ident(String),
    Op(&'static str),
}

/// As written in the expression: errors quote the user's text, not Rust's debug form.
impl std::fmt::Display for Tok {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Tok::Int(i) => write!(f, "{i}"),
            Tok::Ident(s) => f.write_str(s),
            Tok::Op(o) => f.write_str(o),
        }
    }
}

fn tokenize(text: &str) -> Result<Vec<Tok>, ExprError> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b' ' | b'\t' => i += 1,
            b'0'..=b'9' => {
                let start = i;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
                let v = text[start..i]
                    .parse()
                    .map_err(|_| ExprError(format!("integer {} does not fit in int64", &text[start..i])))?;
                out.push(Tok::Int(v));
            }
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                out.push(Tok::Ident(text[start..i].to_owned()));
            }
            _ => {
                // Bytes, not `str` slices: `i + 2` may fall inside a multi-byte character.
                let two = b.get(i..i + 2).unwrap_or(&[]);
                let op = match two {
                    b"//" => "//",
                    b"**" => "**",
                    _ => match c {
                        b'+' => "+",
                        b'-' => "-",
                        b'*' => "*",
                        b'/' => "/",
                        b'%' => "%",
                        b'(' => "(",
                        b')' => ")",
                        b',' => ",",
                        _ => {
                            let ch = text[i..].chars().next().unwrap_or('?');
                            return Err(ExprError(format!("unexpected character `{ch}`")));
                        }
                    },
                };
                i += op.len();
                out.push(Tok::Op(op));
            }
        }
    }
    Ok(out)
}

struct Parser {
    tokens: Vec<Tok>,
    pos: usize,
    /// Current nesting, checked against `MAX_NESTING` in `nested`.
    depth: usize,
}

impl Parser {
    fn peek_op(&self) -> Option<&'static str> {
        match self.tokens.get(self.pos) {
            Some(Tok::Op(o)) => Some(o),
            _ => None,
        }
    }

    fn expect(&mut self, op: &str) -> Result<(), ExprError> {
        if self.peek_op() == Some(op) {
            self.pos += 1;
            Ok(())
        } else {
            Err(ExprError(format!("expected `{op}` at token {}", self.pos)))
        }
    }

    /// Run `f` one nesting level deeper; every recursive path of the grammar passes here.
    fn nested(&mut self, f: impl FnOnce(&mut Self) -> Result<Poly, ExprError>) -> Result<Poly, ExprError> {
        if self.depth >= MAX_NESTING {
            return Err(ExprError(format!("the expression nests deeper than {MAX_NESTING} levels")));
        }
        self.depth += 1;
        let r = f(self);
        self.depth -= 1;
        r
    }

    fn sum(&mut self) -> Result<Poly, ExprError> {
        let mut acc = self.product()?;
        while let Some(op @ ("+" | "-")) = self.peek_op() {
            self.pos += 1;
            let rhs = self.product()?;
            if op == "+" {
                acc.add_assign(&rhs)?;
            } else {
                acc.add_assign(&rhs.scale(-1)?)?;
            }
        }
        Ok(acc)
    }

    fn product(&mut self) -> Result<Poly, ExprError> {
        let mut acc = self.unary()?;
        while let Some(op @ ("*" | "//" | "%" | "/")) = self.peek_op() {
            self.pos += 1;
            let rhs = self.unary()?;
            acc = match op {
                "*" => acc.mul(&rhs)?,
                "//" => acc.floor_div(&rhs)?,
                "%" => acc.modulo(&rhs)?,
                _ => match rhs.as_constant().and_then(|b| acc.exact_div(b)) {
                    Some(exact) => exact?,
                    None => Poly::atom(Atom::Call("TrueDiv".into(), vec![acc, rhs])),
                },
            };
        }
        Ok(acc)
    }

    fn unary(&mut self) -> Result<Poly, ExprError> {
        if self.peek_op() == Some("-") {
            self.pos += 1;
            return self.nested(|p| p.unary())?.scale(-1);
        }
        if self.peek_op() == Some("+") {
            self.pos += 1;
            return self.nested(|p| p.unary());
        }
        self.power()
    }

    fn power(&mut self) -> Result<Poly, ExprError> {
        let base = self.primary()?;
        if self.peek_op() == Some("**") {
            self.pos += 1;
            let exp = self.nested(|p| p.unary())?;
            let n = exp
                .as_constant()
                .and_then(|n| u32::try_from(n).ok())
                .filter(|n| *n <= MAX_EXPONENT)
                .ok_or_else(|| ExprError(format!("only integer powers from 0 to {MAX_EXPONENT} are supported")))?;
            return base.pow(n);
        }
        Ok(base)
    }

    fn primary(&mut self) -> Result<Poly, ExprError> {
        match self.tokens.get(self.pos).cloned() {
            Some(Tok::Int(v)) => {
                self.pos += 1;
                Ok(Poly::constant(v))
            }
            Some(Tok::Op("(")) => {
                self.pos += 1;
                let e = self.nested(|p| p.sum())?;
                self.expect(")")?;
                Ok(e)
            }
            Some(Tok::Ident(name)) => {
                self.pos += 1;
                if self.peek_op() != Some("(") {
                    return Ok(Poly::symbol(&name));
                }
                self.pos += 1;
                let mut args = vec![self.nested(|p| p.sum())?];
                while self.peek_op() == Some(",") {
                    self.pos += 1;
                    args.push(self.nested(|p| p.sum())?);
                }
                self.expect(")")?;
                call(&name, args)
            }
            Some(other) => Err(ExprError(format!("unexpected `{other}`"))),
            None => Err(ExprError("the expression ends where a value should follow".into())),
        }
    }
}

/// The functions torch's sympy printing produces, mapped onto the canonical atoms.
fn call(name: &str, mut args: Vec<Poly>) -> Result<Poly, ExprError> {
    let two = |args: &mut Vec<Poly>| -> Result<(Poly, Poly), ExprError> {
        if args.len() != 2 {
            return Err(ExprError(format!("{name} takes 2 arguments")));
        }
        let b = args.pop().expect("two arguments");
        Ok((args.pop().expect("two arguments"), b))
    };
    match name {
        "FloorDiv" => {
            let (a, b) = two(&mut args)?;
            a.floor_div(&b)
        }
        "CeilDiv" | "IntCeilDiv" => {
            let (a, b) = two(&mut args)?;
            a.ceil_div(&b)
        }
        "Mod" | "PythonMod" | "ModularIndexing" if args.len() == 2 => {
            let (a, b) = two(&mut args)?;
            a.modulo(&b)
        }
        "Max" => Poly::extremum(args, true),
        "Min" => Poly::extremum(args, false),
        _ => Ok(Poly::atom(Atom::Call(name.to_owned(), args))),
    }
}
