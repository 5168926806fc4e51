//! Canonical text of atoms and polynomials.

use super::poly::{Atom, Monomial, Poly};
use std::fmt;

impl fmt::Display for Atom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |xs: &[Poly]| xs.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", ");
        match self {
            Atom::Sym(s) => f.write_str(s),
            Atom::FloorDiv(a, b) => write!(f, "FloorDiv({a}, {b})"),
            Atom::CeilDiv(a, b) => write!(f, "CeilDiv({a}, {b})"),
            Atom::Mod(a, b) => write!(f, "Mod({a}, {b})"),
            Atom::Max(xs) => write!(f, "Max({})", list(xs)),
            Atom::Min(xs) => write!(f, "Min({})", list(xs)),
            Atom::Call(n, xs) => write!(f, "{n}({})", list(xs)),
        }
    }
}

/// Canonical text: terms in a fixed order, `c*a**p*b` style, constant last.
impl fmt::Display for Poly {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.terms.is_empty() {
            return f.write_str("0");
        }
        let mut first = true;
        let mut ordered: Vec<(&Monomial, &i64)> = self.terms.iter().filter(|(m, _)| !m.is_empty()).collect();
        if let Some(c) = self.terms.get(&Monomial::new()) {
            ordered.push((self.terms.keys().next().expect("non-empty"), c));
        }
        for (m, c) in ordered {
            let body: Vec<String> =
                m.iter().map(|(a, p)| if *p == 1 { a.to_string() } else { format!("{a}**{p}") }).collect();
            // i64::MIN has no positive counterpart to print after a minus sign; it is written as
            // the sum it is, in parentheses, so the text parses back to the same value.
            let min = "(-9223372036854775807 - 1)";
            let (sign, mag) = if *c < 0 && *c != i64::MIN { ("-", c.unsigned_abs()) } else { ("+", c.unsigned_abs()) };
            if first {
                if sign == "-" {
                    f.write_str("-")?;
                }
            } else {
                write!(f, " {sign} ")?;
            }
            first = false;
            match (body.is_empty(), mag) {
                (true, _) if *c == i64::MIN => f.write_str(min)?,
                (false, _) if *c == i64::MIN => write!(f, "{min}*{}", body.join("*"))?,
                (true, _) => write!(f, "{mag}")?,
                (false, 1) => f.write_str(&body.join("*"))?,
                (false, _) => write!(f, "{mag}*{}", body.join("*"))?,
            }
        }
        Ok(())
    }
}
