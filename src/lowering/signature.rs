//! The plugin signature of a region, checked against what its impl declares.

use crate::expr;
use crate::regions::{Boundary, Port, PortKind};
use serde::{Deserialize, Serialize};

/// What the Python side knows about an impl before looking at any region.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct ImplDecl {
    /// Readable name, used in op names (`tta::<name>_<hash>`).
    pub name: String,
    /// Number of inputs the impl takes, when it says.
    #[serde(default)]
    pub inputs: Option<usize>,
    /// Number of outputs the impl returns, when it says.
    #[serde(default)]
    pub outputs: Option<usize>,
    /// Number of tensors the impl's launch function takes: the region's inputs, then its
    /// outputs (config keywords not counted), when it says.
    #[serde(default)]
    pub ports: Option<usize>,
    /// The impl writes some of its inputs in place.
    #[serde(default)]
    pub mutates: bool,
}

/// One output as the impl's `meta_impl` computed it for a region's inputs.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct MetaOut {
    pub dtype: String,
    pub shape: Vec<crate::graph::Dim>,
}

/// Refuse when the declared arity or the meta outputs disagree with the region.
pub fn check(b: &Boundary, decl: &ImplDecl, meta: Option<&Result<Vec<MetaOut>, String>>) -> Result<(), String> {
    let names = |ports: &[Port]| ports.iter().map(|p| format!("`{}`", p.name)).collect::<Vec<_>>().join(", ");
    if let Some(n) = decl.inputs {
        if n != b.inputs.len() {
            return Err(format!(
                "impl `{}` takes {n} input(s) but the region reads {}: {}",
                decl.name,
                b.inputs.len(),
                names(&b.inputs)
            ));
        }
    }
    if let Some(n) = decl.outputs {
        if n != b.outputs.len() {
            return Err(format!(
                "impl `{}` returns {n} output(s) but the region produces {} used outside: {}",
                decl.name,
                b.outputs.len(),
                names(&b.outputs)
            ));
        }
    }
    if let Some(n) = decl.ports {
        if n != b.inputs.len() + b.outputs.len() {
            return Err(format!(
                "the launch function of `{}` takes {n} tensor(s) (inputs, then outputs) but the region has {} input(s) ({}) and {} output(s) ({})",
                decl.name,
                b.inputs.len(),
                names(&b.inputs),
                b.outputs.len(),
                names(&b.outputs)
            ));
        }
    }
    let meta = match meta {
        None => return Ok(()),
        Some(Err(e)) => return Err(format!("meta_impl of `{}` failed on the region's inputs: {e}", decl.name)),
        Some(Ok(m)) => m,
    };
    if meta.len() != b.outputs.len() {
        return Err(format!(
            "meta_impl of `{}` returns {} output(s) but the region produces {}: {}",
            decl.name,
            meta.len(),
            b.outputs.len(),
            names(&b.outputs)
        ));
    }
    for (i, (m, port)) in meta.iter().zip(&b.outputs).enumerate() {
        let PortKind::Tensor { dtype, shape } = &port.kind else { continue };
        if &m.dtype != dtype {
            return Err(format!(
                "meta_impl output {i} has dtype {} but region output `{}` has dtype {dtype}",
                m.dtype, port.name
            ));
        }
        let theirs: Vec<String> = m.shape.iter().map(|d| d.to_string()).collect();
        if !same_shape(&theirs, shape) {
            return Err(format!(
                "meta_impl output {i} has shape [{}] but region output `{}` has shape [{}]",
                theirs.join(", "),
                port.name,
                shape.join(", ")
            ));
        }
    }
    Ok(())
}

fn same_shape(a: &[String], b: &[String]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| match (expr::canonical(x), expr::canonical(y)) {
            (Ok(x), Ok(y)) => x == y,
            _ => x == y,
        })
}

/// Canonical text of a boundary, the part of the op name that depends on the signature.
pub fn canonical(b: &Boundary) -> String {
    let port = |p: &Port| match &p.kind {
        PortKind::Tensor { dtype, shape } => {
            let dims: Vec<String> = shape.iter().map(|d| expr::canonical(d).unwrap_or_else(|_| d.clone())).collect();
            format!("{dtype}[{}]{}", dims.join(","), if p.mutated { "!" } else { "" })
        }
        PortKind::SymInt { expr: e } => format!("SymInt({})", expr::canonical(e).unwrap_or_else(|_| e.clone())),
    };
    let ins: Vec<String> = b.inputs.iter().map(port).collect();
    let outs: Vec<String> = b.outputs.iter().map(port).collect();
    format!("({}) -> ({})", ins.join(", "), outs.join(", "))
}
