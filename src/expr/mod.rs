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
pub use parse::{parse, MAX_EXPONENT, MAX_NESTING};
pub use poly::{Atom, Monomial, Poly, MAX_DEGREE, MAX_TERMS};

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
    fn overflow_is_an_error_never_a_wrapped_number() {
        for text in [
            "9223372036854775807 + 1",
            "s0*9223372036854775807*2",
            "s0**16**16",
            "FloorDiv(-9223372036854775807 - 1, -1)",
            "CeilDiv(-9223372036854775807 - 1, -1)",
            "Mod(-9223372036854775807 - 1, -1)",
            "(-9223372036854775807 - 1) // -1",
            "-(-9223372036854775807 - 1)",
            "9223372036854775808",
        ] {
            let e = parse(text).err().unwrap_or_else(|| panic!("{text} parsed"));
            assert!(e.0.contains("overflow") || e.0.contains("int64"), "{text}: {e}");
        }
        let env = HashMap::from([("s0".to_owned(), i64::MIN), ("s1".to_owned(), -1)]);
        for text in ["FloorDiv(s0, s1)", "CeilDiv(s0, s1)", "Mod(s0, s1)", "s0*s1", "s0 - 1", "s0**2"] {
            assert!(parse(text).unwrap().eval(&env).unwrap_err().0.contains("overflow"), "{text}");
        }
        // The most negative value itself is fine, and prints as text that parses back to it.
        for text in ["-9223372036854775807 - 1", "s0 - 9223372036854775807 - 1", "(-9223372036854775807 - 1)*s0 + 1"] {
            let c = canonical(text).unwrap();
            assert!(!c.contains("--") && !c.contains("9223372036854775808"), "{c}");
            assert_eq!(parse(&c).unwrap(), parse(text).unwrap(), "{c}");
        }
    }

    #[test]
    fn size_and_nesting_are_bounded() {
        let t = std::time::Instant::now();
        let e = parse("(s0+s1+s2+s3+s4+s5)**12").unwrap_err();
        assert!(e.0.contains("terms"), "{e}");
        assert!(t.elapsed().as_secs_f64() < 1.0);
        assert!(
            parse("s0**64").is_ok()
                && parse("s0**65").is_err()
                && parse("(s0**16)**4").is_ok()
                && parse("((s0**16)**4)*s0").is_err()
        );
        let deep = |n: usize| format!("{}s0{}", "(".repeat(n), ")".repeat(n));
        assert!(parse(&deep(MAX_NESTING - 1)).is_ok());
        assert!(parse(&deep(100_000)).unwrap_err().0.contains("nests deeper"));
        assert!(parse(&"-".repeat(100_000)).unwrap_err().0.contains("nests deeper"));
        assert!(parse(&format!("{}s0{}", "Max(1, ".repeat(10_000), ")".repeat(10_000))).is_err());
        // Also on a thread with half the stack of a rayon worker (2 MiB), in a debug build.
        std::thread::Builder::new()
            .stack_size(1024 * 1024)
            .spawn(move || {
                assert!(parse(&deep(MAX_NESTING - 1)).is_ok());
                assert!(parse(&deep(50_000)).is_err());
            })
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn non_ascii_is_an_error_not_a_panic() {
        for text in ["s0+é", "é", "s0*é", "s0/é", "s0 ** é", "(s0)é"] {
            assert!(parse(text).unwrap_err().0.contains("unexpected character"), "{text}");
        }
    }

    #[test]
    fn rejects_garbage() {
        assert!(parse("s0 +").is_err());
        assert!(parse("s0 $ 2").is_err());
        assert!(parse("(s0").is_err());
    }
}
