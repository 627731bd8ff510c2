//! The TLSF index against its shadow model, on the fuzzer's choices.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rmm_suballoc::model::{check_tlsf, Bytes};

fuzz_target!(|data: &[u8]| check_tlsf(&mut Bytes(data), 4096));
