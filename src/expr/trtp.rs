//! Rendering in the restricted arithmetic of TensorRT's `trtp` shape expressions.

use super::error::ExprError;
use super::poly::{Atom, Poly};

impl Poly {
    /// Render in the arithmetic TensorRT's `trtp.ShapeExpr` supports: `+ - * //`, `trtp.cdiv`,
    /// `trtp.max`, `trtp.min`; never an integer on the left, never unary minus, never `%`.
    /// `leaf` renders a symbol (e.g. `inp0.shape_expr[1]`).
    pub fn to_trtp(&self, leaf: &dyn Fn(&str) -> String) -> Result<String, ExprError> {
        let mut positive = Vec::new();
        let mut negative = Vec::new();
        let mut constant = 0i64;
        for (m, c) in &self.terms {
            if m.is_empty() {
                constant = *c;
                continue;
            }
            let mut factors = Vec::new();
            for (a, p) in m {
                let f = a.to_trtp(leaf)?;
                for _ in 0..*p {
                    factors.push(f.clone());
                }
            }
            let mut s = factors.join(" * ");
            if c.unsigned_abs() != 1 {
                s = format!("{s} * {}", c.unsigned_abs());
            }
            if *c > 0 {
                positive.push(s)
            } else {
                negative.push(s)
            }
        }
        if positive.is_empty() {
            if negative.is_empty() {
                return Err(ExprError(format!(
                    "the constant {constant} is not a shape expression by itself; TensorRT needs an expression to build on"
                )));
            }
            return Err(ExprError(format!("expression {self} is negative in every term")));
        }
        let mut out = positive.join(" + ");
        for n in negative {
            out = format!("{out} - {n}");
        }
        if constant > 0 {
            out = format!("{out} + {constant}");
        } else if constant < 0 {
            out = format!("{out} - {}", constant.unsigned_abs());
        }
        Ok(out)
    }
}

impl Atom {
    fn to_trtp(&self, leaf: &dyn Fn(&str) -> String) -> Result<String, ExprError> {
        let wrap = |p: &Poly| -> Result<String, ExprError> {
            match p.as_constant() {
                Some(c) if c >= 0 => Ok(c.to_string()),
                Some(c) => Err(ExprError(format!("negative constant {c} in a shape expression"))),
                None => Ok(format!("({})", p.to_trtp(leaf)?)),
            }
        };
        Ok(match self {
            Atom::Sym(s) => leaf(s),
            Atom::FloorDiv(a, b) => {
                if a.as_constant().is_some() {
                    return Err(ExprError(format!("{self}: TensorRT cannot divide a constant by an expression")));
                }
                format!("{} // {}", wrap(a)?, wrap(b)?)
            }
            Atom::CeilDiv(a, b) => format!("trtp.cdiv({}, {})", wrap(a)?, wrap(b)?),
            Atom::Max(xs) | Atom::Min(xs) => {
                let name = if matches!(self, Atom::Max(_)) { "trtp.max" } else { "trtp.min" };
                // Put a non-constant argument first: trtp needs an expression to dispatch on.
                let mut parts: Vec<&Poly> = xs.iter().collect();
                parts.sort_by_key(|p| p.as_constant().is_some());
                let mut acc = wrap(parts[0])?;
                for p in &parts[1..] {
                    acc = format!("{name}({acc}, {})", wrap(p)?);
                }
                acc
            }
            Atom::Mod(..) => return Err(ExprError(format!("{self}: TensorRT shape expressions have no modulo"))),
            Atom::Call(name, _) => return Err(ExprError(format!("{name}(...) has no TensorRT shape expression"))),
        })
    }
}
