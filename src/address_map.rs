//! Hash maps keyed by device addresses. Addresses handed out are 256-byte aligned and unique,
//! so a multiply-shift of the address is a good and cheap hash.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

#[derive(Default)]
pub struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, _: &[u8]) {
        unreachable!("only addresses are hashed")
    }
    fn write_usize(&mut self, address: usize) {
        self.0 = address_hash(address);
    }
}

pub fn address_hash(address: usize) -> u64 {
    ((address as u64) >> 8).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

pub type AddressMap<V> = HashMap<usize, V, BuildHasherDefault<AddressHasher>>;
