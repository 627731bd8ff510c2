//! An `Arc` of a trait object that is reached on every allocation. Reaching the value behind
//! an `Arc<dyn Trait>` means reading the vtable's alignment to find where the value starts
//! in the `Arc`'s allocation; `Shared` works that out once and keeps the plain pointer beside
//! the `Arc` that keeps it alive.

use std::sync::Arc;

/// An `Arc<T>` and the address of its value, worked out once (see the module's comment).
pub struct Shared<T: ?Sized> {
    value: *const T,
    owner: Arc<T>,
}

// SAFETY: `Shared` gives out only `&T` (as `Arc` does), so it is Send/Sync when `Arc<T>` is.
unsafe impl<T: ?Sized + Send + Sync> Send for Shared<T> {}
unsafe impl<T: ?Sized + Send + Sync> Sync for Shared<T> {}

impl<T: ?Sized> Shared<T> {
    /// Keeps `owner` and the address of its value.
    pub fn new(owner: Arc<T>) -> Self {
        Shared { value: Arc::as_ptr(&owner), owner }
    }

    /// The `Arc` itself, for callers that keep a reference of their own.
    pub fn arc(&self) -> &Arc<T> {
        &self.owner
    }
}

impl<T: ?Sized> std::ops::Deref for Shared<T> {
    type Target = T;
    #[inline(always)]
    fn deref(&self) -> &T {
        // SAFETY: `value` points into the allocation `owner` keeps alive for as long as `self`.
        unsafe { &*self.value }
    }
}
