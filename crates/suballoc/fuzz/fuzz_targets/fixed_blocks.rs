//! The fixed-size block index against its shadow model, on the fuzzer's choices; the first
//! byte picks the block size (1 to 32 granules).
#![no_main]

use libfuzzer_sys::fuzz_target;
use rmm_suballoc::model::{check_fixed_blocks, Bytes};
use rmm_suballoc::tlsf::GRANULE;

fuzz_target!(|data: &[u8]| {
    if let Some((&size, choices)) = data.split_first() {
        check_fixed_blocks(&mut Bytes(choices), (1 + size as usize % 32) * GRANULE, 4096);
    }
});
