//! A direction that holds payloads until their delivery time ([`Link`]).

use std::collections::{BinaryHeap, VecDeque};

use crate::{LinkPath, Nanos, Outcome, StageConfig, Transit};

struct Held<P> {
    at: Nanos,
    seq: u64,
    payload: P,
}

impl<P> PartialEq for Held<P> {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl<P> Eq for Held<P> {}
impl<P> PartialOrd for Held<P> {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl<P> Ord for Held<P> {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (o.at, o.seq).cmp(&(self.at, self.seq)) // min-heap
    }
}

/// A direction that holds payloads until their delivery time: the shape a real-time emulator
/// (or the simulator) drives.
///
/// ```
/// use coapcc_link::{testbed_uplink, Link, LossModel, Outcome, TESTBED_MTU};
/// let mut up = Link::new(&testbed_uplink(28_200, LossModel::None), TESTBED_MTU, 1, 0).unwrap();
/// let tr = up.push(0, 39, "GET /hello");
/// assert_eq!(tr.outcome, Outcome::Delivered);
/// assert_eq!(up.next_wakeup(), Some(tr.at));
/// assert_eq!(up.poll(tr.at - 1), None);
/// assert_eq!(up.poll(tr.at), Some("GET /hello"));
/// ```
pub struct Link<P> {
    path: LinkPath,
    fifo: VecDeque<(Nanos, P)>,
    heap: BinaryHeap<Held<P>>,
    seq: u64,
}

impl<P> Link<P> {
    /// A direction from its chain (see [`LinkPath::new`]).
    pub fn new(chain: &[StageConfig], mtu: u32, seed: u64, stream_base: u64) -> Result<Self, String> {
        Ok(Link::from_path(LinkPath::new(chain, mtu, seed, stream_base)?))
    }

    /// Wrap an existing path.
    pub fn from_path(path: LinkPath) -> Self {
        Link { path, fifo: VecDeque::new(), heap: BinaryHeap::new(), seq: 0 }
    }

    /// Send `payload` of `size` bytes at `now` (non-decreasing across calls). A delivered
    /// packet is held until [`Transit::at`]; others are dropped here.
    #[inline]
    pub fn push(&mut self, now: Nanos, size: u32, payload: P) -> Transit {
        let tr = self.path.transmit(now, size);
        if tr.outcome == Outcome::Delivered {
            if self.path.fifo {
                debug_assert!(self.fifo.back().map_or(true, |b| b.0 <= tr.at));
                self.fifo.push_back((tr.at, payload));
            } else {
                self.seq += 1;
                self.heap.push(Held { at: tr.at, seq: self.seq, payload });
            }
        }
        tr
    }

    /// The next payload due at or before `now`, if any.
    #[inline(always)]
    pub fn poll(&mut self, now: Nanos) -> Option<P> {
        if self.path.fifo {
            if self.fifo.front().is_some_and(|f| f.0 <= now) {
                return self.fifo.pop_front().map(|f| f.1);
            }
            None
        } else if self.heap.peek().is_some_and(|h| h.at <= now) {
            self.heap.pop().map(|h| h.payload)
        } else {
            None
        }
    }

    /// The next delivery time, if a packet is held.
    pub fn next_wakeup(&self) -> Option<Nanos> {
        self.peek().map(|p| p.0)
    }

    /// The next delivery (time and payload) without removing it.
    #[inline]
    pub fn peek(&self) -> Option<(Nanos, &P)> {
        if self.path.fifo {
            self.fifo.front().map(|f| (f.0, &f.1))
        } else {
            self.heap.peek().map(|h| (h.at, &h.payload))
        }
    }

    /// On a FIFO direction, the payload `k` places behind the next delivery (`k = 0`: the
    /// next one), if that many are held; `None` on a direction that may reorder. Finding it
    /// reads no payload (a caller may only want its address, to load it ahead).
    #[inline(always)]
    pub fn held_nth(&self, k: usize) -> Option<&P> {
        if self.path.fifo {
            self.fifo.get(k).map(|f| &f.1)
        } else {
            None
        }
    }

    /// Packets held (in flight to the far end).
    pub fn in_flight(&self) -> usize {
        self.fifo.len() + self.heap.len()
    }

    /// The payloads held (in flight to the far end): in delivery order on a FIFO direction,
    /// in no particular order on one that may reorder.
    pub fn held(&self) -> impl Iterator<Item = &P> + '_ {
        self.fifo.iter().map(|f| &f.1).chain(self.heap.iter().map(|h| &h.payload))
    }

    /// The underlying path (counters, rate stage).
    pub fn path(&self) -> &LinkPath {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use crate::*;

    #[test]
    fn held_nth_follows_delivery_order() {
        let mut l: Link<u64> = Link::new(&testbed_uplink(28_200, LossModel::None), TESTBED_MTU, 1, 0).unwrap();
        let mut held = Vec::new();
        for i in 0..50u64 {
            if l.push(i * 100_000, 39 + (i % 7) as u32, i).outcome == Outcome::Delivered {
                held.push(i);
            }
        }
        assert!(held.len() > 10);
        let mut k = 0;
        while let Some(&next) = l.held_nth(0) {
            for (j, &want) in held[k..].iter().enumerate() {
                assert_eq!(l.held_nth(j), Some(&want));
            }
            assert_eq!(l.held_nth(held.len() - k), None);
            assert_eq!(l.poll(u64::MAX), Some(next));
            k += 1;
        }
        assert_eq!(k, held.len());
    }
}
