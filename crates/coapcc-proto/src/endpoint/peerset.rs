//! [`PeerSet`]: an ordered set of peers that keeps its allocation when emptied; [`PeerCounts`]:
//! a count per peer whose idle entries are dropped in batches.
//!
//! The peers with a non-empty NSTART queue: a client has one, which enters and leaves the set
//! at every request. An ordered set from the standard library allocates a node when it gains
//! its first element and frees it when it loses its last; this one keeps a small sorted vector
//! (a binary search and a short move) and moves to an ordered set for good past [`SMALL`]
//! peers, so lookups never degrade whatever the peers.

use std::collections::{BTreeMap, BTreeSet};

/// Most peers kept in the sorted vector; one more moves them all to the ordered set.
const SMALL: usize = 32;

/// An ordered set of peers (iteration in ascending order, like a `BTreeSet`).
pub(super) struct PeerSet<P> {
    /// Sorted ascending, no duplicates; used while `large` is `None`.
    small: Vec<P>,
    large: Option<BTreeSet<P>>,
}

impl<P: Ord> PeerSet<P> {
    pub(super) fn new() -> Self {
        PeerSet { small: Vec::new(), large: None }
    }

    pub(super) fn is_empty(&self) -> bool {
        match &self.large {
            Some(set) => set.is_empty(),
            None => self.small.is_empty(),
        }
    }

    pub(super) fn insert(&mut self, p: P) {
        if let Some(set) = &mut self.large {
            set.insert(p);
            return;
        }
        if let Err(i) = self.small.binary_search(&p) {
            self.small.insert(i, p);
            if self.small.len() > SMALL {
                self.large = Some(self.small.drain(..).collect());
            }
        }
    }

    pub(super) fn remove(&mut self, p: &P) {
        if let Some(set) = &mut self.large {
            set.remove(p);
        } else if let Ok(i) = self.small.binary_search(p) {
            self.small.remove(i);
        }
    }

    /// Appends to `out`, in ascending order, the peers for which `keep` holds.
    pub(super) fn select(&self, out: &mut Vec<P>, mut keep: impl FnMut(&P) -> bool)
    where
        P: Clone,
    {
        match &self.large {
            Some(set) => out.extend(set.iter().filter(|p| keep(p)).cloned()),
            None => {
                for p in &self.small {
                    if keep(p) {
                        out.push(p.clone());
                    }
                }
            }
        }
    }
}

/// Idle (zero) entries [`PeerCounts`] keeps before dropping them all at once.
const IDLE_KEPT: usize = 1024;

/// A count per peer (absent: 0). A peer whose count falls to 0 keeps its entry, so that a
/// peer that comes back (a client's next request) costs a lookup, not an insertion and a
/// removal in the ordered map; once more than [`IDLE_KEPT`] entries are idle, and more than
/// are busy, the idle ones are dropped together. Memory stays bounded by the busy peers.
pub(super) struct PeerCounts<P> {
    map: BTreeMap<P, u32>,
    /// Entries at 0.
    idle: usize,
}

impl<P: Ord + Clone> PeerCounts<P> {
    pub(super) fn new() -> Self {
        PeerCounts { map: BTreeMap::new(), idle: 0 }
    }

    pub(super) fn get(&self, peer: &P) -> u32 {
        self.map.get(peer).copied().unwrap_or(0)
    }

    pub(super) fn increment(&mut self, peer: &P) {
        match self.map.get_mut(peer) {
            Some(n) => {
                if *n == 0 {
                    self.idle -= 1;
                }
                *n += 1;
            }
            None => {
                self.map.insert(peer.clone(), 1);
            }
        }
    }

    /// Count one less for `peer` (no-op at 0).
    pub(super) fn decrement(&mut self, peer: &P) {
        if let Some(n) = self.map.get_mut(peer) {
            if *n > 0 {
                *n -= 1;
                if *n == 0 {
                    self.idle += 1;
                    if self.idle > IDLE_KEPT && 2 * self.idle > self.map.len() {
                        self.map.retain(|_, n| *n > 0);
                        self.idle = 0;
                    }
                }
            }
        }
    }

    /// Entries kept (busy and idle).
    #[cfg(test)]
    fn entries(&self) -> usize {
        self.map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts match a plain map's, and idle entries stay bounded.
    #[test]
    fn counts_and_bounded_idle_entries() {
        let mut c = PeerCounts::<u32>::new();
        let mut model = BTreeMap::<u32, u32>::new();
        let mut x = 0x9E37_79B9_u64;
        for _ in 0..200_000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let p = ((x >> 33) % 5000) as u32;
            if (x >> 20) % 2 == 0 {
                c.increment(&p);
                *model.entry(p).or_insert(0) += 1;
            } else {
                c.decrement(&p);
                if let Some(n) = model.get_mut(&p) {
                    *n -= 1;
                    if *n == 0 {
                        model.remove(&p);
                    }
                }
            }
            assert_eq!(c.get(&p), model.get(&p).copied().unwrap_or(0));
            assert!(c.entries() <= (2 * model.len()).max(model.len() + IDLE_KEPT + 1));
        }
        for p in 0..5000 {
            assert_eq!(c.get(&p), model.get(&p).copied().unwrap_or(0));
        }
    }

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
        assert!(s.large.is_some(), "the test reached the ordered set");
    }

    #[test]
    fn keeps_its_allocation() {
        let mut s = PeerSet::<u32>::new();
        s.insert(7);
        let cap = s.small.capacity();
        s.remove(&7);
        let mut all = Vec::new();
        s.select(&mut all, |_| true);
        assert!(s.is_empty() && all.is_empty());
        assert_eq!(s.small.capacity(), cap);
    }
}
