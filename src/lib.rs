//! rmm-rs: the RAPIDS Memory Manager in Rust, for C, C++, Fortran and CUDA through a C ABI.
//!
//! The folders are the layers, top to bottom; each uses only the ones below it:
//! - `boundary`: the C ABI (every exported function), panic catching, handles, error codes,
//!   and the process-exit hook.
//! - `ownership`: the record of every pointer handed to a caller (`records`), the stacks
//!   callers allocate from, each device's current stack, and what the C API means on top of
//!   them: legacy RMM's `rmmInitialize`/`rmmAlloc`/`rmmFree`, device buffers, the legacy event
//!   log, `RMM_ALLOC_CONF`.
//! - `resources`: the memory resources and adaptors, and the stream-ordered core of the
//!   pool-like ones (over the `rmm-suballoc` crate's free-block indexes).
//! - `platform`: the CUDA driver or simulated devices (their streams and IPC handles), and the
//!   process they run in (its exit, forks, thread ids).
//! - `sync`: the hot path's concurrency primitives (biased ownership and locks, published
//!   values, shared pointers, the log clock, the call site of the C call in progress). It is
//!   the bottom layer: it uses no other module of the crate, and every layer above it,
//!   `platform` included, may use it.
//!
//! `error` (the error type and its codes), `units` (sizes as people read them) and
//! `log_format` (RMM's log CSV: the logging adaptor writes it, `replay` reads it) are leaves
//! beside the layers: they use no layer, and every layer may use them.
//!
//! `replay/` replays RMM logs against stacks the spec language (`ownership::spec`) builds, and
//! `replay::report` draws a timeline page from them; `bin/rmm-replay` and the C API
//! (`rmmTimelineReportWrite`) both use them.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod boundary;
pub mod error;
pub mod log_format;
pub mod ownership;
pub mod platform;
pub mod replay;
pub mod resources;
pub mod sync;
pub mod units;

pub use error::{Error, ErrorKind, Result};
