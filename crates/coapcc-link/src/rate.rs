//! Rate + byte-limited tail-drop buffer (testbed spec §1.1 stage 1, §1.5).

use coapcc_cc::SplitMix64;
use serde::{Deserialize, Serialize};

use crate::schedule::{self, Busy, RateSchedule, Segments};
use crate::Nanos;

const NS_PER_S: u64 = 1_000_000_000;

/// Parameters of a rate stage: a serialiser of `bits_per_s` fed by a byte-limited FIFO.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateConfig {
    /// Link rate, bit/s (integer). Testbed: 60 000 uplink, 30 000 downlink.
    pub bits_per_s: u64,
    /// Buffer limit in bytes (AMBIG-T2: bytes, same size both directions). A packet is
    /// admitted iff `queued_bytes + size <= buffer_bytes`. Default 28 200.
    pub buffer_bytes: u64,
    /// AMBIG-T2: whether the packet being serialised counts in `queued_bytes`. Default
    /// `true` (netem-like).
    #[serde(default = "yes")]
    pub buffer_counts_in_service: bool,
    /// AMBIG-T4: bytes added to every packet by this stage (link-layer header), counted in
    /// the buffer and in the serialisation time. Default 0 (the IP packet size).
    #[serde(default)]
    pub per_packet_overhead_bytes: u32,
    /// Time-varying rate and loss ([`crate::schedule`]): `bits_per_s` applies until the first
    /// change point. Absent (the default) for a constant rate; left out of the JSON then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<RateSchedule>,
}

fn yes() -> bool {
    true
}

/// Counters of one rate stage.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RateStats {
    /// Packets admitted (and therefore serialised).
    pub admitted_packets: u64,
    /// Bytes admitted, as offered (IP size, without the stage's overhead).
    pub admitted_bytes: u64,
    /// Bytes the stage counted (IP size + overhead) for admitted packets.
    pub counted_bytes: u64,
    /// Tail drops.
    pub dropped_packets: u64,
    /// Bytes of tail-dropped packets (IP size).
    pub dropped_bytes: u64,
    /// Largest buffer occupancy seen right after an admission (stage bytes, in-service
    /// packet included iff `buffer_counts_in_service`).
    pub max_queue_bytes: u64,
}

/// One admitted packet the stage still holds: its departure (last bit out, rounded up to the
/// next whole ns), serialisation start (rounded down), and counted bytes.
#[derive(Clone, Copy, Debug, Default)]
struct Pending {
    departure: Nanos,
    start: Nanos,
    bytes: u64,
}

/// The packets a rate stage holds, in admission order: a ring buffer addressed by absolute
/// positions (`u64`, which never wrap), position `p` living in `buf[p & (buf.len() - 1)]`
/// (`buf.len()` is 0 or a power of two).
///
/// Departures never decrease along the ring (the serialiser serves in order), so "every packet
/// that departs after `x`" is always a suffix. Two such suffixes are tracked, `head <= occ <=
/// tail`:
/// - `[head, tail)`: the packets kept, at least every packet still there after the entry time
///   `now` of the latest offer (departure `> now`) and the packet that offer admitted, if any.
///   Older packets (departure `<= now`) are forgotten lazily, when the ring is full; until
///   then the queries skip them (they only look at departures after `now`, and
///   [`RateStage::last_departure`] checks the time too).
/// - `[occ, tail)`: the packets still in the buffer at the latest arrival time `t >= now`
///   (departure `> t`, plus the packet just admitted). Their counted bytes are kept as a
///   running sum in [`RateStage`], so an arrival finds the occupancy without walking the
///   queue: the cursor only moves forward while arrivals come in order.
#[derive(Clone, Debug, Default)]
struct Held {
    buf: Vec<Pending>,
    head: u64,
    occ: u64,
    tail: u64,
}

impl Held {
    /// The packet at position `pos` (`head <= pos < tail`).
    #[inline(always)]
    fn get(&self, pos: u64) -> &Pending {
        &self.buf[pos as usize & (self.buf.len() - 1)]
    }

