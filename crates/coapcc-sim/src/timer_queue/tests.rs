//! The timer queue against a plain model: random operations and properties.

use super::*;

/// Pops every pending timer in order (one loading-ahead step before each), as
/// `(time, seq, client)`: what the tests compare with a model's order.
fn drain(h: &mut TimerQueue) -> Vec<(Nanos, u64, u32)> {
    let mut got = Vec::new();
    while let Some(e) = h.peek() {
        h.step(|_| {});
        got.push((e.time, e.seq(), e.client()));
        h.remove(e.client());
    }
    got
}
mod model {
    use super::*;
    use coapcc_cc::{Entropy, SplitMix64};

    /// Random arms, re-arms, disarms and pops against a plain model, with times that only
    /// go forward like the engine's clock (`now` = the last popped time; deadlines >= now),
    /// including deadlines earlier than every pending one and equal deadlines.
    /// Returns how many slots the loading ahead handed out.
    fn check(n: usize, span: u64, steps: usize, seed: u64) -> usize {
        let mut h = TimerQueue::new(n);
        // Loading ahead is a hint: it must not change what comes out, and it names only
        // armed slots.
        h.set_look_ahead(seed % 2 == 0);
        let mut model: Vec<Option<(u64, u64)>> = vec![None; n];
        let mut rng = SplitMix64::new(seed);
        let mut seq = 0;
        let mut now = 0u64;
        let mut handed = 0;
        for _ in 0..steps {
            let c = (rng.next_u64() % n as u64) as u32;
            match rng.next_u64() % 5 {
                0 | 1 => {
                    seq += 1;
                    let t = now + rng.next_u64() % span;
                    h.set(c, t, seq);
                    model[c as usize] = Some((t, seq));
                }
                2 => {
                    h.remove(c);
                    model[c as usize] = None;
                }
                _ => {
                    // Fire the front timer: the clock moves to it and the slot is re-armed
                    // or disarmed, as the engine does.
                    if let Some(e) = h.peek() {
                        now = e.time;
                        if rng.next_u64() % 2 == 0 {
                            seq += 1;
                            let t = now + rng.next_u64() % span;
                            h.set(e.client(), t, seq);
                            model[e.client() as usize] = Some((t, seq));
                        } else {
                            h.remove(e.client());
                            model[e.client() as usize] = None;
                        }
                    }
                }
            }
            h.step(|c| {
                assert!(model[c as usize].is_some(), "only armed slots are handed out");
                handed += 1;
            });
            assert!(h.handed <= h.words && h.words <= h.front.len());
            let want = model.iter().enumerate().filter_map(|(c, k)| k.map(|k| (k, c as u32))).min();
            assert_eq!(h.peek().map(|e| ((e.time, e.seq()), e.client())), want);
            assert_eq!(h.len(), model.iter().filter(|k| k.is_some()).count());
            for c in 0..n as u32 {
                assert_eq!(h.time_of(c), model[c as usize].map(|k| k.0));
            }
        }
        handed
    }

    #[test]
    fn matches_a_reference_model() {
        check(50, 1000, 20_000, 4);
        check(7, 3, 20_000, 5); // many equal deadlines
        check(300, 1 << 40, 20_000, 6); // deadlines far beyond the wheel
        check(300, 1 << 31, 20_000, 8); // across level-1 slots
        check(1000, 1 << 22, 20_000, 9); // within a few level-0 slots
                                         // Level-1 slots too full to go straight to the front: spread over level 0, whose
                                         // entries are loaded ahead.
        assert!(check(2000, 1 << 31, 20_000, 10) > 0);
        check(1, 10, 2_000, 7);
    }

    #[test]
    fn many_arms_into_the_current_slot() {
        // One timer makes its level-1 slot the current one whole (a small slot goes straight
        // to the front); then thousands are armed into that slot and the one before it, as
        // when every client of a large population arms its first timer: beyond a few, they
        // wait in the `late` heap, and the timers still come out in exact order, whether
        // loading ahead or not.
        for look in [false, true] {
            let n = 5000;
            let mut h = TimerQueue::new(n);
            h.set_look_ahead(look);
            let base = 40u64 << S1;
            let mut rng = SplitMix64::new(11);
            let mut seq = 1;
            h.set(0, base + 5, seq);
            assert_eq!(h.peek().map(|e| e.client()), Some(0));
            let mut want = vec![(base + 5, seq, 0u32)];
            for c in 1..n as u32 {
                seq += 1;
                let t = base - (1 << S1) + rng.next_u64() % (2 << S1);
                h.set(c, t, seq);
                want.push((t, seq, c));
                assert!(h.front.len() - h.head <= SPREAD + 1, "the sorted front stays small");
            }
            want.sort_unstable();
            let got = drain(&mut h);
            assert_eq!(got, want);
        }
    }

