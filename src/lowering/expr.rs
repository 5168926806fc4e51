//! Symbolic shape expressions: parse the strings sympy prints for torch's SymInts, bring them to
//! a canonical form (so `s0*2 + 1` equals `1 + 2*s0`), evaluate them for concrete sizes, and
//! print them in the restricted arithmetic TensorRT's `trtp` shape expressions accept.
//!
//! Canonical form: a polynomial with integer coefficients over atoms. Atoms are symbols and the
//! operations a polynomial cannot absorb (floor division, modulo, max, min, ...), whose arguments
//! are canonical themselves, so comparison is structural.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

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
    terms: BTreeMap<Monomial, i64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExprError(pub String);

impl fmt::Display for ExprError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
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

    fn floor_div(&self, d: &Poly) -> Result<Poly, ExprError> {
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

    fn all_negative(&self) -> bool {
        !self.terms.is_empty() && self.terms.values().all(|&c| c < 0)
    }

    fn all_positive(&self) -> bool {
        !self.terms.is_empty() && self.terms.values().all(|&c| c > 0)
    }

    fn ceil_div(&self, d: &Poly) -> Result<Poly, ExprError> {
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

    fn modulo(&self, d: &Poly) -> Result<Poly, ExprError> {
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

    fn extremum(args: Vec<Poly>, max: bool) -> Poly {
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
            if c.abs() != 1 {
                s = format!("{s} * {}", c.abs());
            }
            if *c > 0 { positive.push(s) } else { negative.push(s) }
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
            out = format!("{out} - {}", -constant);
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
                Ok(Poly::extremum(xs, matches!(self, Atom::Max(_))))
            }
            Atom::Call(name, xs) => {
                let xs = xs.iter().map(|x| x.substitute(map)).collect::<Result<Vec<_>, _>>()?;
                Ok(Poly::atom(Atom::Call(name.clone(), xs)))
            }
        }
    }

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
            ordered.push((self.terms.keys().next().unwrap(), c));
        }
        for (m, c) in ordered {
            let body: Vec<String> =
                m.iter().map(|(a, p)| if *p == 1 { a.to_string() } else { format!("{a}**{p}") }).collect();
            let (sign, mag) = if *c < 0 { ("-", -c) } else { ("+", *c) };
            if first {
                if sign == "-" {
                    f.write_str("-")?;
                }
            } else {
                write!(f, " {sign} ")?;
            }
            first = false;
            match (body.is_empty(), mag) {
                (true, _) => write!(f, "{mag}")?,
                (false, 1) => f.write_str(&body.join("*"))?,
                (false, _) => write!(f, "{mag}*{}", body.join("*"))?,
            }
        }
        Ok(())
    }
}

/// Parse a sympy-printed integer expression (`s0`, `2*s0 + 1`, `(s0//2)`, `Max(1, s0)`, ...).
pub fn parse(text: &str) -> Result<Poly, ExprError> {
    let tokens = tokenize(text)?;
    let mut p = Parser { tokens, pos: 0 };
    let e = p.sum()?;
    if p.pos != p.tokens.len() {
        return Err(ExprError(format!("unexpected `{}` in `{text}`", p.tokens[p.pos])));
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
impl fmt::Display for Tok {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
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
                let v = text[start..i].parse().map_err(|_| ExprError(format!("integer too large in `{text}`")))?;
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
                        _ => return Err(ExprError(format!("unexpected character `{}` in `{text}`", c as char))),
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

/// Canonical text of an expression string; equal strings mean equal expressions.
pub fn canonical(text: &str) -> Result<String, ExprError> {
    parse(text).map(|p| p.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_form_ignores_term_order_and_grouping() {
        assert_eq!(canonical("2*s0 + 1").unwrap(), canonical("1 + s0*2").unwrap());
        assert_eq!(canonical("(s0 + 1)*(s0 - 1)").unwrap(), canonical("s0**2 - 1").unwrap());
        assert_eq!(canonical("s0*s1").unwrap(), canonical("s1*s0").unwrap());
        assert_ne!(canonical("s0 + 1").unwrap(), canonical("s0 + 2").unwrap());
    }

    #[test]
    fn negated_floor_division_is_ceil_division() {
        // ct.cdiv(n, 1024) is -((-n) // 1024).
        assert_eq!(canonical("-FloorDiv(-s0*s1, 1024)").unwrap(), "CeilDiv(s0*s1, 1024)");
        assert_eq!(canonical("-((-s0)//4)").unwrap(), canonical("CeilDiv(s0, 4)").unwrap());
        assert_eq!(canonical("-CeilDiv(-s0, 4)").unwrap(), canonical("FloorDiv(s0, 4)").unwrap());
        let env = HashMap::from([("s0".to_owned(), 9), ("s1".to_owned(), 3)]);
        assert_eq!(parse("-FloorDiv(-s0*s1, 4)").unwrap().eval(&env).unwrap(), 7);
    }

    #[test]
    fn floor_division_forms_agree() {
        assert_eq!(canonical("(s0//2)").unwrap(), canonical("FloorDiv(s0, 2)").unwrap());
        assert_eq!(canonical("(4*s0)//2").unwrap(), "2*s0");
        assert_eq!(canonical("Max(1, s0, 3)").unwrap(), canonical("Max(s0, 3)").unwrap());
    }

    #[test]
    fn evaluates() {
        let env = HashMap::from([("s0".to_string(), 7i64), ("s1".to_string(), 3)]);
        assert_eq!(parse("s0*s1 + (s0//2) - Mod(s0, 3)").unwrap().eval(&env).unwrap(), 21 + 3 - 1);
        assert_eq!(parse("CeilDiv(s0, 2)").unwrap().eval(&env).unwrap(), 4);
        assert!(parse("s2").unwrap().eval(&env).is_err());
    }

    #[test]
    fn renders_for_trtp_without_forbidden_forms() {
        let leaf = |s: &str| format!("X[{s}]");
        let e = parse("1 + 2*s0 - s1").unwrap();
        assert_eq!(e.to_trtp(&leaf).unwrap(), "X[s0] * 2 - X[s1] + 1");
        assert!(parse("Mod(s0, 2)").unwrap().to_trtp(&leaf).is_err());
        assert!(parse("-s0").unwrap().to_trtp(&leaf).is_err());
        assert_eq!(parse("CeilDiv(s0, 64)").unwrap().to_trtp(&leaf).unwrap(), "trtp.cdiv((X[s0]), 64)");
        assert_eq!(parse("Max(1, s0)").unwrap().to_trtp(&leaf).unwrap(), "trtp.max((X[s0]), 1)");
    }

    #[test]
    fn rejects_garbage() {
        assert!(parse("s0 +").is_err());
        assert!(parse("s0 $ 2").is_err());
        assert!(parse("(s0").is_err());
    }
}
