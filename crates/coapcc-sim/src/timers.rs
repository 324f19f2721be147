//! An indexed 4-ary min-heap of per-client timers: at most one entry per client, keyed by
//! `(deadline, seq)`, with in-place re-keying and removal. Cancelled timers leave nothing
//! behind, so the heap never holds more entries than there are clients.

use crate::link::Nanos;

const ARITY: usize = 4;

#[derive(Clone, Copy, Debug)]
pub(crate) struct TimerEntry {
    pub time: Nanos,
    pub seq: u64,
    pub client: u32,
}

impl TimerEntry {
    /// `(time, seq)` packed into one integer: one branch-free comparison.
    #[inline]
    fn key(&self) -> u128 {
        ((self.time as u128) << 64) | self.seq as u128
    }
}

#[derive(Clone, Debug, Default)]
pub(crate) struct TimerHeap {
    h: Vec<TimerEntry>,
    /// Position + 1 of each client's entry, 0 if it has none.
    pos: Vec<u32>,
}

impl TimerHeap {
    pub fn new(clients: usize) -> Self {
        TimerHeap { h: Vec::with_capacity(clients), pos: vec![0; clients] }
    }

    #[inline]
    pub fn peek(&self) -> Option<&TimerEntry> {
        self.h.first()
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.h.len()
    }

    /// When `client`'s timer is armed for, if it is.
    #[inline]
    pub fn time_of(&self, client: u32) -> Option<Nanos> {
        let p = self.pos[client as usize];
        (p != 0).then(|| self.h[p as usize - 1].time)
    }

    /// Arm (or re-arm) `client`'s timer.
    #[inline]
    pub fn set(&mut self, client: u32, time: Nanos, seq: u64) {
        let e = TimerEntry { time, seq, client };
        let p = self.pos[client as usize];
        if p == 0 {
            self.h.push(e);
            let i = self.h.len() - 1;
            self.pos[client as usize] = i as u32 + 1;
            self.sift_up(i);
        } else {
            let i = p as usize - 1;
            let earlier = e.key() < self.h[i].key();
            self.h[i] = e;
            if earlier {
                self.sift_up(i);
            } else {
                self.sift_down(i);
            }
        }
    }

    /// Disarm `client`'s timer, if armed.
    #[inline]
    pub fn remove(&mut self, client: u32) {
        let p = self.pos[client as usize];
        if p == 0 {
            return;
        }
        self.pos[client as usize] = 0;
        let i = p as usize - 1;
        let last = self.h.pop().expect("non-empty");
        if i < self.h.len() {
            let earlier = last.key() < self.h[i].key();
            self.h[i] = last;
            self.pos[last.client as usize] = i as u32 + 1;
            if earlier {
                self.sift_up(i);
            } else {
                self.sift_down(i);
            }
        }
    }

    fn sift_up(&mut self, mut i: usize) {
        let e = self.h[i];
        while i > 0 {
            let parent = (i - 1) / ARITY;
            let p = self.h[parent];
            if p.key() <= e.key() {
                break;
            }
            self.h[i] = p;
            self.pos[p.client as usize] = i as u32 + 1;
            i = parent;
        }
        self.h[i] = e;
        self.pos[e.client as usize] = i as u32 + 1;
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.h.len();
        let e = self.h[i];
        loop {
            let first = ARITY * i + 1;
            if first >= n {
                break;
            }
            let last = (first + ARITY).min(n);
            let mut c = first;
            let mut ck = self.h[first].key();
            for j in first + 1..last {
                let k = self.h[j].key();
                if k < ck {
                    c = j;
                    ck = k;
                }
            }
            if e.key() <= ck {
                break;
            }
            let ch = self.h[c];
            self.h[i] = ch;
            self.pos[ch.client as usize] = i as u32 + 1;
            i = c;
        }
        self.h[i] = e;
        self.pos[e.client as usize] = i as u32 + 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use coapcc_cc::{Entropy, SplitMix64};

    #[test]
    fn matches_a_reference_model() {
        let n = 50;
        let mut h = TimerHeap::new(n);
        let mut model: Vec<Option<(u64, u64)>> = vec![None; n];
        let mut rng = SplitMix64::new(4);
        let mut seq = 0;
        for _ in 0..20_000 {
            let c = (rng.next_u64() % n as u64) as u32;
            match rng.next_u64() % 3 {
                0 | 1 => {
                    seq += 1;
                    let t = rng.next_u64() % 1000;
                    h.set(c, t, seq);
                    model[c as usize] = Some((t, seq));
                }
                _ => {
                    h.remove(c);
                    model[c as usize] = None;
                }
            }
            let want = model.iter().enumerate().filter_map(|(c, k)| k.map(|k| (k, c as u32))).min();
            assert_eq!(h.peek().map(|e| ((e.time, e.seq), e.client)), want);
            assert_eq!(h.len(), model.iter().filter(|k| k.is_some()).count());
        }
    }
}
