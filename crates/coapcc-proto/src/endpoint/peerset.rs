//! [`PeerSet`]: an ordered set of peers that keeps its allocation when emptied; [`PeerMap`]:
//! an ordered map keyed by peer, a sorted vector while small.
//!
//! The peers with a non-empty NSTART queue: a client has one, which enters and leaves the set
//! at every request. An ordered set from the standard library allocates a node when it gains
//! its first element and frees it when it loses its last; this one keeps a small sorted vector
//! (a binary search and a short move) and moves to an ordered set for good past [`SMALL`]
//! peers, so lookups never degrade whatever the peers.

use std::collections::BTreeMap;

/// Most peers kept in the sorted vector; one more moves them all to the ordered set.
const SMALL: usize = 32;

/// An ordered set of peers (iteration in ascending order, like a `BTreeSet`): a [`PeerMap`]
/// with no values, so it shares the map's small sorted vector and its switch to an ordered
/// map past [`SMALL`] peers.
pub(super) struct PeerSet<P> {
    map: PeerMap<P, ()>,
}

impl<P: Ord> PeerSet<P> {
    pub(super) fn new() -> Self {
        PeerSet { map: PeerMap::new() }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.map.len() == 0
    }

    pub(super) fn insert(&mut self, p: P) {
        self.map.insert(p, ());
    }

    pub(super) fn remove(&mut self, p: &P) {
        self.map.remove(p);
    }

    /// Appends to `out`, in ascending order, the peers for which `keep` holds.
    pub(super) fn select(&self, out: &mut Vec<P>, mut keep: impl FnMut(&P) -> bool)
    where
        P: Clone,
    {
        match &self.map.large {
            Some(m) => Self::select_large(m, out, &mut keep),
            None => {
                for (p, ()) in &self.map.small {
                    if keep(p) {
                        out.push(p.clone());
                    }
                }
            }
        }
    }

    #[cold]
    #[inline(never)]
    fn select_large(m: &BTreeMap<P, ()>, out: &mut Vec<P>, keep: &mut dyn FnMut(&P) -> bool)
    where
        P: Clone,
    {
        out.extend(m.keys().filter(|p| keep(p)).cloned());
    }
}

/// An ordered map keyed by peer (iteration in ascending order, like a `BTreeMap`): a sorted
/// vector of key-value pairs up to [`SMALL`] peers, an ordered map beyond, for good. A client
/// has one peer, looked up several times per exchange: a binary search over one key, next to
/// the value, instead of a tree node to walk.
pub(super) struct PeerMap<P, V> {
    /// Sorted by key, no duplicates; used while `large` is `None`.
    small: Vec<(P, V)>,
    // Boxed: 8 bytes next to the hot vector instead of 24 (the endpoint's hot fields share
    // a few cache lines); the extra indirection is paid only past the small size.
    #[allow(clippy::box_collection)]
    large: Option<Box<BTreeMap<P, V>>>,
}

impl<P: Ord, V> PeerMap<P, V> {
    pub(super) fn new() -> Self {
        PeerMap { small: Vec::new(), large: None }
    }

    #[inline]
    pub(super) fn get(&self, peer: &P) -> Option<&V> {
        match &self.large {
            None => self.small.binary_search_by(|(k, _)| k.cmp(peer)).ok().map(|i| &self.small[i].1),
            Some(m) => Self::get_large(m, peer),
        }
    }

    #[inline]
    pub(super) fn get_mut(&mut self, peer: &P) -> Option<&mut V> {
        match &mut self.large {
            None => match self.small.binary_search_by(|(k, _)| k.cmp(peer)) {
                Ok(i) => Some(&mut self.small[i].1),
                Err(_) => None,
            },
            Some(m) => Self::get_mut_large(m, peer),
        }
    }

