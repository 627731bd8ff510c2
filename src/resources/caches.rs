//! What the suballocators of each device hold without using it, so that an allocation the
//! device refuses can have all of it released and retry once (as cudaMallocAsync trims its
//! pools and PyTorch's caching allocator empties its cache before reporting out of memory).
//! Without this, memory one resource keeps free (a binning resource's bins, a fixed-size
//! resource's chunks, a pool's chunks) stays out of reach of every other resource of the
//! device until someone calls `rmmResourceRelease` on the right handle. The same registry
//! answers `rmmDeviceRelease`, which gives back everything they keep free on demand.

use crate::error::Result;
use std::sync::{Mutex, Weak};

/// A resource that keeps memory it does not use, in the order of the streams that freed it.
pub trait Cache: Send + Sync {
    /// Under pressure (the device refused an allocation): returns what it keeps free to its
    /// upstream, beyond what it keeps for its whole life; the bytes released. It passes over
    /// work it would have to wait for (another thread's growth may be the refused one).
    fn release_cached(&self) -> Result<usize>;
    /// On demand (`rmmDeviceRelease`, `rmmResourceRelease`): returns everything it keeps free;
    /// the bytes released (0 where the upstream does not say).
    fn release_all_free(&self) -> Result<usize>;
    /// The stream with `identity` is going away (see `super::streams`).
    fn retire_stream(&self, _identity: u64, _alive: Option<crate::platform::Stream>) -> Result<()> {
        Ok(())
    }
    /// Whether it releases before every resource: what it holds goes back into them (frees
    /// that wait for the device), for them to release in turn.
    fn goes_first(&self) -> bool {
        false
    }
    /// What it holds from the device now and how much of that is free: (what it is, held,
    /// free), for an out-of-memory message that says who holds the device's memory.
    fn holding(&self) -> Option<(String, usize, usize)> {
        None
    }
}

/// Who holds memory of `device` through rmm-rs, the most first: "pool 3.0 GiB (1.0 GiB
/// free), ..." ("" when nothing does).
pub fn holders(device: i32) -> String {
    let mut held: Vec<(String, usize, usize)> = caches_of(device).iter().filter_map(|cache| cache.holding()).filter(|h| h.1 > 0).collect();
    held.sort_by_key(|entry| std::cmp::Reverse(entry.1));
    let shown: Vec<String> = held
        .iter()
        .take(6)
        .map(|(what, bytes, free)| {
            format!("{what} {} ({} free)", crate::units::approximate(*bytes as i64), crate::units::approximate(*free as i64))
        })
        .collect();
    match held.len().saturating_sub(shown.len()) {
        0 => shown.join(", "),
        more => format!("{} and {more} more", shown.join(", ")),
    }
}

/// (device, cache); entries whose resource is gone are dropped as new ones come.
static CACHES: Mutex<Vec<(i32, Weak<dyn Cache>)>> = Mutex::new(Vec::new());

/// Lists `cache` among the resources of `device` that `retry_after_releasing` asks to give
/// back what they keep; the list holds it weakly, so a resource that goes is dropped from it.
pub fn register(device: i32, cache: Weak<dyn Cache>) {
    let mut caches = CACHES.lock().unwrap_or_else(|e| e.into_inner());
    caches.retain(|(_, cache)| cache.strong_count() > 0);
    caches.push((device, cache));
}

/// `attempt`, and when the device refuses it for want of memory, `attempt` once more after
/// every resource of `device` released what it keeps free (if any released anything).
pub fn retry_after_releasing<T>(device: i32, attempt: impl Fn() -> Result<T>) -> Result<T> {
    match attempt() {
        Err(e) if e.is_out_of_memory() && release_all(device) > 0 => attempt(),
        done => done,
    }
}

/// Tells every resource, of every device, that the stream with `identity` is going away:
/// `alive` names it while it still lives. The first failure is returned, after all were told.
pub fn retire_stream(identity: u64, alive: Option<crate::platform::Stream>) -> Result<()> {
    let live: Vec<_> = {
        let caches = CACHES.lock().unwrap_or_else(|e| e.into_inner());
        caches.iter().filter_map(|(_, cache)| cache.upgrade()).collect()
    };
    let mut first = Ok(());
    for cache in &live {
        let told = cache.retire_stream(identity, alive);
        if first.is_ok() {
            first = told;
        }
    }
    first
}

/// Releases what every resource of `device` keeps free under pressure; the bytes released. A
/// resource that fails to release is passed over.
pub fn release_all(device: i32) -> usize {
    caches_of(device).iter().map(|cache| cache.release_cached().unwrap_or(0)).sum()
}

/// Releases everything every resource of `device` keeps free, on demand, and the host copies
/// kept for its next keep-mode sleeps; the device bytes released, or the first failure once
/// every resource was asked.
pub fn release_device(device: i32) -> Result<usize> {
    super::sleep::release_spare_host_copies(device);
    let mut first = Ok(0);
    for cache in caches_of(device) {
        match (cache.release_all_free(), &mut first) {
            (Ok(bytes), Ok(total)) => *total += bytes,
            (Err(e), Ok(_)) => first = Err(e),
            (_, Err(_)) => {}
        }
    }
    first
}

/// The live resources of `device` in the order they release: caches that go first
/// (`Cache::goes_first`), then resources above others (they were made later), so what they hand
/// back reaches the ones below before those release in turn. Held outside the registry's lock:
/// releasing frees into other resources, and the last reference to a resource destroyed
/// meanwhile may be dropped by the caller.
fn caches_of(device: i32) -> Vec<std::sync::Arc<dyn Cache>> {
    let mut live: Vec<_> = {
        let caches = CACHES.lock().unwrap_or_else(|e| e.into_inner());
        caches.iter().rev().filter(|(of, _)| *of == device).filter_map(|(_, cache)| cache.upgrade()).collect()
    };
    live.sort_by_key(|cache| !cache.goes_first());
    live
}
