//! Ownership: who was handed which pointer, from which stack, with which size. Every entry
//! point of the C API that allocates or frees (rmmAlloc, rmmResourceAllocate, device buffers,
//! the PyTorch and CuPy entry points, realloc, and through them the preload library) goes
//! through `records`; the per-device registry says which stack `rmmAlloc` uses.

pub mod per_device;
pub mod records;
pub mod stack;

pub use records::{Expected, Found, Holder};
pub use stack::{Stack, StackRef};
