//! Symbolic shape expressions: parse the strings sympy prints for torch's SymInts, bring them to
//! a canonical form (so `s0*2 + 1` equals `1 + 2*s0`), evaluate them for concrete sizes, and
//! print them in the restricted arithmetic TensorRT's `trtp` shape expressions accept.
//!
//! Canonical form: a polynomial with integer coefficients over atoms. Atoms are symbols and the
//! operations a polynomial cannot absorb (floor division, modulo, max, min, ...), whose arguments
//! are canonical themselves, so comparison is structural.

mod display;
mod error;
mod eval;
mod parse;
mod poly;
mod trtp;

pub use error::ExprError;
pub use parse::parse;
pub use poly::{Atom, Monomial, Poly};

/// Canonical text of an expression string; equal strings mean equal expressions.
pub fn canonical(text: &str) -> Result<String, ExprError> {
    parse(text).map(|p| p.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

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
