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
        return Err(Error::new(
            ErrorKind::Parse,
            "graph JSON: a header given with separate nodes must have `\"nodes\": []`",
        ));
    }
    g.nodes = crate::par::try_map(nodes, |i, text| {
        let mut node = serde_json::from_str::<Box<Node>>(text.as_ref())
            .map_err(|e| Error::new(ErrorKind::Parse, format!("graph JSON: node #{i}: {e}")))?;
        node.parsed_from = ParsedFrom(u32::try_from(i).ok());
        Ok(node)
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
    to_json_reusing(g, |_, _| None)
}

/// `to_json`, except that a node for which `reuse(position, node)` gives a text is written as
/// that text: a node a pass left as `from_parts` parsed it is written back as the text it was
/// parsed from (which reads as the same node; it is the same text when serde or tta's
/// serializer wrote it), and a 100k-node graph is mostly such nodes.
///
/// The other nodes are serialized first, in parallel; then every node's text is known, and the
/// document is assembled in one buffer of its final size, in pieces filled in parallel (a
/// 100k-node document is tens of megabytes, fresh memory each time).
pub fn to_json_reusing<'t>(g: &Graph, reuse: impl Fn(usize, &Node) -> Option<&'t str> + Sync) -> String {
    let written: Vec<Option<String>> = crate::par::map(&g.nodes, |i, n| reuse(i, n).is_none().then(|| json_text(n)));
    let text = |i: usize| written[i].as_deref().or_else(|| reuse(i, &g.nodes[i])).unwrap_or_default();
    let head = format!("{{\"format\":{},\"version\":{},\"nodes\":[", json_text(&g.format), g.version);
    let mut tail = String::from("]");
    if !g.regions.is_empty() {
        tail.push_str(",\"regions\":");
        tail.push_str(&json_text(&g.regions));
    }
    tail.push('}');
    // Each node after the first is preceded by its comma.
    let starts: Vec<usize> = (0..g.nodes.len()).step_by(NODES_PER_PIECE).collect();
    let ends = |start: usize| (start + NODES_PER_PIECE).min(g.nodes.len());
    let sizes = crate::par::map(&starts, |_, &start| {
        (start..ends(start)).map(|i| text(i).len() + usize::from(i > 0)).sum::<usize>()
    });
    let mut buf = vec![0u8; head.len() + sizes.iter().sum::<usize>() + tail.len()];
    let (first, mut rest) = buf.split_at_mut(head.len());
    first.copy_from_slice(head.as_bytes());
    let mut pieces = Vec::with_capacity(starts.len());
    for (&start, &size) in starts.iter().zip(&sizes) {
        let (piece, more) = rest.split_at_mut(size);
        pieces.push((start, piece));
        rest = more;
    }
    rest.copy_from_slice(tail.as_bytes());
    crate::par::for_each_mut(&mut pieces, |(start, piece)| {
        let mut at = 0;
        for i in *start..ends(*start) {
            if i > 0 {
                piece[at] = b',';
                at += 1;
            }
            let t = text(i).as_bytes();
            piece[at..at + t.len()].copy_from_slice(t);
            at += t.len();
        }
    });
    String::from_utf8(buf).expect("every piece is text")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(n: usize, regions: bool) -> Graph {
        let mut text = String::from(
            r#"{"format":"tta-graph","version":1,"nodes":[{"name":"x","op":"placeholder","target":"x","val":{"dtype":"float32","shape":["s0",4],"stride":[4,1]}}"#,
        );
        for i in 0..n {
            let prev = if i == 0 { "x".to_owned() } else { format!("n{}", i - 1) };
            let tag = if regions && i % 7 == 0 { r#","regions":["r:0"]"# } else { "" };
            text.push_str(&format!(r#",{{"name":"n{i}","op":"call_function","target":"aten.relu.default","args":[{{"ref":"{prev}"}},1.5,{{"float":"nan"}}]{tag}}}"#));
        }
        text.push_str(&format!(
            r#",{{"name":"output","op":"output","target":"output","args":[[{{"ref":"n{}"}}]]}}]"#,
            n - 1
        ));
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
