//! The crate's layering, read from its source (`src/`): each top-level module uses only the
//! modules below it (error, expr, graph, regions, lowering, pass; ptx beside them on error
//! alone; the python bindings on top), and no source files use each other, directly or round a
//! longer cycle. Paths are read from `crate::`, `super::` and child-module references outside
//! comments and unit-test modules.

use petgraph::algo::tarjan_scc;
use petgraph::graph::DiGraph;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// What each top-level module may use besides itself.
const LAYERS: &[(&str, &[&str])] = &[
    ("error", &[]),
    ("par", &[]),
    ("expr", &["error"]),
    ("graph", &["error", "par", "expr"]),
    ("regions", &["error", "par", "expr", "graph"]),
    ("lowering", &["error", "par", "expr", "graph", "regions"]),
    ("pass", &["error", "par", "expr", "graph", "regions", "lowering"]),
    ("ptx", &["error"]),
    ("python", &["error", "par", "expr", "graph", "regions", "lowering", "pass", "ptx"]),
];

struct Crate {
    /// Path under `src/` -> code without comments and unit tests.
    files: BTreeMap<String, String>,
}

fn strip(text: &str) -> String {
    let code = text.split("#[cfg(test)]").next().unwrap_or("");
    code.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

fn walk(dir: &Path, root: &Path, out: &mut BTreeMap<String, String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path: PathBuf = entry.unwrap().path();
        if path.is_dir() {
            walk(&path, root, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
            out.insert(rel, strip(&std::fs::read_to_string(&path).unwrap()));
        }
    }
}

/// `regions/pattern/search.rs` -> [regions, pattern, search]; a `mod.rs` is its directory.
fn module_path(file: &str) -> Vec<String> {
    let mut parts: Vec<String> = file.trim_end_matches(".rs").split('/').map(str::to_owned).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn skip_ws(code: &[u8], mut i: usize) -> usize {
    while i < code.len() && code[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// The paths a use-tree starting at `i` names (`a::b`, `a::{b, c::d}`), each after `prefix`.
fn use_tree(code: &[u8], i: usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
    let mut i = skip_ws(code, i);
    if i < code.len() && code[i] == b'{' {
        i += 1;
        loop {
            i = skip_ws(code, i);
            if i >= code.len() || code[i] == b'}' {
                return i + 1;
            }
            i = use_tree(code, i, prefix.clone(), out);
            // `x as y`
            while i < code.len() && code[i] != b',' && code[i] != b'}' {
                i += 1;
            }
            if i < code.len() && code[i] == b',' {
                i += 1;
            }
        }
    }
    let start = i;
    while i < code.len() && is_ident(code[i]) {
        i += 1;
    }
    if i == start {
        out.push(prefix);
        return (i + 1).min(code.len());
    }
    let mut path = prefix;
    path.push(String::from_utf8_lossy(&code[start..i]).into_owned());
    if code[i..].starts_with(b"::") {
        return use_tree(code, i + 2, path, out);
    }
    out.push(path);
    i
}

impl Crate {
    fn read() -> Crate {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = BTreeMap::new();
        walk(&root, &root, &mut files);
        Crate { files }
    }

    /// The file that defines a module path (its longest prefix that is a file).
    fn file_of(&self, path: &[String]) -> String {
        for k in (1..=path.len()).rev() {
            let p = path[..k].join("/");
            for candidate in [format!("{p}.rs"), format!("{p}/mod.rs")] {
                if self.files.contains_key(&candidate) {
                    return candidate;
                }
            }
        }
        "lib.rs".to_owned()
    }

    /// Absolute module paths `file` refers to.
    fn references(&self, file: &str) -> Vec<Vec<String>> {
        let code = self.files[file].as_bytes();
        let me = module_path(file);
        let text = &self.files[file];
        let children: Vec<String> = text
            .lines()
            .filter_map(|l| {
                let l = l.trim().trim_start_matches("pub(crate) ").trim_start_matches("pub ");
                l.strip_prefix("mod ").and_then(|r| r.strip_suffix(';')).map(str::to_owned)
            })
            .collect();
        let mut out = Vec::new();
        for (k, _) in text.match_indices("::") {
            let mut s = k;
            while s > 0 && is_ident(code[s - 1]) {
                s -= 1;
            }
            if s == k || (s >= 1 && code[s - 1] == b':') {
                continue;
            }
            let head = &text[s..k];
            let base: Vec<String> = match head {
                "crate" => Vec::new(),
                "super" => me[..me.len().saturating_sub(1)].to_vec(),
                _ if children.iter().any(|c| c == head) => {
                    let mut p = me.clone();
                    p.push(head.to_owned());
                    p
                }
                _ => continue,
            };
            let mut paths = Vec::new();
            use_tree(code, k + 2, base, &mut paths);
            for mut p in paths {
                // `super::super::x`
                while let Some(at) = p.iter().position(|s| s == "super") {
                    p.remove(at);
                    if at > 0 {
                        p.remove(at - 1);
                    }
                }
                out.push(p);
            }
        }
        out
    }

    /// File -> the other files it uses.
    fn file_graph(&self) -> BTreeMap<String, BTreeSet<String>> {
        self.files
            .keys()
            .map(|f| {
                let used = self.references(f).iter().map(|p| self.file_of(p)).filter(|t| t != f).collect();
                (f.clone(), used)
            })
            .collect()
    }
}

#[test]
fn the_check_sees_the_crate() {
    let c = Crate::read();
    let g = c.file_graph();
    assert!(g.len() > 40, "{}", g.len());
    assert!(g["pass/outline.rs"].contains("lowering/outline.rs"), "{:?}", g["pass/outline.rs"]);
    assert!(g["regions/boundary.rs"].contains("regions/mod.rs"), "{:?}", g["regions/boundary.rs"]);
    assert!(g["ptx/mod.rs"].contains("ptx/qdp.rs"), "{:?}", g["ptx/mod.rs"]);
    let mut paths = Vec::new();
    use_tree(b"super::{a, b::{c, d}, e as f};", 7, vec!["m".into()], &mut paths);
    assert_eq!(paths, [vec!["m", "a"], vec!["m", "b", "c"], vec!["m", "b", "d"], vec!["m", "e"]]);
}

#[test]
fn each_module_uses_only_those_below_it() {
    let c = Crate::read();
    let layers: BTreeMap<&str, &[&str]> = LAYERS.iter().copied().collect();
    let mut bad = Vec::new();
    for file in c.files.keys() {
        let me = module_path(file);
        let Some(top) = me.first() else { continue };
        let allowed = layers.get(top.as_str()).unwrap_or_else(|| panic!("{file}: module `{top}` is not in LAYERS"));
        for p in c.references(file) {
            let Some(used) = p.first() else { continue };
            if used != top && layers.contains_key(used.as_str()) && !allowed.contains(&used.as_str()) {
                bad.push(format!("{file} uses crate::{}", p.join("::")));
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn no_files_use_each_other() {
    let c = Crate::read();
    let files = c.file_graph();
    let mut g: DiGraph<&str, ()> = DiGraph::new();
    let node: BTreeMap<&str, _> = files.keys().map(|f| (f.as_str(), g.add_node(f.as_str()))).collect();
    for (f, used) in &files {
        for u in used {
            g.add_edge(node[f.as_str()], node[u.as_str()], ());
        }
    }
    let cycles: Vec<Vec<&str>> = tarjan_scc(&g)
        .into_iter()
        .filter(|scc| scc.len() > 1)
        .map(|scc| scc.into_iter().map(|n| g[n]).collect())
        .collect();
    assert!(cycles.is_empty(), "{cycles:?}");
}
