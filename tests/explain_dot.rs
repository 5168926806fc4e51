//! The explain picture's DOT (`lowering::dot`) on graphs exported from real models: snapshots
//! of small ones, and the structure of big ones (chains collapsed, the cap, no dangling edge).

mod common;

use std::collections::{BTreeSet, HashMap};
use tta::lowering::dot::{to_dot, DotOptions};

fn dot_of(name: &str, opts: &DotOptions) -> String {
    let f = common::load(name);
    let out = common::run(f.graph.clone(), f.impls, &HashMap::new());
    to_dot(&f.graph, &out.report, opts).unwrap()
}

/// Node ids declared in `dot` and the ids its edges use.
fn ids(dot: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut declared = BTreeSet::new();
    let mut used = BTreeSet::new();
    for line in dot.lines().map(str::trim) {
        let head = line.split(" [").next().unwrap();
        if let Some((a, b)) = head.split_once(" -> ") {
            used.insert(a.to_owned());
            used.insert(b.trim_end_matches(';').to_owned());
        } else if line.contains(" [label=") {
            declared.insert(head.to_owned());
        }
    }
    (declared, used)
}

#[test]
fn outlined_region_is_a_cluster_beside_its_plugin_node() {
    let dot = dot_of("residual_add_relu", &DotOptions::default());
    assert!(dot.contains("subgraph cluster_r0"));
    assert!(dot.contains("p0 [label=\"tta::"));
    assert!(dot.contains("lhead=cluster_r0"));
    insta::assert_snapshot!("dot_residual_add_relu", dot);
}

#[test]
fn refused_region_is_red_and_says_why() {
    let dot = dot_of("nonconvex", &DotOptions::default());
    assert!(dot.contains("REFUSED: "), "{dot}");
    assert!(dot.contains("not convex"), "{dot}");
    assert!(!dot.contains("p0 ["), "a refused region has no plugin node: {dot}");
    insta::assert_snapshot!("dot_nonconvex", dot);
}

#[test]
fn every_edge_names_a_drawn_node() {
    for name in common::all_fixtures() {
        for max_nodes in [300, 10] {
            let dot = dot_of(&name, &DotOptions { max_nodes, ..Default::default() });
            let (declared, used) = ids(&dot);
            let missing: Vec<_> = used.difference(&declared).collect();
            assert!(missing.is_empty(), "{name} (max {max_nodes}): edges to undeclared nodes {missing:?}\n{dot}");
        }
    }
}

#[test]
fn long_runs_of_plain_ops_collapse_into_one_node() {
    let f = common::load("transformer_rmsnorm");
    let full =
        dot_of("transformer_rmsnorm", &DotOptions { max_nodes: 10_000, min_chain: usize::MAX, ..Default::default() });
    let collapsed =
        dot_of("transformer_rmsnorm", &DotOptions { max_nodes: 10_000, min_chain: 3, ..Default::default() });
    assert!(collapsed.contains(" ops\\n"), "{collapsed}");
    assert!(collapsed.contains("drawn as one node each"));
    assert!(ids(&collapsed).0.len() < ids(&full).0.len());
    // Every region member is still drawn as itself.
    let out = common::run(f.graph.clone(), f.impls, &HashMap::new());
    for r in &out.report {
        for n in &r.nodes {
            let drawn =
                collapsed.contains(&format!("[label=\"{n}\\n")) || collapsed.contains(&format!("[label=\"{n}\""));
            assert!(drawn, "member {n} of {} not drawn", r.id);
        }
    }
}

#[test]
fn past_the_cap_only_regions_and_neighbours_are_drawn_and_the_title_says_so() {
    let all = dot_of("loop12", &DotOptions { max_nodes: 10_000, ..Default::default() });
    let capped = dot_of("loop12", &DotOptions { max_nodes: 20, ..Default::default() });
    assert!(!all.contains("only the regions"));
    assert!(capped.contains("only the regions and their neighbours are drawn"), "{capped}");
    assert_eq!(capped.matches("subgraph cluster_").count(), 12);
    assert!(ids(&capped).0.len() <= ids(&all).0.len());
}
