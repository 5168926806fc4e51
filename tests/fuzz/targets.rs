//! The four targets: the graph loader plus the whole pass, the expression parser and evaluator,
//! the PTX parser and rewriters, and the CUBIN ELF reader. `execute` returns the outcome's
//! shape for guidance, or `Crash` when a property that must hold does not (a panic is caught
//! by the driver).

use super::mutate::{self, Rng, INTERESTING};
use super::{root, Verdict};
use std::collections::HashMap;
use tta::graph::{self, Graph};
use tta::lowering::MetaOut;
use tta::pass::{self, Impls, MetaResult};
use tta::regions::selectors::Selectors;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Graph,
    Expr,
    Ptx,
    Cubin,
}

pub const ALL: [Target; 4] = [Target::Graph, Target::Expr, Target::Ptx, Target::Cubin];

const EXPR_DICT: &[&str] = &[
    "s0",
    "s1",
    "s2",
    "+",
    "-",
    "*",
    "**",
    "//",
    "/",
    "%",
    "(",
    ")",
    ",",
    "FloorDiv(",
    "CeilDiv(",
    "Mod(",
    "Max(",
    "Min(",
    "PythonMod(",
    "IntCeilDiv(",
    "TrueDiv(",
    "ModularIndexing(",
    "9223372036854775807",
    "-9223372036854775807 - 1",
    "é",
    "\u{1F600}",
    " ",
    "16",
    "0",
    "-1",
];

const PTX_DICT: &[&str] = &[
    ".entry",
    ".visible",
    ".param",
    ".u64",
    ".u32",
    ".b8",
    ".align 8",
    ".ptr",
    ".global",
    "{",
    "}",
    "(",
    ")",
    ",",
    ";",
    ".version 9.9",
    ".version 7.0",
    ".target sm_90a",
    ".address_size 64",
    ".reqntid 128",
    ".maxntid 256, 1, 1",
    ".language 1",
    "//",
    "/*",
    "*/",
    "\"",
    "[",
    "]",
    ".nv_intermediate_source_section",
    "é",
    "\n",
];

const GRAPH_STRINGS: &[&str] = &[
    "x",
    "y",
    "add",
    "relu",
    "s0",
    "s0 + 1",
    "2*s0",
    "(s0+s1+s2+s3+s4+s5)**12",
    "s0**16**16",
    "9223372036854775807 + 1",
    "FloorDiv(s0, 0)",
    "float32",
    "int64",
    "bogus",
    "aten.add.Tensor",
    "aten.relu.default",
    "_operator.getitem",
    "output",
    "placeholder",
    "call_function",
    "get_attr",
    "r",
    "A",
    "B",
    "k",
    "é",
    "",
];

