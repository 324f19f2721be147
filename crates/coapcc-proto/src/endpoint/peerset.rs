//! [`PeerSet`]: an ordered set of peers that keeps its allocation when emptied.
//!
//! The peers with a non-empty NSTART queue: a client has one, which enters and leaves the set
//! at every request. An ordered set from the standard library allocates a node when it gains
//! its first element and frees it when it loses its last; this one keeps a small sorted vector
//! (a binary search and a short move) and moves to an ordered set for good past [`SMALL`]
//! peers, so lookups never degrade whatever the peers.

use std::collections::BTreeSet;

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

#[cfg(test)]
mod tests {
    use super::*;

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
