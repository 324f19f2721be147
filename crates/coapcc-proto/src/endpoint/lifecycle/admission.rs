//! NSTART admission (RFC 7252 §4.7): per peer, at most NSTART exchanges in flight; further
//! ones wait in a FIFO queue and start, in order, when a slot frees and the algorithm's
//! pacing (`earliest_start`) allows.

use std::collections::VecDeque;

use coapcc_cc::{CongestionControl, Instant};

/// The waiting line of an [`Nstart`]: a FIFO of items (with an urgent end at the front).
/// Implemented for [`VecDeque`] (the real endpoint queues exchange ids) and for
/// [`Waiting`] (a count of identical items: the simulator's compact clients).
pub trait WaitQueue {
    /// What waits.
    type Item;
    /// Append `item` at the back.
    fn push_back(&mut self, item: Self::Item);
    /// Put `item` first (it continues an interaction already under way).
    fn push_front(&mut self, item: Self::Item);
    /// Take the first item.
    fn pop_front(&mut self) -> Option<Self::Item>;
    /// Items waiting.
    fn len(&self) -> usize;
    /// Nothing waits.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T> WaitQueue for VecDeque<T> {
    type Item = T;
    #[inline]
    fn push_back(&mut self, item: T) {
        VecDeque::push_back(self, item)
    }
    #[inline]
    fn push_front(&mut self, item: T) {
        VecDeque::push_front(self, item)
    }
    #[inline]
    fn pop_front(&mut self) -> Option<T> {
        VecDeque::pop_front(self)
    }
    #[inline]
    fn len(&self) -> usize {
        VecDeque::len(self)
    }
}

/// A queue of interchangeable items, kept as a count (4 bytes, no allocation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Waiting(u32);

impl WaitQueue for Waiting {
    type Item = ();
    #[inline]
    fn push_back(&mut self, _: ()) {
        self.0 = self.0.saturating_add(1);
    }
    #[inline]
    fn push_front(&mut self, _: ()) {
        self.0 = self.0.saturating_add(1);
    }
    #[inline]
    fn pop_front(&mut self) -> Option<()> {
        (self.0 > 0).then(|| self.0 -= 1)
    }
    #[inline]
    fn len(&self) -> usize {
        self.0 as usize
    }
}

/// What [`Nstart::poll_start`] decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission<T> {
    /// Start `item` now; it holds a slot. `in_flight`: exchanges that held a slot before it
    /// (what [`ConExchange::start`](super::ConExchange::start) passes to the algorithm).
    Start {
        /// The queue head, now admitted.
        item: T,
        /// Slots held before this one.
        in_flight: u32,
    },
    /// The queue head may start only at this instant (the algorithm's pacing): wake then.
    WaitUntil(Instant),
    /// Nothing to start: the queue is empty or every slot is held (no wake-up needed; a
    /// slot's release or a new item is what changes it).
    Idle,
}

/// One peer's NSTART state: slots held by exchanges in flight, and the exchanges waiting.
/// `limit` (NSTART) is passed to the calls, so that one configuration serves every peer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Nstart<Q> {
    active: u32,
    queue: Q,
}

impl<Q: WaitQueue> Nstart<Q> {
    /// No exchange in flight, `queue` waiting (normally empty).
    pub fn new(queue: Q) -> Self {
        Nstart { active: 0, queue }
    }

    /// Queue `item` behind the others.
    #[inline]
    pub fn push_back(&mut self, item: Q::Item) {
        self.queue.push_back(item);
    }

    /// Queue `item` before the others (the next step of an interaction under way).
    #[inline]
    pub fn push_front(&mut self, item: Q::Item) {
        self.queue.push_front(item);
    }

    /// Slots held (exchanges in flight).
    #[inline]
    pub fn in_flight(&self) -> u32 {
        self.active
    }

    /// Items waiting.
    #[inline]
    pub fn waiting(&self) -> usize {
        self.queue.len()
    }

    /// Nothing in flight and nothing waiting.
    #[inline]
    pub fn is_idle(&self) -> bool {
        self.active == 0 && self.queue.is_empty()
    }

    /// Does the head of the queue wait for a slot, rather than for pacing or nothing?
    /// (`true` when something waits and a slot is free.)
    #[inline]
    pub fn can_start(&self, limit: u32) -> bool {
        !self.queue.is_empty() && self.active < limit.max(1)
    }

    /// Start the queue head if a slot is free (of `limit`, NSTART; 0 counts as 1) and the
    /// algorithm's pacing allows at `now` ([`ready_at`](super::ready_at)).
    #[inline]
    pub fn poll_start<C: CongestionControl + ?Sized>(
        &mut self,
        limit: u32,
        cc: &C,
        now: Instant,
    ) -> Admission<Q::Item> {
        if !self.can_start(limit) {
            return Admission::Idle;
        }
        if let Some(t) = super::ready_at(cc, now) {
            return Admission::WaitUntil(t);
        }
        let item = self.queue.pop_front().expect("not empty");
        let in_flight = self.active;
        self.active += 1;
        Admission::Start { item, in_flight }
    }