    /// Append a packet (at position `tail`); `now` is the entry time of the current offer.
    #[inline(always)]
    fn push(&mut self, p: Pending, now: Nanos) {
        if self.tail - self.head == self.buf.len() as u64 {
            self.make_room(now);
        }
        let mask = self.buf.len() - 1;
        self.buf[self.tail as usize & mask] = p;
        self.tail += 1;
    }

    /// The ring is full: forget the packets gone by `now` (all before `occ`, as `now <= t`),
    /// and double the ring only if that freed nothing. Like a `VecDeque`, the ring is then at
    /// most twice the largest backlog; every call either frees slots that as many pushes fill
    /// before the next call, or doubles, so both are amortised O(1) per packet.
    #[cold]
    #[inline(never)]
    fn make_room(&mut self, now: Nanos) {
        // The first packet kept, by bisection over `[head, occ)` (departures never decrease
        // along the ring): the ring is full, and a long backlog left thousands gone.
        let (mut lo, mut hi) = (self.head, self.occ);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.get(mid).departure <= now {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        debug_assert_eq!(lo, (self.head..self.occ).find(|&p| self.get(p).departure > now).unwrap_or(self.occ));
        self.head = lo;
        if !self.buf.is_empty() && self.tail - self.head < self.buf.len() as u64 {
            return;
        }
        let cap = (self.buf.len() * 2).max(16);
        let mut buf = vec![Pending::default(); cap];
        for pos in self.head..self.tail {
            buf[pos as usize & (cap - 1)] = *self.get(pos);
        }
        self.buf = buf;
    }

    /// The held packets, oldest first.
    fn iter(&self) -> impl DoubleEndedIterator<Item = &Pending> + '_ {
        (self.head..self.tail).map(move |pos| self.get(pos))
    }
}

/// A serialiser with a byte-limited tail-drop FIFO in front of it.
///
/// Time is exact: the end of the backlog is kept as `busy_int + busy_frac / bits_per_s`
/// nanoseconds, so back-to-back packets accumulate no rounding drift (94 B at 30 kbit/s is
/// 25 066 666 + 2/3 ns; three of them end at exactly 75 200 000 ns). Times handed to the next
/// element are rounded *up* to the next whole nanosecond: a packet never leaves before its
/// last bit.
///
/// Packets must be offered in non-decreasing entry time `now` and with `now <= t` (every
/// element of a chain is FIFO, so a chain fed in time order also offers them in
/// non-decreasing arrival time `t`). `now` (the time the packet entered the chain) only prunes
/// state that no later packet can observe. Arrival times that go back (a stage driven
/// directly) are exact too, at the cost of one walk of the held packets.
///
/// Per packet, with a constant rate, the stage does no division for a packet size it has
/// seen recently, no 128-bit arithmetic and no walk of its queue: the occupancy at the
/// arrival is a running sum, the busy time is derived from the admitted bytes when asked.
#[derive(Clone, Debug)]
pub struct RateStage {
    cfg: RateConfig,
    busy_int: Nanos,
    busy_frac: u64,
    held: Held,
    /// Counted bytes of `held[occ..tail]`: the occupancy at `last_arrival`, the packet
    /// admitted then included.
    occ_bytes: u64,
    /// Arrival time of the latest offer.
    last_arrival: Nanos,
    /// Entry time of the latest offer, and whether it admitted its packet.
    last_now: Nanos,
    last_admitted: bool,
    /// Counters; `counted_bytes` is derived when read (admitted bytes + packets × overhead).
    stats: RateStats,
    /// With a schedule: its segments, the loss draws' stream and the busy time.
    sched: Option<Box<Scheduled>>,
    /// The serialisation time of the last two distinct packet sizes (counted bytes), most
    /// recent first: `(bytes, whole ns, remainder)`. Packets of a run come in a few sizes, so
    /// the per-packet path divides only when a size is new (`u64::MAX`: empty).
    ser_memo: [(u64, Nanos, u64); 2],
}

#[derive(Clone, Debug)]
struct Scheduled {
    seg: Segments,
    rng: SplitMix64,
    busy: Busy,
}

