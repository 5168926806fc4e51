//! One record per candidate region, carried through the whole pass: the region, the boundary
//! order its selector fixes, the verdict on it, and the op that replaces it once accepted.

use super::pattern::PortOrder;
use super::{Boundary, Region};

pub struct Candidate {
    pub region: Region,
    /// The boundary order a pattern fixes (its impl's signature); None: inputs in first-use
    /// order, outputs in node order.
    pub order: Option<PortOrder>,
    pub verdict: Verdict,
    /// Check nodes export left untagged that it absorbed: assertions and what only they read
    /// (`regions::asserts`).
    pub absorbed: Vec<usize>,
    /// Step 2's decision on a valid region: the op that replaces it, or why its signature does
    /// not fit (the boundary stays, for the report).
    pub decision: Option<Result<String, String>>,
}

pub enum Verdict {
    /// Chosen, not validated yet.
    Pending,
    /// Valid, with its boundary.
    Valid(Boundary),
    /// Refused, with the reason the report gives.
    Refused(String),
}

impl Candidate {
    pub fn new(region: Region) -> Candidate {
        Candidate { region, order: None, verdict: Verdict::Pending, absorbed: Vec::new(), decision: None }
    }

    pub fn boundary(&self) -> Option<&Boundary> {
        match &self.verdict {
            Verdict::Valid(b) => Some(b),
            _ => None,
        }
    }

    /// Why it was refused, by validation or by step 2's decision.
    pub fn reason(&self) -> Option<&str> {
        match (&self.verdict, &self.decision) {
            (Verdict::Refused(why), _) | (_, Some(Err(why))) => Some(why),
            _ => None,
        }
    }

    /// The op that replaces it, once step 2 accepted it.
    pub fn op(&self) -> Option<&str> {
        match &self.decision {
            Some(Ok(op)) => Some(op),
            _ => None,
        }
    }

    pub fn refuse(&mut self, why: String) {
        self.verdict = Verdict::Refused(why);
    }
}