impl Target {
    pub fn name(self) -> &'static str {
        match self {
            Target::Graph => "graph",
            Target::Expr => "expr",
            Target::Ptx => "ptx",
            Target::Cubin => "cubin",
        }
    }

    pub fn from_name(s: &str) -> Option<Target> {
        ALL.into_iter().find(|t| t.name() == s)
    }

    /// Inputs longer than this are not kept in the corpus (they would slow every later run).
    pub fn max_len(self) -> usize {
        match self {
            Target::Graph => 64 << 10,
            Target::Expr => 4 << 10,
            Target::Ptx | Target::Cubin => 64 << 10,
        }
    }

    pub fn seeds(self) -> Vec<Vec<u8>> {
        let dir = root().join("tests/fixtures");
        let files = |sub: &str, ext: &str| -> Vec<Vec<u8>> {
            let mut paths: Vec<_> = std::fs::read_dir(dir.join(sub))
                .map(|d| {
                    d.filter_map(|e| e.ok().map(|e| e.path()))
                        .filter(|p| p.extension().is_some_and(|x| x == ext))
                        .collect()
                })
                .unwrap_or_default();
            paths.sort();
            paths.iter().filter_map(|p| std::fs::read(p).ok()).collect()
        };
        match self {
            Target::Graph => {
                let mut seeds: Vec<Vec<u8>> = files("", "json")
                    .into_iter()
                    .filter_map(|b| {
                        let doc: serde_json::Value = serde_json::from_slice(&b).ok()?;
                        serde_json::to_vec(&serde_json::json!({"graph": doc["graph"], "impls": doc["impls"]})).ok()
                    })
                    .collect();
                seeds.push(mutual_dependence_seed());
                seeds
            }
            Target::Expr => {
                let mut seeds: Vec<Vec<u8>> = [
                    "s0",
                    "2*s0 + 1",
                    "(s0//2)",
                    "FloorDiv(s0, 2)",
                    "CeilDiv(s0*s1, 1024)",
                    "-FloorDiv(-s0*s1, 1024)",
                    "Max(1, s0, 3)",
                    "Min(s0, s1) + Mod(s0, 3)",
                    "s0**2 - 1",
                    "(s0 + 1)*(s0 - 1)",
                    "s0/2",
                    "TrueDiv(s0, 3)",
                    "ModularIndexing(s0, 1, 4)",
                ]
                .iter()
                .map(|s| s.as_bytes().to_vec())
                .collect();
                // Every shape expression in the graph fixtures.
                for b in files("", "json") {
                    let mut strings = Vec::new();
                    if let Ok(doc) = serde_json::from_slice::<serde_json::Value>(&b) {
                        mutate::strings_of(&doc["graph"], &mut strings);
                    }
                    strings.retain(|s| s.contains('s') && s.chars().any(|c| c.is_ascii_digit()) && s.len() < 200);
                    strings.sort();
                    strings.dedup();
                    seeds.extend(strings.into_iter().take(50).map(String::into_bytes));
                }
                seeds
            }
            Target::Ptx => files("ptx", "ptx"),
            Target::Cubin => files("ptx", "cubin"),
        }
    }

    pub fn mutate(self, base: &[u8], other: &[u8], rng: &mut Rng) -> Vec<u8> {
        match self {
            Target::Graph => {
                // Mostly structure-aware; sometimes raw bytes (the loader's own errors).
                if rng.chance(5) {
                    return mutate::bytes(
                        base,
                        other,
                        &["{", "}", "[", "]", "\"", ":", ",", "null", "1e999", "-0"],
                        rng,
                    );
                }
                match (serde_json::from_slice(base), serde_json::from_slice(other)) {
                    (Ok(a), Ok(b)) => serde_json::to_vec(&mutate::json(&a, &b, GRAPH_STRINGS, rng)).unwrap_or_default(),
                    _ => mutate::bytes(base, other, &[], rng),
                }
            }
            Target::Expr => mutate::bytes(base, other, EXPR_DICT, rng),
            Target::Ptx => mutate::bytes(base, other, PTX_DICT, rng),
            Target::Cubin => {
                let mut b = if rng.chance(3) { mutate::bytes(base, other, &[], rng) } else { base.to_vec() };
                // Overwrite an ELF field (header, section headers) with an interesting integer.
                for _ in 0..1 + rng.below(3) {
                    if b.is_empty() {
                        break;
                    }
                    let (width, at) = match rng.below(4) {
                        0 => (*rng.pick(&[1usize, 2, 4, 8]), rng.below(64.min(b.len()))),
                        1 => (*rng.pick(&[1usize, 2, 4, 8]), rng.below(b.len())),
                        // A field of a section header (name, type, offset, size, link) or a
                        // word inside a section's data (the .nv.info records).
                        _ => match elf_field(&b, rng) {
                            Some(f) => f,
                            None => (4, rng.below(b.len())),
                        },
                    };
                    let v = (*rng.pick(INTERESTING) as u64).to_le_bytes();
                    let n = width.min(b.len() - at);
                    b[at..at + n].copy_from_slice(&v[..n]);
                }
                b
            }
        }
    }

    pub fn execute(self, input: &[u8], rng: &mut Rng) -> Verdict {
        match self {
            Target::Graph => run_graph(input, rng),
            Target::Expr => run_expr(&String::from_utf8_lossy(input), rng),
            Target::Ptx => run_ptx(&String::from_utf8_lossy(input), rng),
            Target::Cubin => run_cubin(input),
        }
    }
}

/// The outcome's shape: the error with names (in backticks or quotes) and digits blanked.
fn shape(prefix: &str, r: Result<(), String>) -> Verdict {
    let msg = match r {
        Ok(()) => return Verdict::Clean(format!("{prefix}:ok")),
        Err(m) => m,
    };
    let mut out = String::new();
    let mut skip = None;
    for c in msg.chars() {
        match skip {
            Some(end) if c == end => skip = None,
            Some(_) => {}
            None if c == '`' => skip = Some('`'),
            None if c == '"' => skip = Some('"'),
            None if c.is_ascii_digit() => out.push('0'),
            None => out.push(c),
        }
        if out.len() > 100 {
            break;
        }
    }
    Verdict::Clean(format!("{prefix}:{out}"))
}

