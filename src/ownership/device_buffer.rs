//! A stream-ordered, untyped device allocation that knows its size, as RMM's
//! `rmm::device_buffer` / `rmm.DeviceBuffer`: created empty, with a size or from host bytes,
//! resized (growing copies into a new allocation; shrinking keeps the memory until
//! `shrink_to_fit`), deep-copied, and freed in the order of the stream it was last used on.
//! Its memory is recorded as the buffer's own: only the buffer frees it.

use crate::error::{Error, Result};
use crate::ownership::{records, Expected, Holder, StackRef};
use crate::platform::{backend, streams, Stream};

/// A device allocation of a known size, owned by the buffer and freed in the order of its
/// stream when dropped (see the module comment).
pub struct DeviceBuffer {
    ptr: usize,
    size: usize,
    capacity: usize,
    /// The stream of the last operation: the buffer is freed in its order.
    stream: Stream,
    stack: StackRef,
}

impl DeviceBuffer {
    /// `size` bytes from `stack`, usable in the order of `stream` (uninitialized).
    pub fn new(size: usize, stream: Stream, stack: StackRef) -> Result<Self> {
        // Copies into it go in the order of `stream` (`platform::streams`).
        streams::check_usable(stream)?;
        let ptr = records::allocate(stack.stack(), size, stream, Holder::Buffer)?;
        Ok(DeviceBuffer { ptr, size, capacity: size, stream, stack })
    }

    /// A buffer holding a copy of `bytes`; the host bytes may be reused when this returns.
    pub fn from_host(bytes: &[u8], stream: Stream, stack: StackRef) -> Result<Self> {
        let buffer = Self::new(bytes.len(), stream, stack)?;
        if !bytes.is_empty() {
            let platform = backend()?;
            platform.copy_async(buffer.device(), buffer.ptr, bytes.as_ptr() as usize, bytes.len(), stream)?;
            platform.stream_synchronize(stream)?;
        }
        Ok(buffer)
    }

    /// The device address of the buffer's first byte; valid in the order of `stream()`.
    pub fn data(&self) -> usize {
        self.ptr
    }

    /// Bytes of the buffer's contents.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Bytes allocated, at least `size()`: shrinking keeps the allocation until `shrink_to_fit`.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The stream of the last operation, in whose order the buffer is freed.
    pub fn stream(&self) -> Stream {
        self.stream
    }

    /// The device the buffer's memory is on (its stack's).
    pub fn device(&self) -> i32 {
        self.stack.device()
    }

    /// The stack the buffer's memory came from and goes back to.
    pub fn stack(&self) -> &StackRef {
        &self.stack
    }

    /// Makes `stream` the buffer's stream (for later operations and the final free).
    pub fn set_stream(&mut self, stream: Stream) {
        self.stream = stream;
    }

    /// Copies the buffer's bytes into `out` (which must hold at least `size()` bytes) and waits
    /// for the copy.
    pub fn copy_to_host(&self, out: &mut [u8], stream: Stream) -> Result<()> {
        if out.len() < self.size {
            return Err(Error::invalid(format!("the host buffer holds {} bytes; the device buffer has {}", out.len(), self.size)));
        }
        if self.size > 0 {
            streams::check_usable(stream)?;
            let platform = backend()?;
            platform.copy_async(self.device(), out.as_mut_ptr() as usize, self.ptr, self.size, stream)?;
            platform.stream_synchronize(stream)?;
        }
        Ok(())
    }

    /// Moves the contents to a new allocation of `capacity` bytes (the first `size` bytes
    /// kept), in the order of `stream`.
    fn reallocate(&mut self, capacity: usize, stream: Stream) -> Result<()> {
        streams::check_usable(stream)?;
        let ptr = records::allocate(self.stack.stack(), capacity, stream, Holder::Buffer)?;
        let kept = self.size.min(capacity);
        if kept > 0 {
            if let Err(e) = backend().and_then(|p| p.copy_async(self.device(), ptr, self.ptr, kept, stream)) {
                if let Err(undo) = records::free(ptr, stream, self.expected(capacity)) {
                    log::warn!("device buffer: freeing {ptr:#x} after a failed copy: {undo}");
                }
                return Err(e);
            }
        }
        self.release(stream)?;
        self.ptr = ptr;
        self.capacity = capacity;
        self.stream = stream;
        Ok(())
    }

    /// Sets the size to `size`: within the capacity nothing moves; beyond it, the contents move
    /// to a new allocation of exactly `size` bytes. New bytes are uninitialized.
    pub fn resize(&mut self, size: usize, stream: Stream) -> Result<()> {
        if size > self.capacity {
            self.reallocate(size, stream)?;
        }
        self.size = size;
        self.stream = stream;
        Ok(())
    }

    /// Gives back the capacity beyond the size (a new allocation of exactly `size` bytes).
    pub fn shrink_to_fit(&mut self, stream: Stream) -> Result<()> {
        if self.capacity > self.size {
            self.reallocate(self.size, stream)?;
        }
        self.stream = stream;
        Ok(())
    }

    /// A new buffer with the same contents, from `resource` (or this buffer's).
    pub fn deep_copy(&self, stream: Stream, stack: Option<StackRef>) -> Result<DeviceBuffer> {
        let copy = Self::new(self.size, stream, stack.unwrap_or_else(|| self.stack.clone()))?;
        if self.size > 0 {
            backend()?.copy_async(self.device(), copy.ptr, self.ptr, self.size, stream)?;
        }
        Ok(copy)
    }

    /// What the free of a block of `capacity` bytes of this buffer names.
    fn expected(&self, capacity: usize) -> Expected<'_> {
        Expected { stack: Some(&self.stack), size: Some(capacity), holder: Holder::Buffer }
    }

    fn release(&mut self, stream: Stream) -> Result<()> {
        records::free(self.ptr, stream, self.expected(self.capacity))?;
        self.ptr = 0;
        self.capacity = 0;
        Ok(())
    }

    /// Frees the memory in the order of the buffer's stream, leaving an empty buffer. On
    /// failure the buffer keeps its memory.
    pub fn free_memory(&mut self) -> Result<()> {
        let stream = self.stream;
        self.release(stream)?;
        self.size = 0;
        Ok(())
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        let stream = self.stream;
        if let Err(e) = self.release(stream) {
            log::warn!("device buffer at {:#x}: {e}", self.ptr);
        }
    }
}
