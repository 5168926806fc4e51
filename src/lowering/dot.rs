//! The explain picture as Graphviz DOT: the input graph over its petgraph view, each region
//! drawn as a cluster of its member ops, and beside each outlined region the plugin node that
//! replaces it. Refused regions are drawn in red with the reason. petgraph's own `Dot` cannot
//! draw clusters, hence this writer.
//!
//! Big graphs stay readable two ways: a run of plain ops outside every region (each with one
//! producer and one reader) is drawn as one "N ops" node, and past `max_nodes` only the regions
//! and their direct neighbours are drawn; the picture's title says so whenever that happens.

use super::report::{RegionReport, Status};
use crate::error::Result;
use crate::graph::{self, Dag, Graph, Node, OpKind, Value};
use petgraph::visit::EdgeRef;
use std::collections::BTreeSet;
use std::fmt::Write;

#[derive(Clone, Debug)]
pub struct DotOptions {
    /// Past this many drawn nodes, only regions and their neighbours are drawn.
    pub max_nodes: usize,
    /// Runs of at least this many plain ops become one node.
    pub min_chain: usize,
    /// Source paths under this directory are shown relative to it.
    pub base_dir: Option<String>,
}

impl Default for DotOptions {
    fn default() -> Self {
        DotOptions { max_nodes: 300, min_chain: 3, base_dir: None }
    }
}

/// What one drawn node stands for.
enum Unit {
    Node(usize),
    /// A run of plain ops, first to last in graph order.
    Chain(Vec<usize>),
}