fn mutual_dependence_seed() -> Vec<u8> {
    let t = serde_json::json!({"dtype": "float32", "shape": ["s0", 4]});
    let node = |name: &str, target: &str, args: serde_json::Value, region: &str| serde_json::json!({"name": name, "op": "call_function", "target": target, "args": args, "val": t, "regions": [region]});
    let r = |n: &str| serde_json::json!({"ref": n});
    serde_json::to_vec(&serde_json::json!({
        "graph": {"format": "tta-graph", "version": 1, "nodes": [
            {"name": "x", "op": "placeholder", "target": "x", "val": t},
            node("a1", "aten.relu.default", serde_json::json!([r("x")]), "A"),
            node("b1", "aten.relu.default", serde_json::json!([r("x")]), "B"),
            node("a2", "aten.add.Tensor", serde_json::json!([r("a1"), r("b1")]), "A"),
            node("b2", "aten.add.Tensor", serde_json::json!([r("b1"), r("a1")]), "B"),
            {"name": "o", "op": "output", "target": "output", "args": [[r("a2"), r("b2")]]}
        ], "regions": {"A": {"impl": "k"}, "B": {"impl": "k"}}},
        "impls": {"k": {"name": "k"}}
    }))
    .expect("json")
}

#[derive(serde::Deserialize)]
struct GraphInput {
    graph: Graph,
    impls: Impls,
    #[serde(default)]
    selectors: Selectors,
}

fn run_graph(input: &[u8], rng: &mut Rng) -> Verdict {
    let doc: GraphInput = match serde_json::from_slice(input) {
        Ok(d) => d,
        Err(e) => return shape("load", Err(e.to_string())),
    };
    let analysis = match pass::analyze(doc.graph, doc.impls, &doc.selectors) {
        Ok(a) => a,
        Err(e) => return shape("analyze", Err(e.to_string())),
    };
    let _ = serde_json::to_string(&analysis.summary()).expect("summary serializes");
    let _ = serde_json::to_string(&analysis.members()).expect("members serialize");
    // What meta_impls might return: nothing, an error, the right outputs, or wrong ones.
    let mut meta = HashMap::new();
    for s in analysis.summary() {
        let outs: Vec<MetaOut> = s
            .outputs
            .iter()
            .filter_map(|p| match &p.kind {
                tta::regions::PortKind::Tensor { dtype, shape } => {
                    Some(MetaOut { dtype: dtype.clone(), shape: shape.clone() })
                }
                _ => None,
            })
            .collect();
        match rng.below(4) {
            0 => {}
            1 => {
                meta.insert(s.id.to_owned(), MetaResult::Error("meta failed".into()));
            }
            2 => {
                meta.insert(s.id.to_owned(), MetaResult::Ok(outs));
            }
            _ => {
                meta.insert(s.id.to_owned(), MetaResult::Ok(outs.into_iter().take(1).collect()));
            }
        }
    }
    let outcome = match analysis.outline(&meta) {
        Ok(o) => o,
        Err(e) => return shape("outline", Err(e.to_string())),
    };
    // Properties: the rewritten graph is valid, survives its own JSON round trip, and passes
    // the rewrite check against itself.
    if let Err(e) = graph::verify::verify(&outcome.graph) {
        return Verdict::Crash(format!("rewritten graph fails verification: {e}"));
    }
    let text = graph::to_json(&outcome.graph);
    match graph::from_json(&text) {
        Ok(back) => {
            if let Err(e) = outcome.check_matches(&back) {
                return Verdict::Crash(format!("rewritten graph does not match its own JSON: {e}"));
            }
        }
        Err(e) => return Verdict::Crash(format!("rewritten graph JSON does not parse: {e}")),
    }
    let _ = serde_json::to_string(&outcome.report).expect("report serializes");
    let _: String = outcome.report.iter().map(|r| r.to_string()).collect();
    let outlined = outcome.edits.len();
    shape(&format!("ok{}", outlined.min(3)), Ok(()))
}

fn run_expr(text: &str, rng: &mut Rng) -> Verdict {
    let p = match tta::expr::parse(text) {
        Ok(p) => p,
        Err(e) => return shape("parse", Err(e.0)),
    };
    let canonical = p.to_string();
    // Property: the canonical text parses back to the same polynomial.
    match tta::expr::parse(&canonical) {
        Ok(q) if q == p => {}
        Ok(q) => return Verdict::Crash(format!("canonical form not stable: {text:?} -> {canonical:?} -> {q}")),
        Err(e) => return Verdict::Crash(format!("canonical form does not parse: {text:?} -> {canonical:?}: {e}")),
    }
    let env: HashMap<String, i64> = p
        .symbols()
        .into_iter()
        .map(|s| {
            let v = if rng.chance(2) { rng.below(100) as i64 } else { *rng.pick(INTERESTING) };
            (s, v)
        })
        .collect();
    let value = p.eval(&env).map(|_| ()).map_err(|e| e.0);
    let trtp = p.to_trtp(&|s| format!("X[{s}]")).map(|_| ()).map_err(|e| e.0);
    match (value, trtp) {
        (Ok(()), Ok(())) => shape("expr", Ok(())),
        (Err(e), _) => shape("eval", Err(e)),
        (_, Err(e)) => shape("trtp", Err(e)),
    }
}

