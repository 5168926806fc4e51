//! The per-region report: what was outlined into which op, and why anything was refused.

use crate::regions::{Origin, Port};
use serde::Serialize;
use std::fmt;

#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Outlined,
    Refused,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct RegionReport {
    pub id: String,
    #[serde(rename = "impl")]
    pub impl_key: String,
    pub origin: Origin,
    pub source: Option<String>,
    pub status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Plugin op name (`tta::<op>`), when outlined.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub op: Option<String>,
    /// Name of the node that replaced the region, when outlined.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    pub nodes: Vec<String>,
    /// Assertion nodes export left untagged that read a value inside the region, taken into it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub absorbed: Vec<String>,
    pub inputs: Vec<Port>,
    pub outputs: Vec<Port>,
}

fn ports(f: &mut fmt::Formatter<'_>, label: &str, ports: &[Port]) -> fmt::Result {
    for p in ports {
        let kind = match &p.kind {
            crate::regions::PortKind::Tensor { dtype, shape } => {
                format!("{dtype}[{}]", shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", "))
            }
            crate::regions::PortKind::SymInt { expr } => format!("SymInt {expr}"),
        };
        writeln!(f, "    {label} {}: {kind}{}", p.name, if p.mutated { " (written in place)" } else { "" })?;
    }
    Ok(())
}

impl fmt::Display for RegionReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let origin = match &self.origin {
            Origin::Annotation => "lower_as".to_string(),
            // A path selector names the module itself; saying it twice reads like two modules.
            Origin::Module { selector, path } if selector == path => format!("module {path}"),
            Origin::Module { selector, path } => format!("module {selector} at {path}"),
            Origin::Pattern { pattern } => format!("pattern {pattern}"),
        };
        writeln!(
            f,
            "region {} [{}] impl={} at {}",
            self.id,
            origin,
            self.impl_key,
            self.source.as_deref().unwrap_or("unknown source")
        )?;
        match self.status {
            Status::Outlined => writeln!(
                f,
                "  outlined as tta::{} (node {}), {} op(s)",
                self.op.as_deref().unwrap_or("?"),
                self.node.as_deref().unwrap_or("?"),
                self.nodes.len()
            )?,
            Status::Refused => writeln!(f, "  REFUSED: {}", self.reason.as_deref().unwrap_or("?"))?,
        }
        if !self.absorbed.is_empty() {
            let names: Vec<String> = self.absorbed.iter().map(|n| format!("`{n}`")).collect();
            writeln!(
                f,
                "  absorbed {} (export's checks of values inside the region; the plugin replaces them)",
                names.join(", ")
            )?;
        }
        ports(f, "in ", &self.inputs)?;
        ports(f, "out", &self.outputs)
    }
}
