//! The address map against std's HashMap, on the fuzzer's choices.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rmm_suballoc::model::{check_address_map, Bytes};

fuzz_target!(|data: &[u8]| check_address_map(&mut Bytes(data), 8192));
