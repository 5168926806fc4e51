//! tta's core: load an exported PyTorch graph, find and validate the regions to replace with
//! custom kernels, and outline each into one plugin node. No Python here; `python.rs` (feature
//! `python`) only converts between JSON strings and Python objects.

pub mod error;
pub mod expr;
pub mod graph;
pub mod lowering;
pub mod par;
pub mod pass;
pub mod ptx;
pub mod regions;

#[cfg(feature = "python")]
mod python;

// Only in the extension module: the Rust-only library leaves the allocator to its user.
#[cfg(feature = "python")]
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub use error::{Error, ErrorKind, Result};
