//! [`OneOrTable`]: an index of the endpoint's own exchanges (by Message ID) that keeps its
//! first entry in the endpoint itself.
//!
//! A client has one exchange in flight at a time: its index entry is looked up by every ACK
//! that arrives (most of them late copies that match nothing), written when the exchange
//! starts and removed when it ends. Kept inline, that costs no access to a separate heap
//! block; a second entry moves both to an [`IdTable`] (allocated the first time, kept after).

use super::hash::IdTable;

/// A table keyed by the endpoint's own ids, never iterated: while it holds one entry, the
/// entry is stored inline; otherwise the entries are in an [`IdTable`] behind a box (so the
/// whole is as small as an [`IdTable`]).
pub(super) struct OneOrTable<K, V> {
    /// The entry, when it is the only one. `Some` only while `rest` holds none.
    one: Option<(K, V)>,
    /// Every entry when there are several (or one left after several).
    rest: Option<Box<IdTable<K, V>>>,
}

impl<K, V> Default for OneOrTable<K, V> {
    fn default() -> Self {
        OneOrTable { one: None, rest: None }
    }
}

impl<K: Eq + core::hash::Hash, V> OneOrTable<K, V> {
    #[inline]
    pub(super) fn get(&self, key: &K) -> Option<&V> {
        match &self.one {
            Some((k, v)) => (k == key).then_some(v),
            None => self.rest.as_deref().and_then(|t| t.get(key)),
        }
    }

    #[inline]
    pub(super) fn contains_key(&self, key: &K) -> bool {
        self.get(key).is_some()
    }

    /// Inserts `value` under `key`; returns the value it replaces, if any.
    #[inline]
    pub(super) fn insert(&mut self, key: K, value: V) -> Option<V> {
        match &mut self.one {
            Some((k, v)) if *k == key => Some(core::mem::replace(v, value)),
            Some(_) => {
                self.spill(key, value);
                None
            }
            None if self.rest.as_deref().map_or(true, IdTable::is_empty) => {
                self.one = Some((key, value));
                None
            }
            None => self.rest.as_deref_mut().and_then(|t| t.insert(key, value)),
        }
    }

    /// A second entry: both go to the table (out of line: a client's exchanges to one server
    /// run one at a time).
    #[cold]
    #[inline(never)]
    fn spill(&mut self, key: K, value: V) {
        let rest = self.rest.get_or_insert_with(Default::default);
        if let Some((k, v)) = self.one.take() {
            rest.insert(k, v);
        }
        rest.insert(key, value);
    }

    /// Removes `key`'s entry; returns its value.
    #[inline]
    pub(super) fn remove(&mut self, key: &K) -> Option<V> {
        self.remove_if(key, |_| true)
    }

    /// Removes `key`'s entry if `remove` holds for its value; returns the value removed.
    #[inline]
    pub(super) fn remove_if(&mut self, key: &K, remove: impl FnOnce(&V) -> bool) -> Option<V> {
        match &self.one {
            Some((k, v)) => {
                if k == key && remove(v) {
                    self.one.take().map(|(_, v)| v)
                } else {
                    None
                }
            }
            None => self.rest.as_deref_mut().and_then(|t| t.remove_if(key, remove)),
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        usize::from(self.one.is_some()) + self.rest.as_deref().map_or(0, IdTable::len)
    }
}

#[cfg(test)]
mod tests {
    use super::super::hash::model::{draws, odd, remove_odd};
    use super::*;

    /// The same operations on the table and on a `HashMap` give the same lookups, with one
    /// entry (inline) and with many (the table behind it, past its own small size).
    #[test]
    fn behaves_like_a_hash_map() {
        let mut t = OneOrTable::<u32, u64>::default();
        let mut model = std::collections::HashMap::new();
        let mut inline = 0;
        for (step, x) in draws(6000) {
            let keys = match step {
                0..=1999 => 2,
                2000..=3999 => 12,
                _ => 3,
            };
            let k = ((x >> 33) % keys) as u32;
            match (x >> 20) % 4 {
                0 => assert_eq!(t.remove(&k), model.remove(&k)),
                1 => assert_eq!(t.remove_if(&k, odd), remove_odd(&mut model, k)),
                _ => assert_eq!(t.insert(k, step), model.insert(k, step)),
            }
            inline += usize::from(t.one.is_some());
            assert_eq!(t.len(), model.len());
            for q in 0..14 {
                assert_eq!(t.get(&q), model.get(&q));
                assert_eq!(t.contains_key(&q), model.contains_key(&q));
            }
        }
        assert!(inline > 100, "the inline entry was used ({inline} steps)");
        assert!(t.rest.is_some(), "the table was used");
    }
}
