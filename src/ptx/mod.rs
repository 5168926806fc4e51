//! PTX text work for TensorRT's AOT "Quickly Deployable Plugins". TensorRT launches an AOT
//! plugin's kernel as `kernel(input pointers..., int32 extras..., output pointers...)`, from PTX
//! the driver JIT-compiles on the target machine. Kernels from Triton, cuTile and CuTeDSL come
//! in other orders, with extra parameters, or with an ISA too new for that driver; this module
//! reads their PTX and adapts it, surgically, or says clearly why it cannot.
//!
//! - [`parse`]: header and `.entry` declarations, with byte spans.
//! - [`permute_params`], [`drop_trailing_scratch`]: reorder or drop parameter declarations.
//! - [`check_version`] against [`max_isa_for_driver`]; [`relabel_version`] only on request.
//! - [`to_qdp_abi`]: all of it for one kernel; [`qdp_order`], [`QdpSlots::of`] and
//!   [`check_cubin_slots`]: the launch's layout rules.
//! - [`debug_ptx_from_cubin`]: cuTile's PTX, which only exists inside its CUBIN;
//!   [`cubin_params`]: the parameter layout ptxas recorded in a CUBIN.
//! - [`stored_params`]: the parameters a kernel may write through.
//! - [`instruction_forms`]: what decides whether an assembler accepts the module for a target.

mod elf;
mod forms;
mod isa;
mod lex;
mod parse;
mod qdp;
mod rewrite;
mod span;
mod stores;

pub use elf::{cubin_params, debug_ptx_from_cubin, KernelParam};
pub use forms::instruction_forms;
pub use isa::{max_isa_for_driver, min_driver_for_isa, CudaVersion, IsaVersion};
pub use parse::{mentions, parse, Entry, Module, Param, PtrQual};
pub use qdp::{
    check_cubin_slots, check_roles, check_slots, qdp_order, to_qdp_abi, ParamRole, QdpPtx, QdpSlots, QdpSpec, Role,
};
pub use rewrite::{check_version, drop_arch_suffix, drop_trailing_scratch, permute_params, relabel_version};
pub use span::Span;
pub use stores::stored_params;
