//! A value per thread, each on cache lines of its own.
//!
//! `thread_local::ThreadLocal` lays the values of threads with neighbouring ids side by side,
//! several to a cache line: a thread that writes its own value (a `RefCell`'s borrow flag, on
//! every allocation) then invalidates its neighbours' lines, and threads that share nothing
//! still slow each other down. Each value here is aligned to two cache lines (the adjacent-line
//! prefetcher pulls pairs).

/// A value per thread (see the module comment).
pub struct PerThread<T: Send>(thread_local::ThreadLocal<Padded<T>>);

#[repr(align(128))]
struct Padded<T>(T);

impl<T: Send> Default for PerThread<T> {
    fn default() -> Self {
        PerThread(thread_local::ThreadLocal::new())
    }
}

impl<T: Send> PerThread<T> {
    /// The calling thread's value, if it has one.
    #[inline(always)]
    pub fn get(&self) -> Option<&T> {
        self.0.get().map(|padded| &padded.0)
    }

    /// The calling thread's value, made by `make` if it has none.
    #[inline]
    pub fn get_or_try<E>(&self, make: impl FnOnce() -> Result<T, E>) -> Result<&T, E> {
        self.0.get_or_try(|| make().map(Padded)).map(|padded| &padded.0)
    }
}

impl<T: Send + Default> PerThread<T> {
    /// The calling thread's value, a default one if it had none.
    #[inline]
    pub fn get_or_default(&self) -> &T {
        &self.0.get_or(|| Padded(T::default())).0
    }
}