    #[test]
    fn stale_entries_are_bounded() {
        // Re-arming leaves stale entries behind; purging keeps them bounded and the
        // order exact.
        let mut h = TimerQueue::new(8);
        let mut seq = 0;
        for k in 0..100_000u64 {
            seq += 1;
            let c = (k % 8) as u32;
            h.set(c, 60_000_000_000 + (k * 7919) % 50_000_000_000, seq);
            assert!(h.stored <= 2 * h.live + PURGE_SLACK, "{} entries for {} timers", h.stored, h.live);
            if k % 97 == 0 {
                let held =
                    h.front.len() - h.head + h.late.len() + h.l1.iter().map(Vec::len).sum::<usize>() + h.far.len();
                assert_eq!(h.stored, held, "the count of stored entries is exact");
            }
        }
        let mut last = (0, 0);
        let mut popped = 0;
        while let Some(e) = h.peek() {
            assert!((e.time, e.seq()) > last);
            assert_eq!(h.time_of(e.client()), Some(e.time));
            last = (e.time, e.seq());
            h.remove(e.client());
            popped += 1;
        }
        assert_eq!(popped, 8);
        assert_eq!(h.stored, 0);
    }
}

mod props {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    /// What a step does to the queue (times are offsets from the clock, `now`).
    #[derive(Clone, Debug)]
    enum Op {
        /// Arm (or re-arm) slot `c` for `now + dt`.
        Arm(u32, u64),
        /// Arm `k` consecutive slots from `c` for `now + dt + i * gap`: a burst that fills one
        /// level-1 slot beyond a plain sort's size, or spreads over many.
        Burst(u32, u16, u64, u64),
        Disarm(u32),
        /// Fire the earliest timer (the clock moves to it); re-arm its slot `dt` later, or not.
        Fire(Option<u64>),
    }

    /// Offsets at every scale the wheel cares about: within a level-0 slot, within and
    /// across level-1 slots, and beyond the wheel (`far`).
    fn offset() -> impl Strategy<Value = u64> {
        prop_oneof![0..(1u64 << S0), 0..(1u64 << S1), 0..(8u64 << S1), 0..(600u64 << S1)]
    }

