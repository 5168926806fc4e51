//! Graph IR, its JSON codec, the verifier and the petgraph view.

mod codec;
pub mod dag;
pub mod display;
pub mod ir;
pub mod verify;

pub use dag::Dag;
pub use ir::*;

use crate::error::{Error, ErrorKind, Result};

/// Parse graph JSON (the format of docs/graph-format.md).
pub fn from_json(text: &str) -> Result<Graph> {
    // Small lists keep the spare capacity parsing leaves (JSON arrays carry no length): giving
    // it back reallocates nearly every list, which costs more than the whole parse.
    serde_json::from_str(text).map_err(|e| Error::new(ErrorKind::Parse, format!("graph JSON: {e}")))
}

/// Parse a graph given as a document without its nodes (`header`: graph JSON whose `nodes` is
/// empty) and the JSON text of each node. The host already holds one text per node, so the
/// nodes parse in parallel, each on its own, and an error names the node's position.
pub fn from_parts<S: AsRef<str> + Sync>(header: &str, nodes: &[S]) -> Result<Graph> {
    let mut g = from_json(header)?;
    if !g.nodes.is_empty() {
        return Err(Error::new(ErrorKind::Parse, "graph JSON: a header given with separate nodes must have `\"nodes\": []`"));
    }
    g.nodes = crate::par::try_map(nodes, |i, text| {
        serde_json::from_str::<Box<Node>>(text.as_ref()).map_err(|e| Error::new(ErrorKind::Parse, format!("graph JSON: node #{i}: {e}")))
    })?;
    Ok(g)
}

/// Nodes per piece of `to_json`'s parallel serialization.
const NODES_PER_PIECE: usize = 4096;

fn json_text<T: serde::Serialize + ?Sized>(v: &T) -> String {
    serde_json::to_string(v).expect("graph serialization cannot fail")
}

/// The graph's JSON text, exactly as `serde_json::to_string(g)` writes it; on large graphs the
/// nodes (most of the text) are written in pieces, in parallel.
pub fn to_json(g: &Graph) -> String {
    if g.nodes.len() < 2 * NODES_PER_PIECE {
        return json_text(g);
    }
    let pieces: Vec<&[Box<Node>]> = g.nodes.chunks(NODES_PER_PIECE).collect();
    let pieces = crate::par::map(&pieces, |_, nodes| {
        let mut out = Vec::with_capacity(nodes.len() * 160);
        for (i, n) in nodes.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            serde_json::to_writer(&mut out, n).expect("graph serialization cannot fail");
        }
        String::from_utf8(out).expect("serde_json writes UTF-8")
    });
    let mut out = String::with_capacity(pieces.iter().map(String::len).sum::<usize>() + pieces.len() + 64);
    out.push_str("{\"format\":");
    out.push_str(&json_text(&g.format));
    out.push_str(",\"version\":");
    out.push_str(&g.version.to_string());
    out.push_str(",\"nodes\":[");
    for (i, piece) in pieces.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(piece);
    }
    out.push(']');
    if !g.regions.is_empty() {
        out.push_str(",\"regions\":");
        out.push_str(&json_text(&g.regions));
    }
    out.push('}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(n: usize, regions: bool) -> Graph {
        let mut text = String::from(r#"{"format":"tta-graph","version":1,"nodes":[{"name":"x","op":"placeholder","target":"x","val":{"dtype":"float32","shape":["s0",4],"stride":[4,1]}}"#);
        for i in 0..n {
            let prev = if i == 0 { "x".to_owned() } else { format!("n{}", i - 1) };
            let tag = if regions && i % 7 == 0 { r#","regions":["r:0"]"# } else { "" };
            text.push_str(&format!(r#",{{"name":"n{i}","op":"call_function","target":"aten.relu.default","args":[{{"ref":"{prev}"}},1.5,{{"float":"nan"}}]{tag}}}"#));
        }
        text.push_str(&format!(r#",{{"name":"output","op":"output","target":"output","args":[[{{"ref":"n{}"}}]]}}]"#, n - 1));
        if regions {
            text.push_str(r#","regions":{"r:0":{"impl":"k","source":"m.py:3"}}"#);
        }
        text.push('}');
        from_json(&text).unwrap()
    }

    #[test]
    fn to_json_in_pieces_writes_what_serde_writes() {
        for (n, regions) in [(5, true), (3 * NODES_PER_PIECE + 11, true), (2 * NODES_PER_PIECE, false)] {
            let g = chain(n, regions);
            assert_eq!(to_json(&g), serde_json::to_string(&g).unwrap(), "{n} nodes");
        }
    }

    #[test]
    fn from_parts_reads_what_from_json_reads_and_names_a_bad_node() {
        let g = chain(300, true);
        let nodes: Vec<String> = g.nodes.iter().map(|n| serde_json::to_string(n).unwrap()).collect();
        let header = serde_json::to_string(&Graph { nodes: vec![], ..g.clone() }).unwrap();
        assert_eq!(from_parts(&header, &nodes).unwrap(), g);
        let mut bad = nodes.clone();
        bad[201] = bad[201].replace("call_function", "call_nothing");
        let err = from_parts(&header, &bad).unwrap_err().to_string();
        assert!(err.contains("node #201"), "{err}");
        assert!(from_parts(&to_json(&g), &nodes).unwrap_err().to_string().contains("\"nodes\": []"));
    }
}
