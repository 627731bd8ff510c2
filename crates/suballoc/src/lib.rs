//! Suballocator bookkeeping for memory the host cannot write into (GPU memory): free-block
//! indexes over integer address ranges, with all metadata kept out of band. Plain safe Rust
//! with no globals and no dependencies, so that property tests and fuzz targets drive each
//! index directly; every index has `check_invariants`, which tests call after each operation.
//!
//! - `tlsf`: two-level segregated fit over chunks of any size, O(1) allocate and free,
//!   coalescing within a chunk, never across chunks.
//! - `fixed_blocks`: blocks of one size cut from chunks, O(1) allocate and free by arithmetic.
//! - `address_map`: a hash map keyed by addresses, for the lookups every free makes.
//!
//! `model` checks each index against a shadow model, for the property tests and the fuzz
//! targets alike.
//!
//! Both indexes remember the bytes each block was handed out for and refuse a free that names
//! another size, a block that is not in use, or an address inside a block.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod address_map;
pub mod fixed_blocks;
pub mod model;
pub mod tlsf;
