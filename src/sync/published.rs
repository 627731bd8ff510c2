//! A value that is read on every allocation and replaced rarely (a binning resource's bins).
//! Readers take no reference count and no lock: a read is one acquire load. The price is
//! that replaced values are kept until the `Published` itself is dropped, which suits values
//! replaced a handful of times in a resource's life.

use parking_lot::Mutex;
use std::sync::atomic::{AtomicPtr, Ordering};

/// A value read with one acquire load and replaced with `update` (see the module's comment).
pub struct Published<T> {
    current: AtomicPtr<T>,
    /// Every value ever published (from `Box::into_raw`), the current one last: readers may
    /// still hold any of them.
    all: Mutex<Vec<*mut T>>,
}

impl<T> Published<T> {
    /// Publishes `value` as the first value.
    pub fn new(value: T) -> Self {
        let first = Box::into_raw(Box::new(value));
        Published { current: AtomicPtr::new(first), all: Mutex::new(vec![first]) }
    }

    /// The value published last (when another thread updates at the same time, either the
    /// one before or the new one).
    #[inline]
    pub fn get(&self) -> &T {
        // SAFETY: `current` always points into a box in `all`, which is only emptied by
        // dropping `self`; the returned reference cannot outlive `&self`.
        unsafe { &*self.current.load(Ordering::Acquire) }
    }

    /// Publishes `make(current value)` as the new value. Writers are serialized, so none
    /// loses another's update.
    pub fn update<R>(&self, make: impl FnOnce(&T) -> (T, R)) -> R {
        let mut all = self.all.lock();
        let (next, result) = make(self.get());
        let next = Box::into_raw(Box::new(next));
        self.current.store(next, Ordering::Release);
        all.push(next);
        result
    }
}

impl<T> Drop for Published<T> {
    fn drop(&mut self) {
        for value in self.all.get_mut().drain(..) {
            // SAFETY: each came from Box::into_raw once, and `&mut self` means no reader is left.
            drop(unsafe { Box::from_raw(value) });
        }
    }
}

// SAFETY: readers on any thread get `&T` (needs T: Sync); values are sent to the thread that
// drops `Published` (needs T: Send).
unsafe impl<T: Send + Sync> Sync for Published<T> {}
unsafe impl<T: Send> Send for Published<T> {}

#[cfg(test)]
mod tests {
    use super::Published;

    #[test]
    fn readers_see_each_update_and_old_values_stay_valid() {
        let published = Published::new(vec![1]);
        let first = published.get();
        let grown = published.update(|old| {
            let mut next = old.clone();
            next.push(2);
            let len = next.len();
            (next, len)
        });
        assert_eq!(grown, 2);
        assert_eq!(published.get(), &vec![1, 2]);
        assert_eq!(first, &vec![1]);
    }

    #[test]
    fn concurrent_readers_and_writers() {
        let published = Published::new(0u64);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                for _ in 0..1000 {
                    published.update(|old| (old + 1, ()));
                }
            });
            for _ in 0..2 {
                scope.spawn(|| {
                    let mut last = 0;
                    for _ in 0..10_000 {
                        let now = *published.get();
                        assert!(now >= last, "values only grow: {now} after {last}");
                        last = now;
                    }
                });
            }
        });
        assert_eq!(*published.get(), 1000);
    }
}
