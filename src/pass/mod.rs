//! The whole pass, as a pipeline of steps with a verifier on each side:
//!
//! 1. `analyze`: verify the input graph, choose the candidate regions (annotations, module and
//!    pattern selectors), validate them in parallel and compute their boundaries. Python reads
//!    `Analysis::summary` to call each `meta_impl` on the region's inputs.
//! 2. `Analysis::outline`: check each signature against its impl and meta outputs, name the ops,
//!    outline the accepted regions, verify the rewritten graph, and report on every region.
//! 3. `Outcome::check_delta` / `Outcome::check_matches`: the host's edited graph (Python replays
//!    the edits on its fx graph) must equal the pass's graph; a rewrite is done only after it.

mod analyze;
mod check;
mod outline;

pub use analyze::{
    analyze, analyze_json, analyze_nodes, analyze_parts, Analysis, Impls, MetaResult, RegionMembers, RegionSummary,
    Timings,
};
pub use check::Delta;
pub use outline::Outcome;
