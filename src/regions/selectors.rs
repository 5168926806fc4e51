//! Selector input (`tta.lower_modules`, `tta.lower_pattern`) and running the selectors.
//! Selectors only choose member sets; validation and boundaries are shared with annotation
//! regions (`validate.rs`, `boundary.rs`), so a selected region that is not convex, holds graph
//! I/O or mutates is refused exactly like an annotated one.

use super::candidate::{Candidate, Verdict};
use super::modules::{self, ModuleSelector};
use super::pattern::{self, PatternSelector, Unmatched};
use crate::error::{Error, ErrorKind, Result};
use crate::graph::verify::NameIndex;
use crate::graph::{Dag, Graph};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

/// The `selectors_json` argument of `analyze`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Selectors {
    #[serde(default)]
    pub modules: Vec<ModuleSelector>,
    #[serde(default)]
    pub patterns: Vec<PatternSelector>,
}

pub fn from_json(text: &str) -> Result<Selectors> {
    serde_json::from_str(text).map_err(|e| Error::new(ErrorKind::Input, format!("selectors: {e}")))
}

/// Run every selector on a verified graph; patterns are independent and run in parallel.
/// Module regions come first, then each pattern's occurrences; a pattern occurrence refused by
/// the search itself is already `Refused` and skips validation (and the overlap check), so a
/// refusal there never takes a valid region down with it.
/// Patterns that occur nowhere come back too, each with its closest partial match.
pub fn select(g: &Graph, index: &NameIndex, dag: &Dag, sel: &Selectors) -> Result<(Vec<Candidate>, Vec<Unmatched>)> {
    let mut out: Vec<Candidate> = modules::select(g, &sel.modules)?.into_iter().map(Candidate::new).collect();
    let labels = pattern_labels(&sel.patterns);
    let compiled: Vec<Vec<pattern::Pattern>> = sel
        .patterns
        .iter()
        .zip(&labels)
        .map(|(p, label)| {
            let mut forms = pattern::Pattern::compile_all(p)?;
            forms.iter_mut().for_each(|f| f.name.clone_from(label));
            Ok(forms)
        })
        .collect::<Result<_>>()?;
    // Each pattern scans the whole graph: worth a thread even for two patterns.
    let found: Vec<pattern::Found> = if compiled.len() > 1 {
        compiled.par_iter().map(|forms| pattern::find(forms, g, index, dag)).collect()
    } else {
        compiled.iter().map(|forms| pattern::find(forms, g, index, dag)).collect()
    };
    let mut unmatched = Vec::new();
    for (f, label) in found.into_iter().zip(labels) {
        if let Some(closest) = f.closest {
            unmatched.push(Unmatched { pattern: label, closest });
        }
        for (region, order) in f.regions {
            out.push(match order {
                Ok(order) => Candidate { order: Some(order), ..Candidate::new(region) },
                Err(why) => Candidate { verdict: Verdict::Refused(why), ..Candidate::new(region) },
            });
        }
    }
    Ok((out, unmatched))
}

/// The name each pattern's regions, report lines and unmatched entry carry: its own, or for a
/// name given again, the first free of `name#2`, `name#3`, ... (region ids must be unique).
fn pattern_labels(patterns: &[PatternSelector]) -> Vec<String> {
    let mut taken: HashSet<String> = HashSet::new();
    let mut labels = Vec::with_capacity(patterns.len());
    for p in patterns {
        let mut label = p.name.clone();
        let mut k = 1;
        while taken.contains(&label) {
            k += 1;
            label = format!("{}#{k}", p.name);
        }
        taken.insert(label.clone());
        labels.push(label);
    }
    labels
}