fn run_ptx(text: &str, rng: &mut Rng) -> Verdict {
    use tta::ptx;
    let m = match ptx::parse(text) {
        Ok(m) => m,
        Err(e) => return shape("parse", Err(e.to_string())),
    };
    let _ = serde_json::to_string(&m).expect("module serializes");
    let mut last = Ok(());
    for e in &m.entries {
        let n = e.params.len();
        let mut order: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            order.swap(i, rng.below(i + 1));
        }
        if rng.chance(4) && n > 0 {
            order[0] = rng.below(n + 2); // sometimes not a permutation
        }
        let outputs: Vec<Result<String, tta::Error>> = vec![
            ptx::permute_params(text, &e.name, &order),
            ptx::drop_trailing_scratch(text, &e.name, &[rng.below(2) as u64 * 256, rng.below(2) as u64 * 64]),
            ptx::relabel_version(text, ptx::IsaVersion { major: 8, minor: rng.below(9) as u32 }),
            ptx::drop_arch_suffix(text),
        ];
        for out in outputs {
            match out {
                // Property: what a rewrite returns is PTX that parses.
                Ok(new) => {
                    if let Err(err) = ptx::parse(&new) {
                        return Verdict::Crash(format!("rewritten PTX does not parse: {err}"));
                    }
                }
                Err(err) => last = Err(err.to_string()),
            }
        }
        let spec = ptx::QdpSpec {
            entry: e.name.clone(),
            trailing_scratch: Vec::new(),
            roles: rng.chance(3).then(|| {
                (0..n).map(|k| ([ptx::Role::Input, ptx::Role::Extra, ptx::Role::Output][rng.below(3)], k)).collect()
            }),
            order: rng.chance(2).then(|| order.clone()),
            slots: rng.chance(2).then(|| ptx::QdpSlots {
                inputs: rng.below(n + 1),
                extras: rng.below(2),
                outputs: rng.below(2),
            }),
            max_version: rng.chance(2).then_some(ptx::IsaVersion { major: 9, minor: 0 }),
        };
        if let Err(err) = ptx::to_qdp_abi(text, &spec) {
            last = Err(err.to_string());
        }
        let _ = ptx::check_version(text, ptx::IsaVersion { major: 9, minor: 0 });
    }
    shape("ptx", last)
}

/// (width, offset) of a section-header field or of a 32-bit word in a section's data.
fn elf_field(b: &[u8], rng: &mut Rng) -> Option<(usize, usize)> {
    let u = |at: usize, n: usize| -> Option<usize> {
        let mut v = [0u8; 8];
        v[..n].copy_from_slice(b.get(at..at.checked_add(n)?)?);
        Some(u64::from_le_bytes(v) as usize)
    };
    let (shoff, shentsize, shnum) = (u(0x28, 8)?, u(0x3A, 2)?, u(0x3C, 2)?);
    if shnum == 0 || shentsize < 0x40 {
        return None;
    }
    let h = shoff.checked_add(rng.below(shnum).checked_mul(shentsize)?)?;
    if rng.chance(2) {
        let (field, width) = *rng.pick(&[(0usize, 4usize), (4, 4), (0x18, 8), (0x20, 8), (0x28, 4)]);
        let at = h.checked_add(field)?;
        return (at.checked_add(width)? <= b.len()).then_some((width, at));
    }
    let (off, size) = (u(h.checked_add(0x18)?, 8)?, u(h.checked_add(0x20)?, 8)?);
    if size < 4 || off.checked_add(size)? > b.len() {
        return None;
    }
    Some((4, off + rng.below(size - 3)))
}

fn run_cubin(input: &[u8]) -> Verdict {
    use tta::ptx;
    // The layout is read for the entries the embedded PTX names, and for one that is missing;
    // the layout reader runs whether or not the PTX section is readable. The outcome is every
    // call's, so a new error anywhere counts as new.
    let mut outcomes = Vec::new();
    let mut names = match ptx::debug_ptx_from_cubin(input) {
        Ok(text) => {
            outcomes.push("ptx ok".to_string());
            ptx::parse(&text).map(|m| m.entries.into_iter().map(|e| e.name).collect()).unwrap_or_default()
        }
        Err(e) => {
            outcomes.push(e.to_string());
            Vec::new()
        }
    };
    names.push("missing".into());
    for name in &names {
        outcomes.push(match ptx::cubin_params(input, name) {
            Ok(p) => format!("{} params", p.len()),
            Err(e) => e.to_string(),
        });
    }
    shape("cubin", Err(outcomes.join(" | ")))
}
