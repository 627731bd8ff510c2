//! rmm-rs: the RAPIDS Memory Manager in Rust, for C, C++, Fortran and CUDA through a C ABI.
//!
//! Layers, top to bottom: `ffi` (the C boundary), `legacy` (rmmInitialize/rmmAlloc/rmmFree),
//! `per_device` (each device's current resource), `allocations` (every live pointer), `mr`
//! (resources), `platform` (the CUDA driver or simulated devices).

#![deny(unsafe_op_in_unsafe_fn)]

mod address_map;
pub mod alloc_conf;
pub mod allocations;
pub mod device_buffer;
pub mod error;
pub mod ffi;
pub mod legacy;
pub mod legacy_log;
mod lifecycle;
pub mod mr;
pub mod per_device;
pub mod platform;
pub mod replay;

pub use error::{Error, ErrorKind, Result};
