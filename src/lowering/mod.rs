//! From validated regions to a rewritten graph: signatures, op names, outlining, ordering,
//! and the report. Also the shape-expression algebra and PTX text work the backends need.

pub mod expr;
pub mod naming;
pub mod order;
pub mod outline;
pub mod ptx;
pub mod report;
pub mod signature;

pub use outline::{Edit, Move};
pub use report::{RegionReport, Status};
pub use signature::{ImplDecl, MetaOut};
