//! Suballocator bookkeeping: plain safe Rust over integer addresses, with invariant checks
//! that tests call.

pub mod fixed_blocks;
pub mod stream_ordered;
pub mod tlsf;
