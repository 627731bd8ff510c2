//! JSON snapshots of resource stacks (`rmmResourceGetSnapshot`): what users look at when an
//! allocation fails. Each resource describes itself and nests its upstream's description.

use rmm_suballoc::tlsf::BlockView;
use serde_json::{json, Value};

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

pub fn block(view: &BlockView) -> Value {
    match view.requested {
        Some(requested) => json!({ "address": address(view.addr), "size": view.size, "state": "used", "requested": requested }),
        None => json!({ "address": address(view.addr), "size": view.size, "state": "free" }),
    }
}

/// The figures of a pool-like resource. Fragmentation is the share of free bytes outside the
/// largest free block: 0 when all free memory is one block, near 1 when it is in crumbs.
pub fn figures(reserved: usize, free: usize, largest_free_block: usize) -> Value {
    let fragmentation = if free == 0 { 0.0 } else { 1.0 - largest_free_block as f64 / free as f64 };
    json!({
        "reserved_bytes": reserved,
        "used_bytes": reserved.saturating_sub(free),
        "free_bytes": free,
        "largest_free_block": largest_free_block,
        "fragmentation": fragmentation,
    })
}
