//! A mutation fuzzer that runs on stable Rust (cargo-fuzz needs nightly): seed corpora from the
//! fixtures, byte-level and structure-aware mutations driven by a seeded generator (every run
//! is reproducible), each execution inside `catch_unwind`. A panic is a crash; an execution
//! slower than the time limit is a hang. Either is reported with its input saved.
//!
//! Guidance without coverage instrumentation: an input whose outcome (success, or the error
//! kind and message shape) was not seen before joins the corpus, so mutations build on inputs
//! that reach new code paths and error branches.
//!
//! Used by `examples/fuzz.rs` (long runs) and `tests/fuzz_smoke.rs` (a few seconds in CI).
#![allow(dead_code)]

mod mutate;
pub mod targets;

pub use mutate::Rng;
pub use targets::Target;

use std::collections::HashSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What one execution did.
pub enum Verdict {
    /// Ok or a clean error; the string is the outcome's shape (for corpus guidance).
    Clean(String),
    Crash(String),
}

pub struct Finding {
    pub kind: &'static str,
    pub message: String,
    pub saved: Option<PathBuf>,
}

pub struct Report {
    pub target: &'static str,
    pub executions: u64,
    pub corpus: usize,
    pub outcomes: usize,
    pub crashes: Vec<Finding>,
    pub hangs: Vec<Finding>,
    pub slowest: Duration,
    pub elapsed: Duration,
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {} executions in {:.1} s, corpus {} ({} distinct outcomes), slowest {:.1} ms, {} crashes, {} hangs",
            self.target,
            self.executions,
            self.elapsed.as_secs_f64(),
            self.corpus,
            self.outcomes,
            self.slowest.as_secs_f64() * 1e3,
            self.crashes.len(),
            self.hangs.len()
        )?;
        for c in self.crashes.iter().chain(&self.hangs) {
            write!(
                f,
                "\n  {}: {} (input: {})",
                c.kind,
                c.message,
                c.saved.as_ref().map(|p| p.display().to_string()).unwrap_or("-".into())
            )?;
        }
        Ok(())
    }
}

pub struct Config {
    pub executions: u64,
    pub seed: u64,
    pub hang: Duration,
    /// Where crashing and hanging inputs are written (None: not saved).
    pub out: Option<PathBuf>,
    /// Stop after this many distinct findings.
    pub max_findings: usize,
}

thread_local! {
    /// Set while an execution runs: its panics are reported by the fuzzer, not printed.
    static IN_EXECUTION: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Silence the default panic message inside executions (the fuzzer reports those itself); a
/// panic of the fuzzer itself is still printed.
pub fn quiet_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !IN_EXECUTION.with(|f| f.get()) {
            default(info);
        }
    }));
}

fn panic_text(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".into())
}

fn save(out: &Option<PathBuf>, target: &str, kind: &str, n: usize, input: &[u8]) -> Option<PathBuf> {
    let dir = out.as_ref()?;
    std::fs::create_dir_all(dir).ok()?;
    let path = dir.join(format!("{target}-{kind}-{n}.bin"));
    std::fs::write(&path, input).ok()?;
    Some(path)
}

pub fn run(target: Target, cfg: &Config) -> Report {
    let start = Instant::now();
    let mut rng = Rng::new(cfg.seed ^ target.name().len() as u64);
    let mut corpus: Vec<Vec<u8>> = target.seeds();
    assert!(!corpus.is_empty(), "{}: no seeds", target.name());
    let mut seen: HashSet<String> = HashSet::new();
    let mut crash_kinds: HashSet<String> = HashSet::new();
    let (mut crashes, mut hangs) = (Vec::new(), Vec::new());
    let mut slowest = Duration::ZERO;
    let mut executions = 0;
    // The seeds run unmutated first.
    let mut queue: Vec<Vec<u8>> = corpus.clone();
    while executions < cfg.executions {
        let input = match queue.pop() {
            Some(i) => i,
            None => {
                let base = &corpus[rng.below(corpus.len())];
                let other = &corpus[rng.below(corpus.len())];
                target.mutate(base, other, &mut rng)
            }
        };
        let t = Instant::now();
        IN_EXECUTION.with(|f| f.set(true));
        let result = catch_unwind(AssertUnwindSafe(|| target.execute(&input, &mut Rng::new(executions))));
        IN_EXECUTION.with(|f| f.set(false));
        let verdict = match result {
            Ok(v) => v,
            Err(p) => Verdict::Crash(panic_text(p)),
        };
        let took = t.elapsed();
        executions += 1;
        slowest = slowest.max(took);
        match verdict {
            Verdict::Crash(msg) => {
                // One saved input per distinct panic message (line numbers included).
                if crash_kinds.insert(msg.clone()) {
                    let saved = save(&cfg.out, target.name(), "crash", crashes.len(), &input);
                    crashes.push(Finding { kind: "crash", message: msg, saved });
                }
            }
            Verdict::Clean(shape) => {
                if took > cfg.hang {
                    let saved = save(&cfg.out, target.name(), "hang", hangs.len(), &input);
                    hangs.push(Finding {
                        kind: "hang",
                        message: format!("{:.0} ms ({shape})", took.as_secs_f64() * 1e3),
                        saved,
                    });
                } else if seen.insert(shape) && input.len() <= target.max_len() && corpus.len() < 20_000 {
                    corpus.push(input);
                }
            }
        }
        if crashes.len() + hangs.len() >= cfg.max_findings {
            break;
        }
    }
    Report {
        target: target.name(),
        executions,
        corpus: corpus.len(),
        outcomes: seen.len(),
        crashes,
        hangs,
        slowest,
        elapsed: start.elapsed(),
    }
}

pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}
