//! Values for concrete sizes, and substitution of symbols by polynomials.

use super::poly::{Atom, Poly};
use super::error::ExprError;
use std::collections::HashMap;

impl Poly {
    /// Evaluate with concrete symbol values.
    pub fn eval(&self, env: &HashMap<String, i64>) -> Result<i64, ExprError> {
        let mut total: i64 = 0;
        for (m, c) in &self.terms {
            let mut v = *c;
            for (a, p) in m {
                let x = a.eval(env)?;
                for _ in 0..*p {
                    v = v.checked_mul(x).ok_or_else(|| ExprError("overflow".into()))?;
                }
            }
            total = total.checked_add(v).ok_or_else(|| ExprError("overflow".into()))?;
        }
        Ok(total)
    }

    /// Substitute symbols by polynomials.
    pub fn substitute(&self, map: &HashMap<String, Poly>) -> Result<Poly, ExprError> {
        let mut out = Poly::default();
        for (m, c) in &self.terms {
            let mut term = Poly::constant(*c);
            for (a, p) in m {
                let x = a.substitute(map)?;
                for _ in 0..*p {
                    term = term.mul(&x);
                }
            }
            out = out.add(&term);
        }
        Ok(out)
    }
}

impl Atom {
    pub(super) fn eval(&self, env: &HashMap<String, i64>) -> Result<i64, ExprError> {
        let div = |a: &Poly, b: &Poly| -> Result<(i64, i64), ExprError> {
            let (a, b) = (a.eval(env)?, b.eval(env)?);
            if b == 0 {
                return Err(ExprError("division by zero".into()));
            }
            Ok((a, b))
        };
        Ok(match self {
            Atom::Sym(s) => *env.get(s).ok_or_else(|| ExprError(format!("no value for symbol {s}")))?,
            Atom::FloorDiv(a, b) => {
                let (a, b) = div(a, b)?;
                a.div_euclid(b)
            }
            Atom::CeilDiv(a, b) => {
                let (a, b) = div(a, b)?;
                -((-a).div_euclid(b))
            }
            Atom::Mod(a, b) => {
                let (a, b) = div(a, b)?;
                a.rem_euclid(b)
            }
            Atom::Max(xs) => xs.iter().map(|x| x.eval(env)).collect::<Result<Vec<_>, _>>()?.into_iter().max().unwrap(),
            Atom::Min(xs) => xs.iter().map(|x| x.eval(env)).collect::<Result<Vec<_>, _>>()?.into_iter().min().unwrap(),
            Atom::Call(name, _) => return Err(ExprError(format!("cannot evaluate {name}(...)"))),
        })
    }

    pub(super) fn substitute(&self, map: &HashMap<String, Poly>) -> Result<Poly, ExprError> {
        let sub2 = |a: &Poly, b: &Poly| Ok::<_, ExprError>((a.substitute(map)?, b.substitute(map)?));
        match self {
            Atom::Sym(s) => Ok(map.get(s).cloned().unwrap_or_else(|| Poly::symbol(s))),
            Atom::FloorDiv(a, b) => {
                let (a, b) = sub2(a, b)?;
                a.floor_div(&b)
            }
            Atom::CeilDiv(a, b) => {
                let (a, b) = sub2(a, b)?;
                a.ceil_div(&b)
            }
            Atom::Mod(a, b) => {
                let (a, b) = sub2(a, b)?;
                a.modulo(&b)
            }
            Atom::Max(xs) | Atom::Min(xs) => {
                let xs = xs.iter().map(|x| x.substitute(map)).collect::<Result<Vec<_>, _>>()?;
                Ok(Poly::extremum(xs, matches!(self, Atom::Max(_))))
            }
            Atom::Call(name, xs) => {
                let xs = xs.iter().map(|x| x.substitute(map)).collect::<Result<Vec<_>, _>>()?;
                Ok(Poly::atom(Atom::Call(name.clone(), xs)))
            }
        }
    }
}
