//! The hot path's concurrency primitives: what every allocation and free goes through besides
//! the memory itself, built here once so that the layers above share one implementation of
//! each (and one place for the `unsafe` they need).
//!
//! - `barrier`: a memory barrier on every processor running the process (membarrier), the
//!   rare side of an asymmetric handshake.
//! - `bias`: ownership of shared state by one thread, at no atomic read-modify-write for it.
//! - `biased_lock`: a lock whose usual thread enters with plain loads and stores.
//! - `published`: a value read with one acquire load and replaced rarely.
//! - `shared`: an `Arc` of a trait object with its value's address worked out once.
//! - `clock`: the wall clock for log lines, and a counter that orders events across threads.
//! - `call_site`: the file and line of the C call in progress, for the adaptors below it.
//! - `per_thread`: a value per thread, on cache lines no other thread's value shares.
//! - `thread_cache`: threads' copies of published `Arc`s, read with plain loads and taken back
//!   from idle threads when a value is replaced.
//!
//! This is the bottom layer, beside `platform`: it uses no other module of the crate (only
//! `std`, `libc`, `parking_lot` and `thread_local`), and every layer, `platform` included, may use it. Nothing
//! here knows about devices or streams.

pub mod barrier;
pub mod bias;
pub mod biased_lock;
pub mod call_site;
pub mod clock;
pub mod per_thread;
pub mod published;
pub mod shared;
pub mod thread_cache;
