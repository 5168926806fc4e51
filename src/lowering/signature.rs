//! The plugin signature of a region, checked against what its impl declares.

use crate::expr;
use crate::graph::Dim;
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
    /// Number of tensors the impl's launch function takes: the region's inputs, then its
    /// outputs (config keywords not counted), when it says. (`ports` in older graph files.)
    #[serde(default, alias = "ports")]
    pub launch_tensors: Option<usize>,
    /// The impl writes some of its inputs in place.
    #[serde(default)]
    pub mutates: bool,
}

/// One output as the impl's `meta_impl` computed it for a region's inputs.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct MetaOut {
    pub dtype: String,
    pub shape: Vec<Dim>,
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
    if let Some(n) = decl.launch_tensors {
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
                "meta_impl output {i} has dtype {} but region output `{}` has dtype {dtype}{}",
                m.dtype,
                port.name,
                port_hint(b, meta, i)
            ));
        }
        if !same_shape(&m.shape, shape) {
            return Err(format!(
                "meta_impl output {i} has shape [{}] but region output `{}` has shape [{}]{}",
                shape_text(&m.shape),
                port.name,
                shape_text(shape),
                port_hint(b, meta, i)
            ));
        }
    }
    Ok(())
}

fn matches(m: &MetaOut, port: &Port) -> bool {
    let PortKind::Tensor { dtype, shape } = &port.kind else { return false };
    &m.dtype == dtype && same_shape(&m.shape, shape)
}

/// Why output `i` may disagree when the real cause is port order: the outputs come back in
/// another order, or the output looks like it was computed from another input.
fn port_hint(b: &Boundary, meta: &[MetaOut], i: usize) -> String {
    if let Some(k) = b.outputs.iter().position(|p| matches(&meta[i], p)) {
        return format!(
            "; it matches region output {k} (`{}`) instead: meta_impl returns the outputs in another order than the region, whose outputs are in node order ({})",
            b.outputs[k].name,
            b.outputs.iter().map(|p| format!("`{}`", p.name)).collect::<Vec<_>>().join(", ")
        );
    }
    let like = |shape: &[Dim]| {
        b.inputs.iter().position(|p| matches!(&p.kind, PortKind::Tensor { shape: s, .. } if same_shape(s, shape)))
    };
    let PortKind::Tensor { shape: want, .. } = &b.outputs[i].kind else { return String::new() };
    match (like(&meta[i].shape), like(want)) {
        (Some(got), Some(wanted)) if got != wanted => {
            let inputs: Vec<String> = b.inputs.iter().enumerate().map(|(k, p)| format!("{k}: `{}`", p.name)).collect();
            format!(
                "; its shape is that of input {got} (`{}`), the region's that of input {wanted} (`{}`): meta_impl may expect its inputs in another order than the region passes them ({}); fix the order with lower_as(..., inputs=(...))",
                b.inputs[got].name,
                b.inputs[wanted].name,
                inputs.join(", ")
            )
        }
        _ => String::new(),
    }
}

/// `text` with each identifier that is not a function name replaced by `d<k>`, `k` its position
/// in `seen` (appended to on first sight).
fn rename_symbols(text: &str, seen: &mut Vec<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if !(c.is_ascii_alphabetic() || c == '_') {
            out.push(c);
            continue;
        }
        let mut end = i + c.len_utf8();
        while let Some(&(j, d)) = chars.peek() {
            if !(d.is_ascii_alphanumeric() || d == '_') {
                break;
            }
            end = j + d.len_utf8();
            chars.next();
        }
        let word = &text[i..end];
        if chars.peek().is_some_and(|&(_, d)| d == '(') {
            out.push_str(word);
            continue;
        }
        let k = seen.iter().position(|s| s == word).unwrap_or_else(|| {
            seen.push(word.to_owned());
            seen.len() - 1
        });
        out.push_str(&format!("d{k}"));
    }
    out
}

fn same_shape(a: &[Dim], b: &[Dim]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            let (x, y) = (x.to_string(), y.to_string());
            match (expr::canonical(&x), expr::canonical(&y)) {
                (Ok(x), Ok(y)) => x == y,
                _ => x == y,
            }
        })
}

fn shape_text(shape: &[Dim]) -> String {
    shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")
}

/// Canonical text of a boundary, the part of the op name that depends on the signature.
/// Shape symbols are renamed `d0`, `d1`, ... in order of first appearance: torch names them
/// differently under strict and non-strict export (`s6` vs `s77`) for the same region.
pub fn canonical(b: &Boundary) -> String {
    let mut symbols: Vec<String> = Vec::new();
    let mut canon = |d: &str| {
        let renamed = rename_symbols(d, &mut symbols);
        expr::canonical(&renamed).unwrap_or(renamed)
    };
    let mut port = |p: &Port| match &p.kind {
        PortKind::Tensor { dtype, shape } => {
            let dims: Vec<String> = shape.iter().map(|d| canon(&d.to_string())).collect();
            format!("{dtype}[{}]{}", dims.join(","), if p.mutated { "!" } else { "" })
        }
        PortKind::SymInt { expr: e } => format!("SymInt({})", canon(e)),
    };
    let ins: Vec<String> = b.inputs.iter().map(&mut port).collect();
    let outs: Vec<String> = b.outputs.iter().map(&mut port).collect();
    format!("({}) -> ({})", ins.join(", "), outs.join(", "))
}
