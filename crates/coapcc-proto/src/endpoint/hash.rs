//! A fast deterministic hasher for the endpoint's own keys (exchange and request ids, and
//! (peer, Message ID) and (peer, token) pairs of its own exchanges), and [`IdTable`], the
//! table keyed by them: a small vector while it holds a few entries, a hash table beyond.
//! These tables are never iterated, so their order cannot leak into a run; unlike ordered
//! maps they keep their allocation when emptied, so an exchange that comes and goes costs no
//! allocation.

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

/// Most entries an [`IdTable`] keeps in its vector; one more moves them to a hash table.
const SMALL: usize = 8;

/// A table keyed by the endpoint's own ids, never iterated (so its order cannot leak into a
/// run). While it holds at most [`SMALL`] entries (a client has one exchange, one request
/// and their index entries at a time) they sit in an unsorted vector, key next to value:
/// a lookup compares a few keys in one place, with no hashing and no control bytes to load.
/// Past [`SMALL`] entries it becomes an [`IdMap`] for good, so large tables keep O(1)
/// lookups.
pub(crate) struct IdTable<K, V> {
    small: Vec<Entry<K, V>>,
    large: Option<Box<IdMap<K, V>>>,
}

/// One entry of an [`IdTable`]'s vector: the key first, then the value (`repr(C)`: a tuple
/// may put the key after a large value, so that a lookup would read a cache line of its own
/// before the value's first fields).
#[repr(C)]
pub(crate) struct Entry<K, V> {
    pub(crate) key: K,
    pub(crate) value: V,
}

impl<K, V> Default for IdTable<K, V> {
    fn default() -> Self {
        IdTable { small: Vec::new(), large: None }
    }
}

impl<K: Eq + core::hash::Hash, V> core::ops::Index<&K> for IdTable<K, V> {
    type Output = V;
    #[inline]
    fn index(&self, key: &K) -> &V {
        self.get(key).expect("key present in the table")
    }
}

impl<K: Eq + core::hash::Hash, V> IdTable<K, V> {
    #[inline]
    pub(crate) fn get(&self, key: &K) -> Option<&V> {
        match &self.large {
            None => self.small.iter().find(|e| e.key == *key).map(|e| &e.value),
            Some(m) => large::get(m, key),
        }
    }

    #[inline]
    pub(crate) fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        match &mut self.large {
            None => self.small.iter_mut().find(|e| e.key == *key).map(|e| &mut e.value),
            Some(m) => large::get_mut(m, key),
        }
    }

    #[inline]
    pub(crate) fn contains_key(&self, key: &K) -> bool {
        self.get(key).is_some()
    }

    /// Inserts `value` under `key`; returns the value it replaces, if any.
    pub(crate) fn insert(&mut self, key: K, value: V) -> Option<V> {
        if let Some(m) = &mut self.large {
            return large::insert(m, key, value);
        }
        if let Some(v) = self.get_mut(&key) {
            return Some(core::mem::replace(v, value));
        }
        if self.small.len() < SMALL {
            self.small.push(Entry { key, value });
        } else {
            self.grow(key, value);
        }
        None
    }

    /// [`IdTable::insert`] of an entry whose key is not in the table (a fresh id), with no
    /// lookup; returns the value where it now lives, so that it can be changed in place. While
    /// the vector has room, the entry (built where the call is) is moved into its slot once:
    /// the vector's growth is out of line.
    #[inline]
    pub(crate) fn insert_new(&mut self, entry: Entry<K, V>) -> &mut V {
        debug_assert!(!self.contains_key(&entry.key), "insert_new: the key is in the table");
        if self.large.is_none() && self.small.len() < self.small.capacity().min(SMALL) {
            self.small.push(entry);
            let last = self.small.len() - 1;
            &mut self.small[last].value
        } else {
            self.insert_new_slow(entry)
        }
    }

    /// [`IdTable::insert_new`] when the vector is full or the table is a hash table (out of
    /// line).
    #[inline(never)]
    fn insert_new_slow(&mut self, entry: Entry<K, V>) -> &mut V {
        if self.large.is_none() && self.small.len() < SMALL {
            self.small.push(entry);
            let last = self.small.len() - 1;
            return &mut self.small[last].value;
        }
        let IdTable { small, large } = self;
        let m = large.get_or_insert_with(|| Box::new(small.drain(..).map(|e| (e.key, e.value)).collect()));
        m.entry(entry.key).or_insert(entry.value)
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self, key: K, value: V) {
        let mut m: IdMap<K, V> = self.small.drain(..).map(|e| (e.key, e.value)).collect();
        m.insert(key, value);
        self.large = Some(Box::new(m));
    }

    #[inline]
    pub(crate) fn remove(&mut self, key: &K) -> Option<V> {
        self.remove_if(key, |_| true)
    }

    /// Removes `key`'s entry if `remove` holds for its value; returns the value removed.
    #[inline]
    pub(crate) fn remove_if(&mut self, key: &K, remove: impl FnOnce(&V) -> bool) -> Option<V> {
        match &mut self.large {
            None => {
                let i = self.small.iter().position(|e| e.key == *key)?;
                remove(&self.small[i].value).then(|| self.small.swap_remove(i).value)
            }
            Some(m) => large::remove_if(m, key, remove),
        }
    }

    /// Removes `key`'s entry, if any, dropping it where it is (a large value, e.g. an
    /// exchange, is not copied out first: when it is the vector's last entry, the common
    /// case, nothing moves). Returns whether there was one.
    #[inline]
    pub(crate) fn discard(&mut self, key: &K) -> bool {
        match &mut self.large {
            None => {
                let Some(i) = self.small.iter().position(|e| e.key == *key) else { return false };
                if i + 1 == self.small.len() {
                    self.small.truncate(i);
                } else {
                    self.small.swap_remove(i);
                }
                true
            }
            Some(m) => large::remove_if(m, key, |_| true).is_some(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.large.as_ref().map_or(self.small.len(), |m| m.len())
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// [`IdTable`]'s hash-table paths, out of line: the tables of a client (and most of a
/// server's) never leave the vector, and the probing code inlined into every lookup would
/// spread the per-exchange code over more instruction-cache lines.
mod large {
    use super::IdMap;

    #[cold]
    #[inline(never)]
    pub(super) fn get<'a, K: Eq + core::hash::Hash, V>(m: &'a IdMap<K, V>, key: &K) -> Option<&'a V> {
        m.get(key)
    }

    #[cold]
    #[inline(never)]
    pub(super) fn get_mut<'a, K: Eq + core::hash::Hash, V>(m: &'a mut IdMap<K, V>, key: &K) -> Option<&'a mut V> {
        m.get_mut(key)
    }

    #[cold]
    #[inline(never)]
    pub(super) fn insert<K: Eq + core::hash::Hash, V>(m: &mut IdMap<K, V>, key: K, value: V) -> Option<V> {
        m.insert(key, value)
    }

    #[cold]
    #[inline(never)]
    pub(super) fn remove_if<K: Eq + core::hash::Hash, V>(
        m: &mut IdMap<K, V>,
        key: &K,
        remove: impl FnOnce(&V) -> bool,
    ) -> Option<V> {
        if m.get(key).is_some_and(remove) {
            m.remove(key)
        } else {
            None
        }
    }
}