/// DOT text of `g` (the graph before the rewrite) with the regions of `report`.
pub fn to_dot(g: &Graph, report: &[RegionReport], opts: &DotOptions) -> Result<String> {
    let graph::verify::Verified { index, inputs } = graph::verify::verify(g)?;
    let dag = Dag::from_inputs(inputs);
    let mut region_of: Vec<Option<usize>> = vec![None; g.nodes.len()];
    for (r, rep) in report.iter().enumerate() {
        for name in &rep.nodes {
            if let Some(&i) = index.get(name.as_str()) {
                region_of[i] = Some(r);
            }
        }
    }

    let (units, unit_of) = collapse_chains(g, &dag, &region_of, opts.min_chain);
    let total_units = units.len();
    let shown: Vec<bool> = if total_units > opts.max_nodes {
        neighbourhood(&dag, &region_of, &unit_of, total_units)
    } else {
        vec![true; total_units]
    };
    let shown_count = shown.iter().filter(|s| **s).count();

    let mut notes = Vec::new();
    let collapsed: usize = units.iter().filter(|u| matches!(u, Unit::Chain(_))).count();
    if collapsed > 0 {
        notes.push(format!("{collapsed} run(s) of plain ops drawn as one node each"));
    }
    if shown_count < total_units {
        notes.push(format!(
            "only the regions and their neighbours are drawn: {shown_count} of {total_units} nodes (more than {})",
            opts.max_nodes
        ));
    }
    let outlined = report.iter().filter(|r| r.status == Status::Outlined).count();
    let mut title = format!(
        "tta explain: {} ops, {} region(s): {} outlined, {} refused",
        g.nodes.len(),
        report.len(),
        outlined,
        report.len() - outlined
    );
    for n in &notes {
        title.push_str("\\n");
        title.push_str(&escape(n));
    }

    let mut out = String::new();
    out.push_str("digraph tta {\n");
    let _ = writeln!(
        out,
        "  graph [compound=true, rankdir=TB, fontname=\"Helvetica\", fontsize=11, labelloc=t, label=\"{title}\"];"
    );
    out.push_str("  node [shape=box, style=\"rounded,filled\", fillcolor=\"#f4f4f4\", color=\"#9e9e9e\", fontname=\"Helvetica\", fontsize=9];\n");
    out.push_str("  edge [color=\"#757575\", arrowsize=0.6, fontname=\"Helvetica\"];\n");

    // Nodes outside every region, in graph order.
    for (u, unit) in units.iter().enumerate() {
        if !shown[u] {
            continue;
        }
        if let Unit::Node(i) = unit {
            if region_of[*i].is_some() {
                continue;
            }
        }
        let _ = writeln!(out, "  {}", unit_stmt(g, u, unit));
    }
    // One cluster per region, and the plugin node beside each outlined one.
    for (r, rep) in report.iter().enumerate() {
        let members: Vec<usize> =
            (0..g.nodes.len()).filter(|&i| region_of[i] == Some(r) && shown[unit_of[i]]).collect();
        let _ = writeln!(out, "  subgraph cluster_r{r} {{");
        let (fill, border) = match rep.status {
            Status::Outlined => ("#e8f5e9", "#2e7d32"),
            Status::Refused => ("#ffebee", "#c62828"),
        };
        let _ = writeln!(
            out,
            "    graph [label=\"\", style=\"rounded,filled\", fillcolor=\"{fill}\", color=\"{border}\", penwidth=1.5];"
        );
        // The region's text is a node above its ops, not the cluster's label: dot routes edges
        // around nodes but straight through cluster labels.
        let _ = writeln!(
            out,
            "    r{r} [label=\"{}\", shape=plaintext, style=\"\", fontsize=10, fontcolor=\"{border}\"];",
            cluster_label(rep, opts.base_dir.as_deref())
        );
        for &i in &members {
            let _ = writeln!(out, "    {}", unit_stmt(g, unit_of[i], &units[unit_of[i]]));
        }
        if let Some(&first) = members.first() {
            let _ = writeln!(out, "    r{r} -> u{} [style=invis];", unit_of[first]);
        }
        out.push_str("  }\n");
        if rep.status == Status::Outlined {
            let op = rep.op.as_deref().unwrap_or("?");
            let node = rep.node.as_deref().unwrap_or("?");
            let _ = writeln!(
                out,
                "  p{r} [label=\"tta::{}\\nplugin node {}\", shape=component, fillcolor=\"#a5d6a7\", color=\"#1b5e20\", fontsize=10];",
                escape(op),
                escape(node)
            );
            let target = format!("r{r}");
            let _ = writeln!(
                out,
                "  p{r} -> {target} [lhead=cluster_r{r}, style=dashed, color=\"#1b5e20\", arrowhead=none, label=\" replaces\", fontsize=8, fontcolor=\"#1b5e20\"];"
            );
        }
    }
    // Dataflow edges between drawn nodes, once per pair.
    let mut edges: BTreeSet<(usize, usize)> = BTreeSet::new();
    for e in dag.graph.edge_references() {
        let (a, b) = (unit_of[e.source().index()], unit_of[e.target().index()]);
        if a != b && shown[a] && shown[b] {
            edges.insert((a, b));
        }
    }
    for (a, b) in edges {
        let _ = writeln!(out, "  u{a} -> u{b};");
    }
    // Each region's text sits below everything feeding the region, so no input is drawn level
    // with it (dot would put that input inside the cluster's box).
    let mut feeds: BTreeSet<(usize, usize)> = BTreeSet::new();
    for (i, r) in region_of.iter().enumerate() {
        if let Some(r) = *r {
            for &j in &dag.inputs[i] {
                if region_of[j] != Some(r) && shown[unit_of[j]] {
                    feeds.insert((r, unit_of[j]));
                }
            }
        }
    }
    for (r, u) in feeds {
        let _ = writeln!(out, "  u{u} -> r{r} [style=invis];");
    }
    out.push_str("}\n");
    Ok(out)
}

/// Units in graph order (a chain at its first op) and each node's unit.
fn collapse_chains(g: &Graph, dag: &Dag, region_of: &[Option<usize>], min_chain: usize) -> (Vec<Unit>, Vec<usize>) {
    let plain = |i: usize| {
        region_of[i].is_none()
            && matches!(g.nodes[i].op, OpKind::CallFunction | OpKind::CallMethod | OpKind::CallModule)
            && dag.inputs[i].len() == 1
            && dag.users[i].len() == 1
    };
    let n = g.nodes.len();
    let mut chain_of: Vec<Option<Vec<usize>>> = vec![None; n];
    let mut in_chain = vec![false; n];
    for (i, slot) in chain_of.iter_mut().enumerate() {
        // A run starts at a plain op whose producer does not continue into it.
        if !plain(i) || plain(dag.inputs[i][0]) {
            continue;
        }
        let mut run = vec![i];
        let mut at = i;
        while plain(dag.users[at][0]) {
            at = dag.users[at][0];
            run.push(at);
        }
        if run.len() >= min_chain.max(2) {
            for &j in &run {
                in_chain[j] = true;
            }
            *slot = Some(run);
        }
    }
    let mut units = Vec::new();
    let mut unit_of = vec![usize::MAX; n];
    for (i, chain) in chain_of.iter_mut().enumerate() {
        if let Some(run) = chain.take() {
            for &j in &run {
                unit_of[j] = units.len();
            }
            units.push(Unit::Chain(run));
        } else if !in_chain[i] {
            unit_of[i] = units.len();
            units.push(Unit::Node(i));
        }
    }
    (units, unit_of)
}

