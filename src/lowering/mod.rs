//! From validated regions to a rewritten graph: signatures, op names, outlining, ordering,
//! the report, and the explain picture (DOT).

pub mod dot;
pub mod naming;
pub mod order;
pub mod outline;
pub mod report;
pub mod signature;

pub use order::Move;
pub use outline::Edit;
pub use report::{RegionReport, Status};
pub use signature::{ImplDecl, MetaOut};
