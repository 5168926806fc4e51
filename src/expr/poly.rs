//! The canonical form: a polynomial with integer coefficients over atoms, and the algebra that
//! keeps it canonical (sums, products, divisions by constants, extrema).
//!
//! Every coefficient operation is checked: an overflow is an error, never a wrapped number. The
//! size of a polynomial is bounded (`MAX_TERMS` terms, `MAX_DEGREE` total degree per term), and
//! a product whose work would exceed `MAX_TERMS` squared is refused before it starts, so no
//! expression can make the algebra run long or allocate much.

use super::error::ExprError;
use std::collections::btree_map::Entry;
use std::collections::BTreeMap;

/// At most this many terms in one polynomial (shape expressions torch prints have a handful).
pub const MAX_TERMS: usize = 256;
/// At most this total degree in one term (`s0**64`; sizes have degree 1 to 4 in practice).
pub const MAX_DEGREE: u32 = 64;

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

pub(super) fn overflow(what: &str) -> ExprError {
    ExprError(format!("integer overflow in {what}: the result does not fit in int64"))
}

fn too_big() -> ExprError {
    ExprError(format!(
        "the expression expands to more than {MAX_TERMS} terms or a degree above {MAX_DEGREE}; tta refuses shape expressions this large"
    ))
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

    /// Add `c * m` in place.
    fn add_term(&mut self, m: Monomial, c: i64) -> Result<(), ExprError> {
        match self.terms.entry(m) {
            Entry::Vacant(v) => {
                if c != 0 {
                    v.insert(c);
                }
            }
            Entry::Occupied(mut o) => {
                let sum = o.get().checked_add(c).ok_or_else(|| overflow("a sum"))?;
                if sum == 0 {
                    o.remove();
                } else {
                    *o.get_mut() = sum;
                }
            }
        }
        if self.terms.len() > MAX_TERMS {
            return Err(too_big());
        }
        Ok(())
    }

    /// `self += other`, in place (no copy of `self`).
    pub fn add_assign(&mut self, other: &Poly) -> Result<(), ExprError> {
        for (m, c) in &other.terms {
            self.add_term(m.clone(), *c)?;
        }
        Ok(())
    }

    pub fn plus(mut self, other: &Poly) -> Result<Poly, ExprError> {
        self.add_assign(other)?;
        Ok(self)
    }

    pub fn scale(&self, k: i64) -> Result<Poly, ExprError> {
        if k == 0 {
            return Ok(Poly::default());
        }
        let terms = self
            .terms
            .iter()
            .map(|(m, c)| c.checked_mul(k).map(|v| (m.clone(), v)).ok_or_else(|| overflow("a product")))
            .collect::<Result<_, _>>()?;
        Ok(Poly { terms })
    }

    pub fn mul(&self, other: &Poly) -> Result<Poly, ExprError> {
        // The work is the product of the sizes; refuse before doing it when it is out of bounds.
        if self.terms.len().saturating_mul(other.terms.len()) > MAX_TERMS * MAX_TERMS {
            return Err(too_big());
        }
        let mut out = Poly::default();
        for (ma, ca) in &self.terms {
            for (mb, cb) in &other.terms {
                let mut m = ma.clone();
                let mut degree: u32 = m.values().sum();
                for (a, p) in mb {
                    degree = degree.saturating_add(*p);
                    let e = m.entry(a.clone()).or_insert(0);
                    *e = e.saturating_add(*p);
                }
                if degree > MAX_DEGREE {
                    return Err(too_big());
                }
                out.add_term(m, ca.checked_mul(*cb).ok_or_else(|| overflow("a product"))?)?;
            }
        }
        Ok(out)
    }

    /// `self ** n`, by repeated multiplication (the parser allows small `n` only).
    pub fn pow(&self, n: u32) -> Result<Poly, ExprError> {
        let mut acc = Poly::constant(1);
        for _ in 0..n {
            acc = acc.mul(self)?;
        }
        Ok(acc)
    }

    pub(super) fn floor_div(&self, d: &Poly) -> Result<Poly, ExprError> {
        if let (Some(a), Some(b)) = (self.as_constant(), d.as_constant()) {
            if b == 0 {
                return Err(ExprError("division by zero".into()));
            }
            return a.checked_div_euclid(b).map(Poly::constant).ok_or_else(|| overflow("a floor division"));
        }
        if d.as_constant() == Some(1) {
            return Ok(self.clone());
        }
        // Exact division of every coefficient by a constant divisor stays a polynomial.
        if let Some(k) = d.as_constant() {
            if let Some(p) = self.exact_div(k) {
                return p;
            }
        }
        // floor(-a/b) = -ceil(a/b) for b > 0: `-((-n) // b)` (cuTile's and others' cdiv) becomes
        // CeilDiv(n, b), which TensorRT's shape arithmetic can express (it has no unary minus).
        if self.all_negative() && d.all_positive() {
            return self.scale(-1)?.ceil_div(d)?.scale(-1);
        }
        Ok(Poly::atom(Atom::FloorDiv(Box::new(self.clone()), Box::new(d.clone()))))
    }

    /// `self / k` when `k` divides every coefficient (None when it does not).
    pub(super) fn exact_div(&self, k: i64) -> Option<Result<Poly, ExprError>> {
        if k == 0 || !self.terms.values().all(|c| c.checked_rem(k) == Some(0)) {
            return None;
        }
        let terms = self
            .terms
            .iter()
            .map(|(m, c)| c.checked_div(k).map(|v| (m.clone(), v)).ok_or_else(|| overflow("a division")))
            .collect::<Result<_, _>>();
        Some(terms.map(|terms| Poly { terms }))
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
            return ceil_div_i64(a, b).map(Poly::constant);
        }
        if d.as_constant() == Some(1) {
            return Ok(self.clone());
        }
        if self.all_negative() && d.all_positive() {
            return self.scale(-1)?.floor_div(d)?.scale(-1);
        }
        Ok(Poly::atom(Atom::CeilDiv(Box::new(self.clone()), Box::new(d.clone()))))
    }

    pub(super) fn modulo(&self, d: &Poly) -> Result<Poly, ExprError> {
        if let (Some(a), Some(b)) = (self.as_constant(), d.as_constant()) {
            if b == 0 {
                return Err(ExprError("modulo by zero".into()));
            }
            return a.checked_rem_euclid(b).map(Poly::constant).ok_or_else(|| overflow("a modulo"));
        }
        if d.as_constant() == Some(1) {
            return Ok(Poly::constant(0));
        }
        Ok(Poly::atom(Atom::Mod(Box::new(self.clone()), Box::new(d.clone()))))
    }

    pub(super) fn extremum(args: Vec<Poly>, max: bool) -> Result<Poly, ExprError> {
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
        match rest.len() {
            0 => Err(ExprError(format!("{} needs at least one argument", if max { "Max" } else { "Min" }))),
            1 => Ok(rest.pop().expect("one")),
            _ => Ok(Poly::atom(if max { Atom::Max(rest) } else { Atom::Min(rest) })),
        }
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

/// ceil(a / b) for b != 0, checked.
pub(super) fn ceil_div_i64(a: i64, b: i64) -> Result<i64, ExprError> {
    let neg = a.checked_neg().ok_or_else(|| overflow("a ceiling division"))?;
    let q = neg.checked_div_euclid(b).ok_or_else(|| overflow("a ceiling division"))?;
    q.checked_neg().ok_or_else(|| overflow("a ceiling division"))
}