    /// `item` arrives while nothing waits: [`Nstart::push_back`] then [`Nstart::poll_start`]
    /// in one step, the same decision; `item` is queued only when it cannot start now (so
    /// the usual start, a slot free and no pacing, never touches the queue).
    #[inline]
    pub fn offer<C: CongestionControl + ?Sized>(
        &mut self,
        item: Q::Item,
        limit: u32,
        cc: &C,
        now: Instant,
    ) -> Admission<Q::Item> {
        debug_assert!(self.queue.is_empty(), "offer is for an empty queue");
        if self.active >= limit.max(1) {
            self.queue.push_back(item);
            return Admission::Idle;
        }
        if let Some(t) = super::ready_at(cc, now) {
            self.queue.push_back(item);
            return Admission::WaitUntil(t);
        }
        let in_flight = self.active;
        self.active += 1;
        Admission::Start { item, in_flight }
    }

    /// An exchange that held a slot finished (acknowledged, answered, failed): free it.
    #[inline]
    pub fn release(&mut self) {
        self.active = self.active.saturating_sub(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use coapcc_cc::AlgorithmConfig;

    #[test]
    fn fifo_under_nstart() {
        let cc = AlgorithmConfig::parse("default").unwrap().build();
        let now = Instant::ZERO;
        let mut n = Nstart::new(VecDeque::new());
        assert_eq!(n.poll_start(2, &cc, now), Admission::Idle);
        for x in 1..=4u32 {
            n.push_back(x);
        }
        n.push_front(0);
        assert_eq!(n.poll_start(2, &cc, now), Admission::Start { item: 0, in_flight: 0 });
        assert_eq!(n.poll_start(2, &cc, now), Admission::Start { item: 1, in_flight: 1 });
        assert_eq!(n.poll_start(2, &cc, now), Admission::Idle, "both slots held");
        n.release();
        assert_eq!(n.poll_start(2, &cc, now), Admission::Start { item: 2, in_flight: 1 });
        assert_eq!((n.in_flight(), n.waiting()), (2, 2));
        n.release();
        n.release();
        n.release(); // never below zero
        assert_eq!(n.in_flight(), 0);
        assert_eq!(n.poll_start(0, &cc, now), Admission::Start { item: 3, in_flight: 0 }, "NSTART 0 counts as 1");
        assert_eq!(n.poll_start(0, &cc, now), Admission::Idle);
    }

    /// The registry's default algorithm, paced: no exchange may start before `not_before`.
    struct Paced {
        inner: coapcc_cc::Algorithm,
        not_before: Instant,
    }

    impl CongestionControl for Paced {
        fn name(&self) -> &'static str {
            "paced"
        }
        fn max_retransmit(&self) -> u32 {
            self.inner.max_retransmit()
        }
        fn reset(&mut self, now: Instant) {
            self.inner.reset(now)
        }
        fn start_exchange(&mut self, now: Instant, n: u32, rng: &mut dyn coapcc_cc::Entropy) -> coapcc_cc::Exchange {
            self.inner.start_exchange(now, n, rng)
        }
        fn on_timeout(&mut self, now: Instant, ex: &mut coapcc_cc::Exchange) -> coapcc_cc::TimeoutAction {
            self.inner.on_timeout(now, ex)
        }
        fn on_ack(&mut self, now: Instant, ex: &coapcc_cc::Exchange, ack: &coapcc_cc::AckInfo) {
            self.inner.on_ack(now, ex, ack)
        }
        fn on_give_up(&mut self, now: Instant, ex: &coapcc_cc::Exchange, r: coapcc_cc::GiveUpReason) {
            self.inner.on_give_up(now, ex, r)
        }
        fn earliest_start(&self, now: Instant) -> Instant {
            self.not_before.max(now)
        }
        fn snapshot(&self) -> coapcc_cc::Snapshot {
            self.inner.snapshot()
        }
    }

    #[test]
    fn pacing_holds_the_head() {
        let t = Instant::from_millis;
        let cc = Paced { inner: AlgorithmConfig::parse("default").unwrap().build(), not_before: t(50) };
        let mut n = Nstart::new(Waiting::default());
        n.push_back(());
        n.push_back(());
        assert_eq!(n.poll_start(1, &cc, t(10)), Admission::WaitUntil(t(50)));
        assert_eq!(n.waiting(), 2, "waiting for pacing admits nothing");
        assert_eq!(n.poll_start(1, &cc, t(50)), Admission::Start { item: (), in_flight: 0 });
        assert_eq!(n.poll_start(1, &cc, t(60)), Admission::Idle, "NSTART 1: the slot is held");
        n.release();
        assert_eq!(n.poll_start(1, &cc, t(60)), Admission::Start { item: (), in_flight: 0 });
        assert!(n.poll_start(1, &cc, t(60)) == Admission::Idle && n.waiting() == 0);
        n.release();
        assert!(n.is_idle());
    }

    /// `offer` on an empty queue decides as `push_back` then `poll_start` and leaves the
    /// same state: slots free or held (NSTART 1 and 2), paced or not.
    #[test]
    fn offer_is_push_then_poll() {
        let t = Instant::from_millis;
        let cc = Paced { inner: AlgorithmConfig::parse("default").unwrap().build(), not_before: t(50) };
        for limit in [1, 2] {
            for held in 0..=limit {
                for now in [t(10), t(50), t(70)] {
                    let mut a = Nstart::new(VecDeque::new());
                    for _ in 0..held {
                        a.push_back(0u32);
                        assert!(matches!(a.poll_start(limit, &cc, t(50)), Admission::Start { .. }));
                    }
                    let mut b = a.clone();
                    a.push_back(7);
                    let expected = a.poll_start(limit, &cc, now);
                    assert_eq!(b.offer(7, limit, &cc, now), expected, "limit {limit}, held {held}, {now:?}");
                    assert_eq!(b, a);
                }
            }
        }
    }
}
