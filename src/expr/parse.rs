//! Tokenizer and recursive-descent parser for the integer expressions sympy prints.

use super::poly::{Atom, Poly};
use super::error::ExprError;

/// Parse a sympy-printed integer expression (`s0`, `2*s0 + 1`, `(s0//2)`, `Max(1, s0)`, ...).
pub fn parse(text: &str) -> Result<Poly, ExprError> {
    let tokens = tokenize(text)?;
    let mut p = Parser { tokens, pos: 0 };
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
                let v = text[start..i].parse().map_err(|_| ExprError(format!("integer too large")))?;
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
                let two = if i + 1 < b.len() { &text[i..i + 2] } else { "" };
                let op = match two {
                    "//" => "//",
                    "**" => "**",
                    _ => match c {
                        b'+' => "+",
                        b'-' => "-",
                        b'*' => "*",
                        b'/' => "/",
                        b'%' => "%",
                        b'(' => "(",
                        b')' => ")",
                        b',' => ",",
                        _ => return Err(ExprError(format!("unexpected character `{}`", c as char))),
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

    fn sum(&mut self) -> Result<Poly, ExprError> {
        let mut acc = self.product()?;
        while let Some(op @ ("+" | "-")) = self.peek_op() {
            self.pos += 1;
            let rhs = self.product()?;
            acc = if op == "+" { acc.add(&rhs) } else { acc.add(&rhs.scale(-1)) };
        }
        Ok(acc)
    }

    fn product(&mut self) -> Result<Poly, ExprError> {
        let mut acc = self.unary()?;
        while let Some(op @ ("*" | "//" | "%" | "/")) = self.peek_op() {
            self.pos += 1;
            let rhs = self.unary()?;
            acc = match op {
                "*" => acc.mul(&rhs),
                "//" => acc.floor_div(&rhs)?,
                "%" => acc.modulo(&rhs)?,
                _ => match (acc.as_constant(), rhs.as_constant()) {
                    (_, Some(b)) if b != 0 && acc.terms.values().all(|c| c % b == 0) => acc.floor_div(&rhs)?,
                    _ => Poly::atom(Atom::Call("TrueDiv".into(), vec![acc, rhs])),
                },
            };
        }
        Ok(acc)
    }

    fn unary(&mut self) -> Result<Poly, ExprError> {
        if self.peek_op() == Some("-") {
            self.pos += 1;
            return Ok(self.unary()?.scale(-1));
        }
        if self.peek_op() == Some("+") {
            self.pos += 1;
            return self.unary();
        }
        self.power()
    }

    fn power(&mut self) -> Result<Poly, ExprError> {
        let base = self.primary()?;
        if self.peek_op() == Some("**") {
            self.pos += 1;
            let exp = self.unary()?;
            let n = exp.as_constant().filter(|n| (0..=16).contains(n)).ok_or_else(|| {
                ExprError("only small non-negative integer powers are supported".into())
            })?;
            let mut acc = Poly::constant(1);
            for _ in 0..n {
                acc = acc.mul(&base);
            }
            return Ok(acc);
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
                let e = self.sum()?;
                self.expect(")")?;
                Ok(e)
            }
            Some(Tok::Ident(name)) => {
                self.pos += 1;
                if self.peek_op() != Some("(") {
                    return Ok(Poly::symbol(&name));
                }
                self.pos += 1;
                let mut args = vec![self.sum()?];
                while self.peek_op() == Some(",") {
                    self.pos += 1;
                    args.push(self.sum()?);
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
        let b = args.pop().unwrap();
        Ok((args.pop().unwrap(), b))
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
        "Max" => Ok(Poly::extremum(args, true)),
        "Min" => Ok(Poly::extremum(args, false)),
        _ => Ok(Poly::atom(Atom::Call(name.to_owned(), args))),
    }
}