/// What a rate stage did with a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateOutcome {
    /// Admitted: its last bit leaves at this time.
    Departs(Nanos),
    /// Tail-dropped at arrival.
    Dropped,
    /// Admitted and serialised, then lost to a scheduled link error; its last bit left at
    /// this time.
    Lost(Nanos),
}

impl RateStage {
    /// A new, idle stage. `cfg.bits_per_s` must be positive, or the schedule valid (checked by
    /// [`crate::validate_chain`]). Scheduled losses draw from a fixed stream; see
    /// [`RateStage::with_rng`].
    pub fn new(cfg: RateConfig) -> Self {
        Self::with_rng(cfg, SplitMix64::new(0))
    }

    /// A new, idle stage whose scheduled losses (if any) draw from `rng`.
    pub fn with_rng(cfg: RateConfig, rng: SplitMix64) -> Self {
        let sched = cfg.schedule.as_ref().map(|s| {
            assert!(s.validate(cfg.bits_per_s).is_ok(), "invalid rate schedule");
            Box::new(Scheduled { seg: Segments::new(cfg.bits_per_s, s), rng, busy: Busy::default() })
        });
        assert!(cfg.bits_per_s > 0 || sched.is_some(), "rate must be positive");
        RateStage {
            cfg,
            busy_int: 0,
            busy_frac: 0,
            held: Held::default(),
            occ_bytes: 0,
            last_arrival: 0,
            last_now: 0,
            last_admitted: false,
            stats: RateStats::default(),
            sched,
            ser_memo: [(u64::MAX, 0, 0); 2],
        }
    }

    /// The configuration.
    pub fn config(&self) -> &RateConfig {
        &self.cfg
    }

    /// Counters so far.
    pub fn stats(&self) -> RateStats {
        RateStats { counted_bytes: self.counted_bytes(), ..self.stats }
    }

    /// Bytes counted for the admitted packets: each packet's IP size plus the overhead.
    fn counted_bytes(&self) -> u64 {
        self.stats.admitted_bytes + self.stats.admitted_packets * self.cfg.per_packet_overhead_bytes as u64
    }

    /// Exact serialisation time of `bytes` counted bytes, as (whole ns, remainder in units of
    /// 1/bits_per_s ns).
    #[inline]
    pub fn serialisation(bits_per_s: u64, bytes: u64) -> (Nanos, u64) {
        if bytes < 1 << 30 {
            // bytes·8·1e9 < 2^63: 64-bit arithmetic is exact (and much cheaper than 128-bit).
            let num = bytes * 8 * NS_PER_S;
            (num / bits_per_s, num % bits_per_s)
        } else {
            let num = bytes as u128 * 8 * NS_PER_S as u128;
            ((num / bits_per_s as u128) as u64, (num % bits_per_s as u128) as u64)
        }
    }

    /// `int + (a + b) / rate` ns as (whole ns, remainder), for remainders `a, b < rate`: the
    /// same as `(int + (a + b) / rate, (a + b) % rate)`, without a division.
    #[inline(always)]
    pub fn add_remainder(rate: u64, int: Nanos, a: u64, b: u64) -> (Nanos, u64) {
        debug_assert!(a < rate && b < rate);
        // a + b < 2·rate <= 2^65 only overflows when rate > 2^63; wrapping keeps it exact then
        // (a + b - rate < rate fits).
        let (sum, over) = a.overflowing_add(b);
        if over || sum >= rate {
            (int + 1, sum.wrapping_sub(rate))
        } else {
            (int, sum)
        }
    }

    /// [`RateStage::serialisation`] of `bytes` at this stage's constant rate, memoised.
    #[inline(always)]
    fn memo_serialisation(&mut self, bytes: u64) -> (Nanos, u64) {
        let m0 = self.ser_memo[0];
        if m0.0 == bytes {
            return (m0.1, m0.2);
        }
        self.memo_miss(bytes)
    }

