//! Per-thread shards of an adaptor's figures, so that threads sharing one adaptor do not share
//! cache lines on every allocation. Each thread keeps its shards of the last few adaptors it
//! used in a thread-local list; the adaptor keeps every shard, so readers can add them up.
//! When a thread ends, or drops a shard from its list, the shard gives back what it holds to
//! the adaptor's shared part (`Shard::retire`).

use parking_lot::Mutex;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::LocalKey;

pub trait Shard: Default + Send + Sync + 'static {
    /// What the adaptor's shards have in common.
    type Shared: Send + Sync + 'static;
    /// Gives back what the shard holds to `shared`; runs on the shard's thread.
    fn retire(&self, shared: &Self::Shared);
}

/// A thread's hold on its shard of one adaptor.
pub struct Held<S: Shard> {
    adaptor: u64,
    shard: Arc<S>,
    shared: Arc<S::Shared>,
}

impl<S: Shard> Drop for Held<S> {
    fn drop(&mut self) {
        self.shard.retire(&self.shared);
    }
}

/// The thread-local list of one kind of shard (declare with `thread_local!`).
pub type Local<S> = RefCell<Vec<Held<S>>>;

/// How many adaptors' shards a thread keeps at hand; a thread that comes back to an adaptor it
/// dropped from its list gets a new shard (the old one still counts).
const SHARDS_PER_THREAD: usize = 8;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// An adaptor's shards and their shared part.
pub struct Shards<S: Shard> {
    id: u64,
    pub shared: Arc<S::Shared>,
    all: Mutex<Vec<Arc<S>>>,
    local: &'static LocalKey<Local<S>>,
}

impl<S: Shard> Shards<S> {
    pub fn new(shared: S::Shared, local: &'static LocalKey<Local<S>>) -> Self {
        Shards { id: NEXT_ID.fetch_add(1, Ordering::Relaxed), shared: Arc::new(shared), all: Mutex::new(Vec::new()), local }
    }

    /// What tells this adaptor's shards from every other adaptor's, for the life of the process.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Runs `f` on this thread's shard; None where the thread's thread-locals are gone (a call
    /// from a thread-local destructor) or in use (a call from inside `f`).
    #[inline]
    pub fn with<R>(&self, f: impl FnOnce(&S) -> R) -> Option<R> {
        self.with_shard(|shard| f(shard))
    }

    /// `with`, given the shard's counted reference (to keep it at hand).
    #[inline]
    pub fn with_shard<R>(&self, f: impl FnOnce(&Arc<S>) -> R) -> Option<R> {
        self.local
            .try_with(|held| {
                let mut held = held.try_borrow_mut().ok()?;
                let position = match held.iter().position(|h| h.adaptor == self.id) {
                    Some(position) => position,
                    None => {
                        let shard = Arc::new(S::default());
                        self.all.lock().push(shard.clone());
                        if held.len() == SHARDS_PER_THREAD {
                            held.remove(0);
                        }
                        held.push(Held { adaptor: self.id, shard, shared: self.shared.clone() });
                        held.len() - 1
                    }
                };
                Some(f(&held[position].shard))
            })
            .ok()
            .flatten()
    }

    /// Runs `f` on every shard (to add them up, or to take from them).
    pub fn for_each(&self, mut f: impl FnMut(&S)) {
        for shard in self.all.lock().iter() {
            f(shard);
        }
    }
}
