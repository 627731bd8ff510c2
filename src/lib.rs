//! rmm-rs: the RAPIDS Memory Manager in Rust, for C, C++, Fortran and CUDA through a C ABI.
//!
//! Layers, top to bottom: `ffi` (the C boundary), `legacy` (rmmInitialize/rmmAlloc/rmmFree),
//! `ownership` (every pointer handed out, and each device's current stack), `mr` (resources),
//! `platform` (the CUDA driver or simulated devices).

#![deny(unsafe_op_in_unsafe_fn)]

pub mod alloc_conf;
pub mod device_buffer;
pub mod error;
pub mod ffi;
pub mod legacy;
pub mod legacy_log;
mod lifecycle;
pub mod mr;
pub mod ownership;
pub mod platform;
pub mod replay;

pub use error::{Error, ErrorKind, Result};