    #[cold]
    #[inline(never)]
    fn memo_miss(&mut self, bytes: u64) -> (Nanos, u64) {
        let [m0, m1] = self.ser_memo;
        let r = if m1.0 == bytes { (m1.1, m1.2) } else { Self::serialisation(self.cfg.bits_per_s, bytes) };
        self.ser_memo = [(bytes, r.0, r.1), m0];
        r
    }

    /// The packets the stage holds that depart after `t`, newest first: those that depart
    /// after both `t` and the entry time of the latest offer. (The ring may keep older packets,
    /// see `Held`. The packet the latest offer admitted is held even when it left at that
    /// entry time, which only an empty packet served at once does: it adds nothing to an
    /// occupancy or a busy time, so leaving it out here changes neither.)
    fn held_after(&self, t: Nanos) -> impl Iterator<Item = &Pending> + '_ {
        let after = t.max(self.last_now);
        self.held.iter().rev().take_while(move |p| p.departure > after)
    }

    /// Buffer occupancy (stage bytes) an arrival at `t` would see, before it is admitted.
    pub fn occupancy_at(&self, t: Nanos) -> u64 {
        let mut occ = 0;
        let mut first = None;
        for p in self.held_after(t) {
            occ += p.bytes;
            first = Some(p.bytes);
        }
        if !self.cfg.buffer_counts_in_service {
            // The first packet still present at t is being serialised: every packet before it
            // has left and it arrived no later than t.
            occ -= first.unwrap_or(0);
        }
        occ
    }

    /// Arrival times went back (only when a stage is driven directly): recount the occupancy
    /// from every held packet.
    #[cold]
    #[inline(never)]
    fn rewind(&mut self) {
        self.held.occ = self.held.head;
        self.occ_bytes = self.held.iter().map(|p| p.bytes).sum();
    }

    /// Offer a packet of `size` bytes (IP size) arriving at `t`; `now <= t` is when it entered
    /// the chain.
    #[inline(always)]
    pub fn offer(&mut self, now: Nanos, t: Nanos, size: u32) -> RateOutcome {
        debug_assert!(now <= t);
        if t < self.last_arrival {
            self.rewind();
        }
        self.last_arrival = t;
        self.last_now = now;
        // Packets whose last bit left by t no longer occupy the buffer.
        let q = &mut self.held;
        while q.occ < q.tail {
            let p = q.get(q.occ);
            if p.departure > t {
                break;
            }
            self.occ_bytes -= p.bytes;
            q.occ += 1;
        }
        let bytes = size as u64 + self.cfg.per_packet_overhead_bytes as u64;
        let mut occ = self.occ_bytes;
        if !self.cfg.buffer_counts_in_service && q.occ < q.tail {
            // The first packet still present at t is the one being serialised.
            occ -= q.get(q.occ).bytes;
        }
        if occ + bytes > self.cfg.buffer_bytes {
            self.last_admitted = false;
            self.stats.dropped_packets += 1;
            self.stats.dropped_bytes += size as u64;
            return RateOutcome::Dropped;
        }
        // Start now if the serialiser is idle at t (its exact backlog end is <= t).
        let (s_int, s_frac) = if self.busy_int < t || (self.busy_int == t && self.busy_frac == 0) {
            (t, 0)
        } else {
            (self.busy_int, self.busy_frac)
        };
        let (d_int, d_frac, lost) = match &mut self.sched {
            None => {
                let rate = self.cfg.bits_per_s;
                let (ser_int, ser_frac) = self.memo_serialisation(bytes);
                // Both remainders are below `rate`: their sum carries at most one whole ns.
                let (d_int, d_frac) = Self::add_remainder(rate, s_int + ser_int, s_frac, ser_frac);
                (d_int, d_frac, false)
            }
            Some(sc) => Self::serve_scheduled(sc, s_int, s_frac, bytes),
        };
        self.busy_int = d_int;
        self.busy_frac = d_frac;
        let departure = d_int + u64::from(d_frac > 0);
        self.held.push(Pending { departure, start: s_int, bytes }, now);
        self.last_admitted = true;
        self.occ_bytes += bytes;
        self.stats.admitted_packets += 1;
        self.stats.admitted_bytes += size as u64;
        self.stats.max_queue_bytes = self.stats.max_queue_bytes.max(occ + bytes);
        if lost {
            RateOutcome::Lost(departure)
        } else {
            RateOutcome::Departs(departure)
        }
    }

    /// Serialise `bytes` from the exact time `s_int + s_frac / rate` under the schedule: the
    /// exact end and whether a scheduled link error loses the packet.
    #[inline(never)]
    fn serve_scheduled(sc: &mut Scheduled, s_int: Nanos, s_frac: u64, bytes: u64) -> (Nanos, u64, bool) {
        let work = bytes as u128 * 8 * NS_PER_S as u128;
        let (d_int, d_frac) = schedule::serve(&mut sc.seg, &mut sc.busy, s_int, s_frac as u128, work);
        // The segment in force when the last bit leaves decides a scheduled loss.
        let (k, _, _) = sc.seg.at(d_int);
        let p = sc.seg.loss(k);
        let lost = p > 0.0 && crate::loss::unit(&mut sc.rng) < p;
        (d_int, d_frac, lost)
    }

    /// Total serialisation time of every admitted packet, ns (exact, rounded down).
    pub fn busy_ns(&self) -> u64 {
        match &self.sched {
            // With a schedule: exact within a segment, rounded down to 1 ps per segment.
            Some(sc) => sc.busy.ns(),
            // Every admitted packet took bytes·8·1e9 / rate ns: the sum is exact from the total.
            None => (self.counted_bytes() as u128 * 8 * NS_PER_S as u128 / self.cfg.bits_per_s as u128) as u64,
        }
    }

    /// Serialisation time spent before `end`, ns (±1 ns per packet straddling `end`). Valid
    /// when no packet entered the chain after `end` (call it at `end`).
    pub fn busy_ns_until(&self, end: Nanos) -> u64 {
        let mut after = 0u64;
        for p in self.held_after(end) {
            after += p.departure - p.start.max(end);
        }
        self.busy_ns().saturating_sub(after)
    }

    /// Departure (last bit out, rounded up to the whole ns, as [`RateOutcome`] reports it) of
    /// the most recently admitted packet, while the stage still holds it (it is forgotten at
    /// the first offer entering at or after that time). Right after an admission this is the
    /// admitted packet's departure from this stage; queue traces read it then.
    pub fn last_departure(&self) -> Option<Nanos> {
        let q = &self.held;
        // The newest packet kept is still held iff the latest offer admitted it or it leaves
        // after that offer's entry time (the ring may keep older packets: see `Held`).
        (q.tail > q.head).then(|| q.get(q.tail - 1).departure).filter(|&d| self.last_admitted || d > self.last_now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stage(rate: u64, buffer: u64) -> RateStage {
        RateStage::new(RateConfig {
            bits_per_s: rate,
            buffer_bytes: buffer,
            buffer_counts_in_service: true,
            per_packet_overhead_bytes: 0,
            schedule: None,
        })
    }

    #[test]
    fn serialisation_94_bytes_at_30k_is_exact() {
        // 94 B · 8 / 30 000 bit/s = 25 066 666.67 ns: 25 066 666 ns and 20 000/30 000 ns.
        assert_eq!(RateStage::serialisation(30_000, 94), (25_066_666, 20_000));
        let mut s = stage(30_000, 1_000_000);
        assert_eq!(s.offer(0, 0, 94), RateOutcome::Departs(25_066_667));
        // Back to back: the remainder is carried, 2 × 25 066 666.67 = 50 133 333.33.
        assert_eq!(s.offer(0, 0, 94), RateOutcome::Departs(50_133_334));
        // Third packet ends at exactly 75 200 000 ns: no drift.
        assert_eq!(s.offer(0, 0, 94), RateOutcome::Departs(75_200_000));
        assert_eq!(s.busy_ns(), 75_200_000);
        // 3000 packets queued back to back: exactly 3000 × 752/30 ms = 75.2 s.
        let mut s = stage(30_000, u64::MAX);
        let mut last = 0;
        for _ in 0..3000 {
            if let RateOutcome::Departs(d) = s.offer(0, 0, 94) {
                last = d;
            }
        }
        assert_eq!(last, 75_200_000_000);
    }

    #[test]
    fn back_to_back_queueing_and_idle_restart() {
        let mut s = stage(60_000, 10_000);
        // 39 B at 60 kbit/s = 5.2 ms.
        assert_eq!(s.offer(0, 0, 39), RateOutcome::Departs(5_200_000));
        // Arrives while busy: waits.
        assert_eq!(s.offer(1_000_000, 1_000_000, 39), RateOutcome::Departs(10_400_000));
        // Arrives after the backlog drained: starts at its own arrival.
        assert_eq!(s.offer(20_000_000, 20_000_000, 39), RateOutcome::Departs(25_200_000));
        // Arrives exactly when the previous one leaves: starts then.
        assert_eq!(s.offer(25_200_000, 25_200_000, 39), RateOutcome::Departs(30_400_000));
    }

    #[test]
    fn tail_drop_at_the_byte_limit_in_service_counted() {
        // Limit 300 B: 3 × 100 B fit (queued + size <= limit), the 4th is dropped.
        let mut s = stage(8_000, 300); // 100 B = 100 ms
        assert_eq!(s.offer(0, 0, 100), RateOutcome::Departs(100_000_000));
        assert_eq!(s.offer(0, 0, 100), RateOutcome::Departs(200_000_000));
        assert_eq!(s.offer(0, 0, 100), RateOutcome::Departs(300_000_000));
        assert_eq!(s.offer(0, 0, 1), RateOutcome::Dropped);
        assert_eq!(s.stats().dropped_packets, 1);
        assert_eq!(s.stats().dropped_bytes, 1);
        // At 100 ms the first has left: 200 B queued, 100 B fit, 101 B do not.
        assert_eq!(s.offer(100_000_000, 100_000_000, 101), RateOutcome::Dropped);
        assert_eq!(s.offer(100_000_000, 100_000_000, 100), RateOutcome::Departs(400_000_000));
        assert_eq!(s.stats().max_queue_bytes, 300);
    }

    #[test]
    fn in_service_packet_not_counted_when_configured() {
        let mut s = RateStage::new(RateConfig {
            bits_per_s: 8_000,
            buffer_bytes: 200,
            buffer_counts_in_service: false,
            per_packet_overhead_bytes: 0,
            schedule: None,
        });
        assert!(matches!(s.offer(0, 0, 100), RateOutcome::Departs(_))); // in service
        assert!(matches!(s.offer(0, 0, 100), RateOutcome::Departs(_))); // queued 100
        assert!(matches!(s.offer(0, 0, 100), RateOutcome::Departs(_))); // queued 200
        assert_eq!(s.offer(0, 0, 1), RateOutcome::Dropped);
        // With in-service counting the third would have been dropped.
        let mut s = stage(8_000, 200);
        s.offer(0, 0, 100);
        s.offer(0, 0, 100);
        assert_eq!(s.offer(0, 0, 100), RateOutcome::Dropped);
    }

    #[test]
    fn overhead_counts_in_buffer_and_time() {
        let mut s = RateStage::new(RateConfig {
            bits_per_s: 8_000,
            buffer_bytes: 114,
            buffer_counts_in_service: true,
            per_packet_overhead_bytes: 14,
            schedule: None,
        });
        assert_eq!(s.offer(0, 0, 100), RateOutcome::Departs(114_000_000));
        assert_eq!(s.offer(0, 0, 1), RateOutcome::Dropped);
        assert_eq!(s.stats().counted_bytes, 114);
        assert_eq!(s.stats().admitted_bytes, 100);
    }

    #[test]
    fn future_arrivals_see_departures_before_them() {
        // Arrival time later than entry time (a stage in front delayed it).
        let mut s = stage(8_000, 150);
        assert_eq!(s.offer(0, 0, 100), RateOutcome::Departs(100_000_000));
        // Entered at 0 but arrives at 100 ms: the first packet has left exactly then.
        assert_eq!(s.offer(0, 100_000_000, 100), RateOutcome::Departs(200_000_000));
        // Arrives at 150 ms: 100 B in service, another 100 B does not fit in 150.
        assert_eq!(s.offer(10, 150_000_000, 100), RateOutcome::Dropped);
        assert_eq!(s.offer(10, 150_000_000, 50), RateOutcome::Departs(250_000_000));
    }

    proptest::proptest! {
        /// The division-free carry equals the division it replaces, over every rate and every
        /// pair of remainders below it.
        #[test]
        fn add_remainder_equals_division(rate in 1u64.., a in proptest::num::u64::ANY, b in proptest::num::u64::ANY, int in 0u64..1 << 62) {
            let (a, b) = (a % rate, b % rate);
            let sum = a as u128 + b as u128;
            let want = (int + (sum / rate as u128) as u64, (sum % rate as u128) as u64);
            proptest::prop_assert_eq!(RateStage::add_remainder(rate, int, a, b), want);
        }

        /// Departures of a stage fed packets of a few sizes (the memoised serialisation) equal
        /// an exact rational model: end = max(arrival, previous end) + bytes·8/rate, departure
        /// = end rounded up to a whole ns.
        #[test]
        fn departures_match_exact_model(
            rate in 1u64..10_000_000_000,
            sizes in proptest::collection::vec(1u32..2_000, 1..4),
            steps in proptest::collection::vec((0u64..50_000_000, 0usize..4), 1..200),
        ) {
            let mut s = stage(rate, u64::MAX);
            let mut t = 0u64;
            let mut end: u128 = 0; // in units of 1/rate ns
            for (gap, k) in steps {
                t += gap;
                let bytes = sizes[k % sizes.len()];
                end = end.max(t as u128 * rate as u128) + bytes as u128 * 8 * NS_PER_S as u128;
                let want = end.div_ceil(rate as u128) as u64;
                proptest::prop_assert_eq!(s.offer(t, t, bytes), RateOutcome::Departs(want));
            }
        }
    }

    fn arb_schedule() -> impl proptest::strategy::Strategy<Value = Option<RateSchedule>> {
        use proptest::prelude::*;
        prop_oneof![
            3 => Just(None),
            1 => proptest::collection::vec((0u64..3_000, prop_oneof![Just(0u64), 1_000u64..200_000], 0.0f64..0.5), 1..5)
                .prop_map(|pts| {
                    let mut at = 0;
                    let mut points: Vec<_> = pts
                        .into_iter()
                        .map(|(gap_ms, bits_per_s, loss)| {
                            at += gap_ms + 1;
                            schedule::RatePoint { at_s: at as f64 / 1e3, bits_per_s, loss }
                        })
                        .collect();
                    points.last_mut().expect("non-empty").bits_per_s += 1; // the last rate is positive
                    Some(RateSchedule { points })
                }),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(512))]

        /// The stage (running occupancy, ring of held packets, busy time derived from the
        /// admitted bytes) agrees with the reference model (queue walked at every arrival,
        /// busy time summed in 128 bits) on every outcome, counter, occupancy, last departure
        /// and busy time, for constant and scheduled rates, both in-service conventions, any
        /// overhead, entry times in order and arrival times that may go back (`now <= t`).
        #[test]
        fn matches_the_reference_model(
            bits_per_s in proptest::prop_oneof![
                proptest::strategy::Just(8_000u64), // 1 byte per ms: departures on the ms grid
                1u64..100,
                1_000u64..1_000_000,
                1_000_000u64..1 << 40,
            ],
            grid in proptest::prop_oneof![proptest::strategy::Just(1u64), proptest::strategy::Just(1_000_000u64)],
            buffer_bytes in proptest::prop_oneof![1u64..400, 400u64..20_000, proptest::strategy::Just(u64::MAX)],
            in_service: bool,
            overhead in proptest::prop_oneof![proptest::strategy::Just(0u32), 0u32..60],
            schedule in arb_schedule(),
            seed: u64,
            steps in proptest::collection::vec(
                (
                    0u64..30_000_000,
                    proptest::prop_oneof![proptest::strategy::Just(0u64), 0u64..40_000_000],
                    // Empty packets too: served in no time, they leave when they arrive.
                    proptest::prop_oneof![1 => proptest::strategy::Just(0u32), 9 => 0u32..1_600],
                    0u64..60_000_000,
                ),
                1..300,
            ),
        ) {
            let cfg = RateConfig {
                bits_per_s,
                buffer_bytes,
                buffer_counts_in_service: in_service,
                per_packet_overhead_bytes: overhead,
                schedule,
            };
            let mut s = RateStage::with_rng(cfg.clone(), SplitMix64::new(seed));
            let mut r = crate::reference::RefRate::new(cfg, SplitMix64::new(seed));
            let mut now = 0u64;
            for (k, (gap, ahead, size, probe)) in steps.into_iter().enumerate() {
                // Bursts: most packets enter together, a few after a gap.
                // On the ms grid, departures often equal later entry and arrival times.
                let (gap, ahead, probe) = (gap / grid * grid, ahead / grid * grid, probe / grid * grid);
                if k % 3 == 0 {
                    now += gap;
                }
                let t = now + ahead;
                proptest::prop_assert_eq!(s.offer(now, t, size), r.offer(now, t, size));
                proptest::prop_assert_eq!(s.stats(), r.stats());
                proptest::prop_assert_eq!(s.last_departure(), r.last_departure());
                proptest::prop_assert_eq!(s.occupancy_at(t), r.occupancy_at(t));
                // Probes after and before the entry time.
                for x in [now + probe, now.saturating_sub(probe)] {
                    proptest::prop_assert_eq!(s.occupancy_at(x), r.occupancy_at(x));
                    proptest::prop_assert_eq!(s.busy_ns_until(x), r.busy_ns_until(x));
                }
                proptest::prop_assert_eq!(s.busy_ns(), r.busy_ns());
            }
        }
    }

    #[test]
    fn held_packets_stay_bounded_by_the_backlog() {
        // 100 000 packets, at most a handful in the buffer at once: the ring forgets the
        // departed ones when it is full instead of growing.
        let mut s = stage(8_000, 1_000); // 1 byte per ms
        for i in 0..100_000u64 {
            assert!(matches!(s.offer(i * 30_000_000, i * 30_000_000, 20), RateOutcome::Departs(_)));
        }
        assert!(s.held.buf.len() <= 16, "{}", s.held.buf.len());
        // A steady backlog of 600 packets (one leaves every 10 ms, one arrives every 10 ms):
        // the ring stays at the next power of two, as a `VecDeque` would.
        let mut s = stage(8_000, u64::MAX);
        for _ in 0..600 {
            s.offer(0, 0, 10);
        }
        for i in 0..20_000u64 {
            s.offer(i * 10_000_000, i * 10_000_000, 10);
        }
        assert_eq!(s.held.buf.len(), 1_024);
        // A backlog of 10 000 packets (queued at once) grows it to the next power of two, and
        // every one of them is still seen.
        let mut s = stage(8_000, u64::MAX);
        for _ in 0..10_000 {
            s.offer(0, 0, 10);
        }
        assert_eq!(s.held.buf.len(), 16_384);
        assert_eq!(s.occupancy_at(0), 100_000);
        assert_eq!(s.busy_ns_until(0), 0);
        assert_eq!(s.last_departure(), Some(100_000_000_000));
    }

    #[test]
    fn busy_until_clips_the_backlog() {
        let mut s = stage(8_000, 10_000);
        s.offer(0, 0, 100); // 0..100 ms
        s.offer(0, 0, 100); // 100..200 ms
        s.offer(0, 300_000_000, 100); // 300..400 ms
        assert_eq!(s.busy_ns(), 300_000_000);
        assert_eq!(s.busy_ns_until(150_000_000), 150_000_000);
        assert_eq!(s.busy_ns_until(250_000_000), 200_000_000);
        assert_eq!(s.busy_ns_until(1_000_000_000), 300_000_000);
    }
}
