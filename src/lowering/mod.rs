//! From validated regions to a rewritten graph: signatures, op names, outlining, ordering,
//! and the report.

pub mod naming;
pub mod order;
pub mod outline;
pub mod report;
pub mod signature;

pub use order::Move;
pub use outline::Edit;
pub use report::{RegionReport, Status};
pub use signature::{ImplDecl, MetaOut};