    fn op(n: u32) -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => (0..n, offset()).prop_map(|(c, d)| Op::Arm(c, d)),
            1 => (0..n, 1..300u16, offset(), 0..(1u64 << (S0 - 2))).prop_map(|(c, k, d, g)| Op::Burst(c, k, d, g)),
            1 => (0..n).prop_map(Op::Disarm),
            4 => proptest::option::of(offset()).prop_map(Op::Fire),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Whatever the arms, re-arms, disarms and fires, with or without loading ahead, the
        /// queue's front is always the earliest armed `(time, seq)` of a plain ordered set,
        /// the loading ahead hands out only armed slots, and the count of stored entries (which
        /// bounds the stale ones) is exact.
        #[test]
        fn front_is_always_the_earliest_armed(look: bool, ops in proptest::collection::vec(op(600), 1..400)) {
            let n = 600usize;
            let mut h = TimerQueue::new(n);
            h.set_look_ahead(look);
            let mut armed: Vec<Option<(u64, u64)>> = vec![None; n];
            let mut model = BTreeSet::new();
            let (mut now, mut seq) = (0u64, 0u64);
            let mut arm = |h: &mut TimerQueue, model: &mut BTreeSet<(u64, u64, u32)>, c: u32, t: u64| {
                seq += 1;
                if let Some((t0, s0)) = armed[c as usize].take() {
                    model.remove(&(t0, s0, c));
                }
                h.set(c, t, seq);
                armed[c as usize] = Some((t, seq));
                model.insert((t, seq, c));
                armed[c as usize]
            };
            for op in ops {
                match op {
                    Op::Arm(c, d) => {
                        arm(&mut h, &mut model, c, now + d);
                    }
                    Op::Burst(c, k, d, g) => {
                        for i in 0..u64::from(k) {
                            let slot = ((u64::from(c) + i) % n as u64) as u32;
                            arm(&mut h, &mut model, slot, now + d + i * g);
                        }
                    }
                    Op::Disarm(c) => {
                        h.remove(c);
                        // The model: find and drop c's entry.
                        if let Some(&(t, s, _)) = model.iter().find(|k| k.2 == c) {
                            model.remove(&(t, s, c));
                        }
                    }
                    Op::Fire(re) => {
                        if let Some(e) = h.peek() {
                            now = e.time;
                            let c = e.client();
                            match re {
                                Some(d) => {
                                    arm(&mut h, &mut model, c, now + d);
                                }
                                None => {
                                    h.remove(c);
                                    model.remove(&(e.time, e.seq(), c));
                                }
                            }
                        }
                    }
                }
                let mut handed_ok = true;
                let model_ref = &model;
                h.step(|c| handed_ok &= model_ref.iter().any(|k| k.2 == c));
                prop_assert!(handed_ok, "only armed slots are handed out");
                prop_assert!(h.handed <= h.words && h.words <= h.front.len());
                let want = model.iter().next().map(|&(t, s, c)| (t, s, c));
                prop_assert_eq!(h.peek().map(|e| (e.time, e.seq(), e.client())), want);
                prop_assert_eq!(h.len(), model.len());
                let held = h.front.len() - h.head + h.late.len() + h.l1.iter().map(Vec::len).sum::<usize>() + h.far.len();
                prop_assert_eq!(h.stored, held, "the count of stored entries is exact");
            }
            // Drain: every armed timer comes out, in order.
            let got = drain(&mut h);
            prop_assert_eq!(got, model.into_iter().collect::<Vec<_>>());
        }
    }

    #[test]
    fn a_large_level1_slot_is_sorted_exactly() {
        // More than DIRECT entries in one level-1 slot, several per level-0 slot, armed in
        // reverse order with equal deadlines among them: the counting sort places them by
        // level-0 slot and each level-0 slot is sorted, ties by `seq`.
        for look in [false, true] {
            let mut h = TimerQueue::new(1000);
            h.set_look_ahead(look);
            let base = 5u64 << S1;
            let mut want = Vec::new();
            for c in 0..1000u32 {
                let t = base + ((999 - u64::from(c)) % 300) * (1 << (S0 - 1));
                h.set(c, t, u64::from(c) + 1);
                want.push((t, u64::from(c) + 1, c));
            }
            want.sort_unstable();
            let got = drain(&mut h);
            assert_eq!(got, want);
        }
    }
}

/// The bucket sort of small slots orders the live entries exactly as the plain sort (equal
/// deadlines by `seq`, several entries in one level-0 slot) and drops the stale ones, for
/// every size it takes.
#[test]
fn bucket_sort_matches_the_plain_sort() {
    use coapcc_cc::{Entropy, SplitMix64};
    let mut rng = SplitMix64::new(7);
    let slot = 5u64 << S1;
    for n in 0..=DIRECT {
        for round in 0..50 {
            // Sequence numbers unique, in no order; deadlines in one level-1 slot, few distinct
            // ones in some rounds (ties, crowded level-0 slots), spread in the others.
            let mut seqs: Vec<u64> = (1..=n as u64).collect();
            for i in (1..seqs.len()).rev() {
                seqs.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
            }
            let span = if round % 2 == 0 { 4 << S0 } else { 1 << S1 };
            let mut armed = vec![(0, 0); n];
            let v: Vec<TimerEntry> = seqs
                .iter()
                .enumerate()
                .map(|(c, &s)| {
                    let e = TimerEntry::new(slot + rng.next_u64() % span, s, c as u32);
                    if rng.next_u64() % 4 != 0 {
                        armed[c] = (e.time, e.tag);
                    }
                    e
                })
                .collect();
            let mut want: Vec<TimerEntry> =
                v.iter().copied().filter(|e| armed[e.client() as usize].1 == e.tag).collect();
            TimerQueue::sort(&mut want);
            let mut got = vec![TimerEntry::new(1, 1, 0)];
            let dropped = TimerQueue::append_sorted(&mut got, &v, &armed);
            assert_eq!(got[1..], want[..], "{n} entries");
            assert_eq!(dropped, n - want.len());
        }
    }
}
