//! The fixed-size block index against a shadow model (`model::check_fixed_blocks`): chunks added out of address order,
//! allocations, frees (valid, double, interior, foreign, of a wrong size) and chunk releases,
//! with every invariant checked after each operation.

use rmm_suballoc::model::{check_fixed_blocks, Xorshift};
use rmm_suballoc::tlsf::GRANULE;

#[test]
fn power_of_two_blocks_match_the_model() {
    for seed in 1..=12 {
        check_fixed_blocks(&mut Xorshift(seed), 1024, 3000);
    }
}

#[test]
fn other_block_sizes_match_the_model() {
    for (seed, block_size) in [(21, GRANULE), (22, 3 * GRANULE), (23, 5 * GRANULE), (24, 100 * GRANULE)] {
        check_fixed_blocks(&mut Xorshift(seed), block_size, 3000);
    }
}