/// Shared by the tables' model-based tests (this one's and `index`'s): the random
/// operations and what a `HashMap` model expects of them.
#[cfg(test)]
pub(super) mod model {
    use std::collections::HashMap;

    /// `steps` numbered draws of a 64-bit LCG from a fixed seed (the same operations every run).
    pub(in super::super) fn draws(steps: u64) -> impl Iterator<Item = (u64, u64)> {
        let mut x = 0x2545_F491_4F6C_DD1D_u64;
        (0..steps).map(move |step| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (step, x)
        })
    }

    /// The predicate the tests remove by (`remove_if`).
    pub(in super::super) fn odd(v: &u64) -> bool {
        v % 2 == 1
    }

    /// What `remove_if(k, odd)` returns on a table equal to `model`, applied to `model`.
    pub(in super::super) fn remove_odd(model: &mut HashMap<u32, u64>, k: u32) -> Option<u64> {
        let expected = model.get(&k).copied().filter(odd);
        if expected.is_some() {
            model.remove(&k);
        }
        expected
    }
}

#[cfg(test)]
mod tests {
    use super::model::{draws, odd, remove_odd};
    use super::*;

    /// The same operations on the table and on a `HashMap` give the same lookups, below and
    /// above the switch to the hash table.
    #[test]
    fn behaves_like_a_hash_map() {
        let mut t = IdTable::<u32, u64>::default();
        let mut model = std::collections::HashMap::new();
        for (step, x) in draws(4000) {
            let k = ((x >> 33) % if step < 2000 { 10 } else { 40 }) as u32;
            match (x >> 20) % 4 {
                0 => assert_eq!(t.remove(&k), model.remove(&k)),
                2 if step % 3 == 0 => assert_eq!(t.discard(&k), model.remove(&k).is_some()),
                1 => assert_eq!(t.remove_if(&k, odd), remove_odd(&mut model, k)),
                3 if !model.contains_key(&k) => {
                    let v = t.insert_new(Entry { key: k, value: step });
                    assert_eq!(*v, step);
                    *v += 4;
                    model.insert(k, step + 4);
                }
                _ => assert_eq!(t.insert(k, step), model.insert(k, step)),
            }
            assert_eq!(t.len(), model.len());
            assert_eq!(t.is_empty(), model.is_empty());
            for q in 0..40 {
                assert_eq!(t.get(&q), model.get(&q));
                assert_eq!(t.contains_key(&q), model.contains_key(&q));
            }
            if let Some(v) = t.get_mut(&k) {
                *v += 2;
                *model.get_mut(&k).unwrap() += 2;
            }
        }
        assert!(t.large.is_some(), "the test reached the hash table");
    }
}
