//! Every live pointer handed out through the C API, with its size and owning resource:
//! `rmmFree` carries no size, frees may come from another device's thread, and double or
//! foreign frees must be refused. Sharded by address so threads rarely meet on one lock.

use crate::address_map::{address_hash, AddressMap};
use crate::error::{Error, ErrorKind, Result};
use crate::mr::suballoc::ranges;
use crate::mr::MemoryResource;
use crate::platform::Stream;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const SHARD_BITS: u32 = 7;
const SHARDS: usize = 1 << SHARD_BITS;

/// A live allocation. It holds a reference to its resource, so a resource whose handle was
/// destroyed stays alive until its last allocation is freed.
#[derive(Clone)]
pub struct Allocation {
    pub resource: Arc<dyn MemoryResource>,
    pub size: usize,
}

type Shard = AddressMap<Allocation>;

pub struct AllocationRegistry {
    shards: Box<[Mutex<Shard>]>,
    /// Live records in all shards, so callers can skip a lookup when there are none.
    live: AtomicUsize,
}

pub fn same_resource(a: &Arc<dyn MemoryResource>, b: &Arc<dyn MemoryResource>) -> bool {
    Arc::as_ptr(a) as *const () == Arc::as_ptr(b) as *const ()
}

impl Default for AllocationRegistry {
    fn default() -> Self {
        AllocationRegistry { shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(), live: AtomicUsize::new(0) }
    }
}

impl AllocationRegistry {
    fn shard(&self, ptr: usize) -> &Mutex<Shard> {
        &self.shards[(address_hash(ptr) >> (64 - SHARD_BITS)) as usize]
    }

    /// Records a pointer a resource just returned. A pointer already live means the resource
    /// handed the same memory out twice: an internal error, reported rather than hidden.
    pub fn insert(&self, ptr: usize, allocation: Allocation) -> Result<()> {
        let mut shard = self.shard(ptr).lock();
        if let Some(existing) = shard.get(&ptr) {
            return Err(Error::Internal(format!(
                "{ptr:#x} was handed out by {} while still live from {}",
                allocation.resource.name(),
                existing.resource.name()
            )));
        }
        shard.insert(ptr, allocation);
        self.live.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Removes and returns the record of `ptr` if `accept` agrees; otherwise leaves it.
    pub fn remove_if(&self, ptr: usize, accept: impl FnOnce(&Allocation) -> Result<()>) -> Result<Allocation> {
        let mut shard = self.shard(ptr).lock();
        match shard.get(&ptr) {
            None => Err(Error::invalid(format!("{ptr:#x} is not a live rmm allocation (never allocated, or already freed)"))),
            Some(found) => {
                accept(found)?;
                self.live.fetch_sub(1, Ordering::Relaxed);
                Ok(shard.remove(&ptr).expect("present under the same lock"))
            }
        }
    }

    pub fn get(&self, ptr: usize) -> Option<Allocation> {
        self.shard(ptr).lock().get(&ptr).cloned()
    }

    pub fn contains(&self, ptr: usize) -> bool {
        self.live.load(Ordering::Relaxed) > 0 && self.shard(ptr).lock().contains_key(&ptr)
    }

    /// Number and total bytes of live allocations.
    pub fn totals(&self) -> (usize, usize) {
        self.shards.iter().fold((0, 0), |(count, bytes), shard| {
            let shard = shard.lock();
            (count + shard.len(), bytes + shard.values().map(|a| a.size).sum::<usize>())
        })
    }

    /// Live allocations of one resource, as (pointer, size), ordered by address.
    pub fn of_resource(&self, resource: &Arc<dyn MemoryResource>) -> Vec<(usize, usize)> {
        let mut found: Vec<(usize, usize)> = self
            .shards
            .iter()
            .flat_map(|shard| {
                shard.lock().iter().filter(|(_, a)| same_resource(&a.resource, resource)).map(|(p, a)| (*p, a.size)).collect::<Vec<_>>()
            })
            .collect();
        found.sort_unstable();
        found
    }
}

static REGISTRY: once_cell::sync::Lazy<AllocationRegistry> = once_cell::sync::Lazy::new(AllocationRegistry::default);

pub fn registry() -> &'static AllocationRegistry {
    &REGISTRY
}

/// Allocates `bytes` from `resource`, recording the pointer unless the resource tracks its
/// own blocks. Zero bytes give NULL (0).
pub fn allocate(resource: &Arc<dyn MemoryResource>, bytes: usize, stream: Stream) -> Result<usize> {
    if bytes == 0 {
        return Ok(0);
    }
    let ptr = resource.allocate(bytes, stream)?;
    if !resource.tracks_allocations() {
        registry().insert(ptr, Allocation { resource: resource.clone(), size: bytes })?;
    }
    Ok(ptr)
}

/// Frees `ptr`, of `bytes`, through `resource`, which must have allocated it.
pub fn free_through(resource: &Arc<dyn MemoryResource>, ptr: usize, bytes: usize, stream: Stream) -> Result<()> {
    if ptr == 0 {
        return Ok(());
    }
    if resource.tracks_allocations() {
        if registry().contains(ptr) {
            let outer = registry().get(ptr).map_or("another", |a| a.resource.name());
            return Err(Error::invalid(format!("{ptr:#x} was allocated through a {outer} resource: free it there, or with rmmFree")));
        }
        return resource.deallocate(ptr, bytes, stream);
    }
    free(ptr, stream, |allocation| {
        if !same_resource(&allocation.resource, resource) {
            return Err(Error::invalid(format!(
                "{ptr:#x} was allocated by a {} resource, not by this {} resource",
                allocation.resource.name(),
                resource.name()
            )));
        }
        if allocation.size != bytes {
            return Err(Error::invalid(format!("{ptr:#x} has {} bytes, not {bytes}", allocation.size)));
        }
        Ok(())
    })
}

/// Frees any pointer rmm handed out, through whichever resource made it.
pub fn free_any(ptr: usize, stream: Stream) -> Result<()> {
    if ptr == 0 {
        return Ok(());
    }
    match free(ptr, stream, |_| Ok(())) {
        Err(error) if matches!(error.kind(), ErrorKind::InvalidArgument(_)) => match ranges::find(ptr) {
            Some(holder) => holder.free_block(ptr, stream),
            None => Err(error),
        },
        other => other,
    }
}

/// The size of a live allocation and, when known, the resource that made it (for pooled
/// blocks: the adaptor they were allocated through, if any).
pub fn describe(ptr: usize) -> Option<(usize, Option<Arc<dyn MemoryResource>>)> {
    match registry().get(ptr) {
        Some(allocation) => Some((allocation.size, Some(allocation.resource))),
        None => ranges::find(ptr).and_then(|holder| holder.lease(ptr)).map(|lease| (lease.requested, crate::mr::via::resolve(lease.via))),
    }
}

/// Frees a recorded pointer through the resource that allocated it. If the resource fails,
/// the record is restored so the memory is not lost and the call can be retried.
fn free(ptr: usize, stream: Stream, accept: impl FnOnce(&Allocation) -> Result<()>) -> Result<()> {
    let allocation = registry().remove_if(ptr, accept)?;
    if let Err(e) = allocation.resource.deallocate(ptr, allocation.size, stream) {
        let _ = registry().insert(ptr, allocation);
        return Err(e);
    }
    // The last allocation of an adaptor nothing else refers to: let go of it.
    if allocation.resource.outer_via().is_some() && Arc::strong_count(&allocation.resource) == 2 {
        drop(allocation);
        crate::mr::via::collect();
    }
    Ok(())
}
