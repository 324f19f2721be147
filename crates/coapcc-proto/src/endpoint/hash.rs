//! A fast deterministic hasher for the endpoint's own keys (exchange and request ids, and
//! (peer, Message ID) and (peer, token) pairs of its own exchanges). Tables keyed by them are
//! never iterated, so their order cannot leak into a run; unlike ordered maps they keep their
//! allocation when emptied, so an exchange that comes and goes costs no allocation.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// One multiplication per integer written (Fibonacci hashing). The keys are the endpoint's
/// own sequential ids, a peer's Message IDs in that peer's own table (a peer can only make
/// its own lookups slower, within the table's bound), or pairs of a peer and a Message ID or
/// token this endpoint chose for its own exchange (sequential or random, never a peer's
/// choice). Tables keyed by a peer alone stay ordered maps.
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
    fn write_u8(&mut self, i: u8) {
        self.write_u64(u64::from(i));
    }
    #[inline]
    fn write_u16(&mut self, i: u16) {
        self.write_u64(u64::from(i));
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.write_u64(u64::from(i));
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0 ^ i).wrapping_add(1).wrapping_mul(K).rotate_left(26);
    }
}

/// A hash map keyed by the endpoint's integer ids.
pub(crate) type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;
