//! Values for concrete sizes, and substitution of symbols by polynomials. All arithmetic is
//! checked: an overflow is an error naming the operation, never a wrapped number.

use super::error::ExprError;
use super::poly::{ceil_div_i64, overflow, Atom, Poly};
use std::collections::HashMap;

impl Poly {
    /// Evaluate with concrete symbol values.
    pub fn eval(&self, env: &HashMap<String, i64>) -> Result<i64, ExprError> {
        let mut total: i64 = 0;
        for (m, c) in &self.terms {
            let mut v = *c;
            for (a, p) in m {
                let x = a.eval(env)?;
                let xp = x.checked_pow(*p).ok_or_else(|| overflow("a power"))?;
                v = v.checked_mul(xp).ok_or_else(|| overflow("a product"))?;
            }
            total = total.checked_add(v).ok_or_else(|| overflow("a sum"))?;
        }
        Ok(total)
    }

    /// Substitute symbols by polynomials.
    pub fn substitute(&self, map: &HashMap<String, Poly>) -> Result<Poly, ExprError> {
        let mut out = Poly::default();
        for (m, c) in &self.terms {
            let mut term = Poly::constant(*c);
            for (a, p) in m {
                term = term.mul(&a.substitute(map)?.pow(*p)?)?;
            }
            out.add_assign(&term)?;
        }
        Ok(out)
    }
}

impl Atom {
    fn eval(&self, env: &HashMap<String, i64>) -> Result<i64, ExprError> {
        let div = |a: &Poly, b: &Poly| -> Result<(i64, i64), ExprError> {
            let (a, b) = (a.eval(env)?, b.eval(env)?);
            if b == 0 {
                return Err(ExprError("division by zero".into()));
            }
            Ok((a, b))
        };
        let all = |xs: &[Poly]| xs.iter().map(|x| x.eval(env)).collect::<Result<Vec<i64>, _>>();
        let empty = || ExprError("Max/Min of nothing".into());
        Ok(match self {
            Atom::Sym(s) => *env.get(s).ok_or_else(|| ExprError(format!("no value for symbol {s}")))?,
            Atom::FloorDiv(a, b) => {
                let (a, b) = div(a, b)?;
                a.checked_div_euclid(b).ok_or_else(|| overflow("a floor division"))?
            }
            Atom::CeilDiv(a, b) => {
                let (a, b) = div(a, b)?;
                ceil_div_i64(a, b)?
            }
            Atom::Mod(a, b) => {
                let (a, b) = div(a, b)?;
                a.checked_rem_euclid(b).ok_or_else(|| overflow("a modulo"))?
            }
            Atom::Max(xs) => all(xs)?.into_iter().max().ok_or_else(empty)?,
            Atom::Min(xs) => all(xs)?.into_iter().min().ok_or_else(empty)?,
            Atom::Call(name, _) => return Err(ExprError(format!("cannot evaluate {name}(...)"))),
        })
    }

    fn substitute(&self, map: &HashMap<String, Poly>) -> Result<Poly, ExprError> {
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
                Poly::extremum(xs, matches!(self, Atom::Max(_)))
            }
            Atom::Call(name, xs) => {
                let xs = xs.iter().map(|x| x.substitute(map)).collect::<Result<Vec<_>, _>>()?;
                Ok(Poly::atom(Atom::Call(name.clone(), xs)))
            }
        }
    }
}
