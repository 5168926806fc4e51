//! Deterministic plugin op names: `<impl name>_<12 hex digits>`, the digits from sha256 over the
//! impl key, the region signature and the region body (ops, literals and wiring, not node
//! names). Equal in every process for the same model; different when anything that shapes the
//! plugin differs. Identical regions (a block called in a loop) share one op.

use crate::graph::{Arg, Graph};
use crate::regions::{Boundary, Region};
use sha2::{Digest, Sha256};
use std::collections::HashMap;

pub fn op_name(g: &Graph, region: &Region, b: &Boundary, impl_name: &str) -> String {
    let mut h = Sha256::new();
    h.update(region.impl_key.as_bytes());
    h.update([0]);
    h.update(super::signature::canonical(b).as_bytes());
    h.update([0]);
    h.update(body_text(g, region, b).as_bytes());
    let digest = h.finalize();
    let hex: String = digest.iter().take(6).map(|x| format!("{x:02x}")).collect();
    format!("{}_{hex}", sanitize(impl_name))
}

/// The body with node names replaced by positions: `in0`, `in1` for inputs, `n0`, `n1` for members.
fn body_text(g: &Graph, region: &Region, b: &Boundary) -> String {
    let mut local: HashMap<&str, String> = HashMap::new();
    for (k, p) in b.inputs.iter().enumerate() {
        local.insert(p.name.as_str(), format!("in{k}"));
    }
    for d in &b.derived {
        let k = b.inputs.iter().position(|p| p.name == d.input).unwrap_or(usize::MAX);
        local.insert(d.name.as_str(), format!("in{k}.size({})", d.dim));
    }
    for (k, &m) in region.members.iter().enumerate() {
        local.insert(g.nodes[m].name.as_str(), format!("n{k}"));
    }
    let mut text = String::new();
    for &m in &region.members {
        let node = &g.nodes[m];
        let rename = &mut |r: &str| local.get(r).cloned();
        let mut args: Vec<Arg> = node.args.clone();
        args.iter_mut().for_each(|a| a.map_refs(rename));
        let mut kwargs = node.kwargs.clone();
        kwargs.values_mut().for_each(|a| a.map_refs(rename));
        text.push_str(&format!(
            "{}:{}:{}:{}\n",
            node.op.as_str(),
            node.target,
            serde_json::to_string(&args).unwrap(),
            serde_json::to_string(&kwargs).unwrap()
        ));
    }
    // Which values leave, in which order: two regions computing the same ops whose outputs are
    // declared in different orders are different ops (their bodies return different tuples).
    let outs: Vec<String> =
        b.outputs.iter().map(|p| local.get(p.name.as_str()).cloned().unwrap_or_else(|| p.name.clone())).collect();
    text.push_str(&format!("out:{}\n", outs.join(",")));
    text
}

/// A valid Python identifier and QDP plugin name part: letters, digits, `_`; starts with a letter.
pub fn sanitize(name: &str) -> String {
    let mut s: String = name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    s = s.trim_matches('_').to_owned();
    if s.is_empty() || !s.starts_with(|c: char| c.is_ascii_alphabetic()) {
        s.insert_str(0, "op_");
    }
    s
}
