//! Regions from module selectors (`tta.lower_modules`): each call of a chosen module instance
//! becomes one region, found from the `module_stack` (`nn_module_stack`) of every node.
//!
//! Rules:
//! - A type selector names the class exactly (`module.qualname`); subclasses are not selected,
//!   since they may override `forward`. A path selector `P` chooses the modules at `P` and
//!   under it (`P` itself or any path starting with `P.`).
//! - An instance owns every node traced inside it, nested submodules included.
//! - Per selector, the outermost chosen instance wins: an instance nested in another instance
//!   chosen by the same selector (a `Block` inside a `Block`, `model.layers.0.mlp` under the
//!   prefix `model.layers`) is part of the outer region, not a region of its own. Instances
//!   chosen by different selectors that nest are both kept, and validation refuses the overlap.
//! - Each call is its own instance: a module called twice (in a loop, or reused) gives two
//!   regions (`ModuleRef::call`), as do the entries of a ModuleList.
//! - One instance chosen by two selectors with the same impl is one region; with different
//!   impls it is an input error.

use super::{Origin, Region};
use crate::error::{Error, ErrorKind, Result};
use crate::graph::{Graph, ModuleRef, OpKind};
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

/// Exactly one of `type` (the module class as `module.qualname`, compared exactly) or `path`
/// (a dotted module path prefix) is given.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ModuleSelector {
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(rename = "impl")]
    pub impl_key: String,
}

enum Rule<'a> {
    Type(&'a str),
    Prefix(&'a str),
}

impl Rule<'_> {
    fn matches(&self, m: &ModuleRef) -> bool {
        match self {
            Rule::Type(t) => m.type_name == *t,
            // An empty prefix chooses the root module only (paths never start with a dot).
            Rule::Prefix(p) => m.path.strip_prefix(p).is_some_and(|rest| rest.is_empty() || rest.starts_with('.')),
        }
    }
    fn label(&self) -> &str {
        match self {
            Rule::Type(t) | Rule::Prefix(t) => t,
        }
    }
}

fn rules(selectors: &[ModuleSelector]) -> Result<Vec<Rule<'_>>> {
    selectors
        .iter()
        .map(|s| match (&s.type_name, &s.path) {
            (Some(t), None) if !t.is_empty() => Ok(Rule::Type(t)),
            (None, Some(p)) => Ok(Rule::Prefix(p)),
            _ => Err(Error::new(
                ErrorKind::Input,
                format!(
                    "a module selector (impl `{}`) needs exactly one of a non-empty \"type\" or a \"path\"",
                    s.impl_key
                ),
            )),
        })
        .collect()
}

/// `module:<path>`, with `@<call>` for a repeated call.
fn instance_name(m: &ModuleRef) -> String {
    let path = if m.path.is_empty() { "<root>" } else { m.path.as_str() };
    if m.call == 0 {
        path.to_owned()
    } else {
        format!("{path}@{}", m.call)
    }
}

pub fn select(g: &Graph, selectors: &[ModuleSelector]) -> Result<Vec<Region>> {
    if selectors.is_empty() {
        return Ok(Vec::new());
    }
    let rules = rules(selectors)?;
    // (path, call) -> (selector index, region)
    let mut by_instance: IndexMap<(&str, u32), (usize, Region)> = IndexMap::new();
    for (i, node) in g.nodes.iter().enumerate() {
        if matches!(node.op, OpKind::GetAttr | OpKind::Placeholder | OpKind::Output) || node.module_stack.is_empty() {
            continue;
        }
        for (s, rule) in rules.iter().enumerate() {
            let Some(m) = node.module_stack.iter().find(|m| rule.matches(m)) else { continue };
            let key = (m.path.as_str(), m.call);
            match by_instance.get_mut(&key) {
                None => {
                    let region = Region {
                        id: format!("module:{}", instance_name(m)),
                        impl_key: selectors[s].impl_key.clone(),
                        origin: Origin::Module { selector: rule.label().to_owned(), path: instance_name(m) },
                        source: None,
                        members: vec![i],
                    };
                    by_instance.insert(key, (s, region));
                }
                Some((first, region)) => {
                    if selectors[*first].impl_key != selectors[s].impl_key {
                        return Err(Error::at(
                            ErrorKind::Input,
                            &node.name,
                            node.source.as_deref(),
                            format!(
                                "module `{}` is chosen by selector `{}` (impl `{}`) and by selector `{}` (impl `{}`); one module call can be replaced by one impl only",
                                instance_name(m),
                                rules[*first].label(),
                                selectors[*first].impl_key,
                                rule.label(),
                                selectors[s].impl_key
                            ),
                        ));
                    }
                    // Two selectors with one impl on one instance: the same members, kept once.
                    if region.members.last() != Some(&i) {
                        region.members.push(i);
                    }
                }
            }
        }
    }
    let mut regions: Vec<Region> = by_instance.into_values().map(|(_, r)| r).collect();
    for r in &mut regions {
        r.source = r.members.iter().find_map(|&m| g.nodes[m].source.clone());
    }
    regions.sort_by_key(|r| r.members[0]);
    Ok(regions)
}
