//! A fast deterministic hasher for the endpoint's own integer keys (exchange and request ids,
//! Message IDs). Tables keyed by them are never iterated, so their order cannot leak into a
//! run; unlike ordered maps they keep their allocation when emptied, so an exchange that
//! comes and goes costs no allocation.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// One multiplication per integer written (Fibonacci hashing). The keys are the endpoint's
/// own sequential ids, or a peer's Message IDs in that peer's own table: a peer can only
/// make its own lookups slower, within the table's bound.
#[derive(Default)]
pub(crate) struct IdHasher(u64);

const K: u64 = 0x9E37_79B9_7F4A_7C15;

impl Hasher for IdHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(K);
        }
    }
    #[inline]
    fn write_u16(&mut self, i: u16) {
        self.write_u64(u64::from(i));
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0 ^ i).wrapping_add(1).wrapping_mul(K).rotate_left(26);
    }
}

/// A hash map keyed by the endpoint's integer ids.
pub(crate) type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;
