//! What the examples share: one thread's ring of blocks on the NULL stream.

use rmm::boundary::handles::rmmResource_t;
use rmm::boundary::*;
use rmm::error::rmmError_t::RMM_SUCCESS;

/// `pairs` allocate+free pairs through `pool` on the NULL stream, keeping a ring of 8 blocks
/// of 256 B (free the oldest, allocate in its place): the threads matrix's 256 B shape.
pub fn ring_of_8(pool: rmmResource_t, pairs: usize) {
    let mut ring = [std::ptr::null_mut(); 8];
    for block in ring.iter_mut() {
        assert_eq!(rmmResourceAllocate(pool, block, 256, std::ptr::null_mut()), RMM_SUCCESS);
    }
    for i in 0..pairs {
        assert_eq!(rmmResourceDeallocate(pool, ring[i % 8], 256, std::ptr::null_mut()), RMM_SUCCESS);
        assert_eq!(rmmResourceAllocate(pool, &mut ring[i % 8], 256, std::ptr::null_mut()), RMM_SUCCESS);
    }
    for block in ring {
        assert_eq!(rmmResourceDeallocate(pool, block, 256, std::ptr::null_mut()), RMM_SUCCESS);
    }
}
