//! The stream-ordered machinery the pool-like resources share, over the free-block indexes of
//! the `rmm-suballoc` crate.

pub mod stream_ordered;
