//! JSON snapshots of resource stacks (`rmmResourceGetSnapshot`): what users look at when an
//! allocation fails. Each resource describes itself and nests its upstream's description.

use crate::resources::Footprint;
use rmm_suballoc::tlsf::BlockView;
use serde_json::{json, Value};

/// An address as snapshots write it: a hexadecimal string ("0x7f0000000000"), which JSON
/// readers keep exact where a number above 2^53 would not be.
pub fn address(addr: usize) -> Value {
    format!("{addr:#x}").into()
}

/// Streams by the id the driver gives them (`cudaStreamGetId`); the legacy default stream,
/// and per-thread arenas on it, as "default".
pub fn stream_label(identity: u64) -> Value {
    match identity {
        0 => "default".into(),
        identity => (identity - 1).into(),
    }
}

/// A block as snapshots list it: its address, size and state ("used", with the bytes asked
/// for, or "free").
pub fn block(view: &BlockView) -> Value {
    match view.requested {
        Some(requested) => json!({ "address": address(view.addr), "size": view.size, "state": "used", "requested": requested }),
        None => json!({ "address": address(view.addr), "size": view.size, "state": "free" }),
    }
}

/// The figures of a resource that holds memory. Fragmentation is the share of reserved bytes
/// not in use (1 - used / reserved); free-space fragmentation, the share of free bytes outside
/// the largest free block (0 when all free memory is one block, near 1 when it is in crumbs).
pub fn figures(footprint: &Footprint) -> Value {
    let free = footprint.reserved.saturating_sub(footprint.live);
    let free_space_fragmentation = if free == 0 { 0.0 } else { 1.0 - footprint.largest_free_block as f64 / free as f64 };
    json!({
        "reserved_bytes": footprint.reserved,
        "peak_reserved_bytes": footprint.peak_reserved,
        "used_bytes": footprint.live,
        "peak_used_bytes": footprint.peak_live,
        "free_bytes": free,
        "largest_free_block": footprint.largest_free_block,
        "fragmentation": footprint.fragmentation(),
        "free_space_fragmentation": free_space_fragmentation,
    })
}
