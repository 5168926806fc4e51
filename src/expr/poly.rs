//! The canonical form: a polynomial with integer coefficients over atoms, and the algebra that
//! keeps it canonical (sums, products, divisions by constants, extrema).

use super::error::ExprError;
use std::collections::BTreeMap;

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Atom {
    Sym(String),
    /// floor(a / b)
    FloorDiv(Box<Poly>, Box<Poly>),
    /// ceil(a / b)
    CeilDiv(Box<Poly>, Box<Poly>),
    /// a mod b (Python semantics; sizes are non-negative)
    Mod(Box<Poly>, Box<Poly>),
    Max(Vec<Poly>),
    Min(Vec<Poly>),
    /// Any other function sympy may print (kept opaque; equal only when identical).
    Call(String, Vec<Poly>),
}

/// Product of atoms with positive powers; the empty monomial is the constant term.
pub type Monomial = BTreeMap<Atom, u32>;

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Poly {
    pub(super) terms: BTreeMap<Monomial, i64>,
}

impl Poly {
    pub fn constant(c: i64) -> Poly {
        let mut terms = BTreeMap::new();
        if c != 0 {
            terms.insert(Monomial::new(), c);
        }
        Poly { terms }
    }

    pub fn atom(a: Atom) -> Poly {
        let mut m = Monomial::new();
        m.insert(a, 1);
        Poly { terms: BTreeMap::from([(m, 1)]) }
    }

    pub fn symbol(name: &str) -> Poly {
        Poly::atom(Atom::Sym(name.to_owned()))
    }

    /// The value if this polynomial has no atoms.
    pub fn as_constant(&self) -> Option<i64> {
        match self.terms.len() {
            0 => Some(0),
            1 => self.terms.get(&Monomial::new()).copied(),
            _ => None,
        }
    }

    pub fn add(&self, other: &Poly) -> Poly {
        let mut terms = self.terms.clone();
        for (m, c) in &other.terms {
            let e = terms.entry(m.clone()).or_insert(0);
            *e += c;
            if *e == 0 {
                terms.remove(m);
            }
        }
        Poly { terms }
    }

    pub fn scale(&self, k: i64) -> Poly {
        if k == 0 {
            return Poly::default();
        }
        Poly { terms: self.terms.iter().map(|(m, c)| (m.clone(), c * k)).collect() }
    }

    pub fn mul(&self, other: &Poly) -> Poly {
        let mut out = Poly::default();
        for (ma, ca) in &self.terms {
            for (mb, cb) in &other.terms {
                let mut m = ma.clone();
                for (a, p) in mb {
                    *m.entry(a.clone()).or_insert(0) += p;
                }
                out = out.add(&Poly { terms: BTreeMap::from([(m, ca * cb)]) });
            }
        }
        out
    }

    pub(super) fn floor_div(&self, d: &Poly) -> Result<Poly, ExprError> {
        if let (Some(a), Some(b)) = (self.as_constant(), d.as_constant()) {
            if b == 0 {
                return Err(ExprError("division by zero".into()));
            }
            return Ok(Poly::constant(a.div_euclid(b)));
        }
        if d.as_constant() == Some(1) {
            return Ok(self.clone());
        }
        // Exact division of every coefficient by a constant divisor stays a polynomial.
        if let Some(k) = d.as_constant() {
            if k != 0 && self.terms.values().all(|c| c % k == 0) {
                return Ok(Poly { terms: self.terms.iter().map(|(m, c)| (m.clone(), c / k)).collect() });
            }
        }
        // floor(-a/b) = -ceil(a/b) for b > 0: `-((-n) // b)` (cuTile's and others' cdiv) becomes
        // CeilDiv(n, b), which TensorRT's shape arithmetic can express (it has no unary minus).
        if self.all_negative() && d.all_positive() {
            return Ok(self.scale(-1).ceil_div(d)?.scale(-1));
        }
        Ok(Poly::atom(Atom::FloorDiv(Box::new(self.clone()), Box::new(d.clone()))))
    }

    pub(super) fn all_negative(&self) -> bool {
        !self.terms.is_empty() && self.terms.values().all(|&c| c < 0)
    }

    pub(super) fn all_positive(&self) -> bool {
        !self.terms.is_empty() && self.terms.values().all(|&c| c > 0)
    }

    pub(super) fn ceil_div(&self, d: &Poly) -> Result<Poly, ExprError> {
        if let (Some(a), Some(b)) = (self.as_constant(), d.as_constant()) {
            if b == 0 {
                return Err(ExprError("division by zero".into()));
            }
            return Ok(Poly::constant(-((-a).div_euclid(b))));
        }
        if d.as_constant() == Some(1) {
            return Ok(self.clone());
        }
        if self.all_negative() && d.all_positive() {
            return Ok(self.scale(-1).floor_div(d)?.scale(-1));
        }
        Ok(Poly::atom(Atom::CeilDiv(Box::new(self.clone()), Box::new(d.clone()))))
    }

    pub(super) fn modulo(&self, d: &Poly) -> Result<Poly, ExprError> {
        if let (Some(a), Some(b)) = (self.as_constant(), d.as_constant()) {
            if b == 0 {
                return Err(ExprError("modulo by zero".into()));
            }
            return Ok(Poly::constant(a.rem_euclid(b)));
        }
        if d.as_constant() == Some(1) {
            return Ok(Poly::constant(0));
        }
        Ok(Poly::atom(Atom::Mod(Box::new(self.clone()), Box::new(d.clone()))))
    }

    pub(super) fn extremum(args: Vec<Poly>, max: bool) -> Poly {
        let mut args: Vec<Poly> = args;
        args.sort();
        args.dedup();
        // Fold constants together: Max(2, 3, s0) == Max(3, s0).
        let (consts, mut rest): (Vec<_>, Vec<_>) = args.into_iter().partition(|p| p.as_constant().is_some());
        let folded = consts.iter().filter_map(Poly::as_constant).reduce(|a, b| if max { a.max(b) } else { a.min(b) });
        if let Some(c) = folded {
            rest.push(Poly::constant(c));
            rest.sort();
        }
        if rest.len() == 1 {
            return rest.pop().unwrap();
        }
        Poly::atom(if max { Atom::Max(rest) } else { Atom::Min(rest) })
    }

    /// Symbols this expression mentions, sorted.
    pub fn symbols(&self) -> Vec<String> {
        let mut out = std::collections::BTreeSet::new();
        self.collect_symbols(&mut out);
        out.into_iter().collect()
    }

    fn collect_symbols(&self, out: &mut std::collections::BTreeSet<String>) {
        for m in self.terms.keys() {
            for a in m.keys() {
                match a {
                    Atom::Sym(s) => {
                        out.insert(s.clone());
                    }
                    Atom::FloorDiv(x, y) | Atom::CeilDiv(x, y) | Atom::Mod(x, y) => {
                        x.collect_symbols(out);
                        y.collect_symbols(out);
                    }
                    Atom::Max(xs) | Atom::Min(xs) | Atom::Call(_, xs) => xs.iter().for_each(|x| x.collect_symbols(out)),
                }
            }
        }
    }
}