/// The units of region members and of their direct producers and readers.
fn neighbourhood(dag: &Dag, region_of: &[Option<usize>], unit_of: &[usize], units: usize) -> Vec<bool> {
    let mut shown = vec![false; units];
    for (i, r) in region_of.iter().enumerate() {
        if r.is_some() {
            shown[unit_of[i]] = true;
            for &j in dag.inputs[i].iter().chain(&dag.users[i]) {
                shown[unit_of[j]] = true;
            }
        }
    }
    shown
}

fn unit_stmt(g: &Graph, u: usize, unit: &Unit) -> String {
    match unit {
        Unit::Node(i) => {
            let n = &g.nodes[*i];
            let shape = match n.op {
                OpKind::Placeholder | OpKind::GetAttr => ", shape=ellipse, fillcolor=\"#e3f2fd\"",
                OpKind::Output => ", shape=ellipse, fillcolor=\"#fff3e0\"",
                _ => "",
            };
            format!("u{u} [label=\"{}\"{shape}];", node_label(n))
        }
        Unit::Chain(run) => {
            let (first, last) = (&g.nodes[run[0]].name, &g.nodes[run[run.len() - 1]].name);
            format!(
                "u{u} [label=\"{} ops\\n{} .. {}\", style=\"rounded,dashed,filled\", fillcolor=\"#fafafa\"];",
                run.len(),
                escape(first),
                escape(last)
            )
        }
    }
}

fn node_label(n: &Node) -> String {
    let what = match n.op {
        OpKind::Placeholder => "input".to_owned(),
        OpKind::GetAttr => "attribute".to_owned(),
        OpKind::Output => "output".to_owned(),
        _ => short_target(&n.target).to_owned(),
    };
    let mut label = escape(&n.name);
    // fx names a node after its op (`mul_1` for `aten.mul.Tensor`): the op line would repeat it.
    let base = n.name.trim_end_matches(|c: char| c.is_ascii_digit()).trim_end_matches('_');
    if what.split('.').next() != Some(base) {
        label.push_str("\\n");
        label.push_str(&escape(&what));
    }
    match &n.val {
        Value::Tensor(t) => {
            label.push_str("\\n");
            label.push_str(&escape(&t.to_string()));
        }
        Value::SymInt(e) => {
            label.push_str("\\nSymInt ");
            label.push_str(&escape(e));
        }
        _ => {}
    }
    label
}

/// `aten.add.Tensor` -> `add.Tensor`, `aten.relu.default` -> `relu`.
fn short_target(t: &str) -> &str {
    let t = t.strip_prefix("aten.").unwrap_or(t);
    t.strip_suffix(".default").unwrap_or(t)
}

fn cluster_label(rep: &RegionReport, base_dir: Option<&str>) -> String {
    let mut lines = vec![format!("region {}  impl {}", rep.id, rep.impl_key)];
    if let Some(src) = &rep.source {
        lines.push(base_dir.and_then(|b| src.strip_prefix(b)).unwrap_or(src).to_owned());
    }
    match rep.status {
        Status::Outlined => lines.push("outlined".to_owned()),
        Status::Refused => {
            let reason = rep.reason.as_deref().unwrap_or("?");
            lines.extend(wrap(&format!("REFUSED: {reason}"), 60));
        }
    }
    lines.iter().map(|l| escape(l)).collect::<Vec<_>>().join("\\l") + "\\l"
}

/// Greedy word wrap, so a long refusal reason does not make one very wide cluster.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// Text inside a DOT double-quoted string.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            _ => out.push(c),
        }
    }
    out
}