    // The ordered map's paths out of line: a client (one peer) never takes them, and the
    // tree walk inlined into every lookup would spread the hot code over more cache lines.
    #[cold]
    #[inline(never)]
    fn get_large<'a>(m: &'a BTreeMap<P, V>, peer: &P) -> Option<&'a V> {
        m.get(peer)
    }

    #[cold]
    #[inline(never)]
    fn get_mut_large<'a>(m: &'a mut BTreeMap<P, V>, peer: &P) -> Option<&'a mut V> {
        m.get_mut(peer)
    }

    #[cold]
    #[inline(never)]
    fn insert_large(m: &mut BTreeMap<P, V>, peer: P, value: V) {
        m.insert(peer, value);
    }

    #[cold]
    #[inline(never)]
    fn remove_large(m: &mut BTreeMap<P, V>, peer: &P) -> Option<V> {
        m.remove(peer)
    }

    pub(super) fn contains_key(&self, peer: &P) -> bool {
        self.get(peer).is_some()
    }

    pub(super) fn len(&self) -> usize {
        self.large.as_ref().map_or(self.small.len(), |m| m.len())
    }

    /// Inserts `value` under `peer` (replacing any value there).
    pub(super) fn insert(&mut self, peer: P, value: V) {
        if let Some(m) = &mut self.large {
            return Self::insert_large(m, peer, value);
        }
        match self.small.binary_search_by(|(k, _)| k.cmp(&peer)) {
            Ok(i) => self.small[i].1 = value,
            Err(i) => {
                self.small.insert(i, (peer, value));
                if self.small.len() > SMALL {
                    self.large = Some(Box::new(self.small.drain(..).collect()));
                }
            }
        }
    }

    pub(super) fn remove(&mut self, peer: &P) -> Option<V> {
        match &mut self.large {
            None => {
                let i = self.small.binary_search_by(|(k, _)| k.cmp(peer)).ok()?;
                Some(self.small.remove(i).1)
            }
            Some(m) => Self::remove_large(m, peer),
        }
    }

    /// Every entry, in ascending order of peer.
    pub(super) fn iter(&self) -> Box<dyn Iterator<Item = (&P, &V)> + '_> {
        match &self.large {
            None => Box::new(self.small.iter().map(|(k, v)| (k, v))),
            Some(m) => Box::new(m.iter()),
        }
    }
}

impl<P: Ord, V> core::ops::Index<&P> for PeerMap<P, V> {
    type Output = V;
    fn index(&self, peer: &P) -> &V {
        self.get(peer).expect("peer present in the map")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// The same operations on the set and on a `BTreeSet` give the same members in the same
    /// order, below and above the switch to the ordered set.
    #[test]
    fn behaves_like_an_ordered_set() {
        let mut s = PeerSet::<u16>::new();
        let mut model = BTreeSet::new();
        let mut x = 0x2545_F491_4F6C_DD1D_u64;
        for step in 0..4000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let p = ((x >> 33) % if step < 2000 { 20 } else { 80 }) as u16;
            if (x >> 20) % 3 == 0 {
                s.remove(&p);
                model.remove(&p);
            } else {
                s.insert(p);
                model.insert(p);
            }
            assert_eq!(s.is_empty(), model.is_empty());
            let mut all = Vec::new();
            s.select(&mut all, |_| true);
            assert!(all.iter().eq(model.iter()));
            let mut even = Vec::new();
            s.select(&mut even, |p| p % 2 == 0);
            assert!(even.iter().eq(model.iter().filter(|p| *p % 2 == 0)));
        }
        assert!(s.map.large.is_some(), "the test reached the ordered set");
    }

    #[test]
    fn keeps_its_allocation() {
        let mut s = PeerSet::<u32>::new();
        s.insert(7);
        let cap = s.map.small.capacity();
        s.remove(&7);
        let mut all = Vec::new();
        s.select(&mut all, |_| true);
        assert!(s.is_empty() && all.is_empty());
        assert_eq!(s.map.small.capacity(), cap);
    }

    /// The same operations on the map and on a `BTreeMap` give the same values and the same
    /// order, below and above the switch to the ordered map.
    #[test]
    fn map_behaves_like_an_ordered_map() {
        let mut m = PeerMap::<u16, u64>::new();
        let mut model = BTreeMap::new();
        let mut x = 0x9E37_79B9_7F4A_7C15_u64;
        for step in 0..4000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let p = ((x >> 33) % if step < 2000 { 20 } else { 80 }) as u16;
            if (x >> 20) % 3 == 0 {
                assert_eq!(m.remove(&p), model.remove(&p));
            } else {
                m.insert(p, step);
                model.insert(p, step);
            }
            if let Some(v) = m.get_mut(&p) {
                *v += 1;
                *model.get_mut(&p).unwrap() += 1;
            }
            assert_eq!(m.len(), model.len());
            assert_eq!(m.contains_key(&p), model.contains_key(&p));
            assert!(m.iter().eq(model.iter()));
        }
        assert!(m.large.is_some(), "the test reached the ordered map");
    }
}
