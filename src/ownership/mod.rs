//! Ownership: who was handed which pointer, from which stack, with which size. Every entry
//! point of the C API that allocates or frees (rmmAlloc, rmmResourceAllocate, device buffers,
//! the PyTorch and CuPy entry points, realloc, and through them the preload library) goes
//! through `records`; the per-device registry says which stack `rmmAlloc` uses. Built on
//! them: legacy RMM's semantics (`legacy`, `legacy_log`), `cudaMalloc`/`cudaFree`'s
//! (`cuda_free`), device buffers and the `RMM_ALLOC_CONF` stacks (`config`).

pub mod config;
pub mod cuda_free;
pub mod device_buffer;
pub mod legacy;
pub mod legacy_log;
pub mod per_device;
pub mod records;
pub mod spec;
pub mod stack;

pub use records::{Expected, Found, Holder, StackRef};
pub use stack::Stack;
