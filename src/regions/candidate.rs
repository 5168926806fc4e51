//! One record per candidate region, carried through the whole pass: the region, the boundary
//! order its selector fixes, and the verdict on it.

use super::pattern::PortOrder;
use super::{Boundary, Region};

pub struct Candidate {
    pub region: Region,
    /// The boundary order a pattern fixes (its impl's signature); None: inputs in first-use
    /// order, outputs in node order.
    pub order: Option<PortOrder>,
    pub verdict: Verdict,
    /// Assertion nodes export left untagged that it absorbed (`regions::asserts`).
    pub absorbed: Vec<usize>,
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
        Candidate { region, order: None, verdict: Verdict::Pending, absorbed: Vec::new() }
    }

    pub fn boundary(&self) -> Option<&Boundary> {
        match &self.verdict {
            Verdict::Valid(b) => Some(b),
            _ => None,
        }
    }

    pub fn reason(&self) -> Option<&str> {
        match &self.verdict {
            Verdict::Refused(why) => Some(why),
            _ => None,
        }
    }

    pub fn refuse(&mut self, why: String) {
        self.verdict = Verdict::Refused(why);
    }
}
