//! One direction as a chain of elements ([`LinkPath`]): the specialised walk of the testbed's
//! shape and the element-by-element walk of any other chain.

use coapcc_cc::SplitMix64;

use crate::{
    ms_to_ns, validate_chain, JitterFifo, LinkCounters, LossModel, LossStage, Nanos, Outcome, RateOutcome, RateStage,
    StageConfig, Transit,
};

#[derive(Clone, Debug)]
enum Element {
    Rate(RateStage),
    Delay(Nanos),
    Loss(LossStage),
    Jitter(JitterFifo),
}

/// The common shape of a direction, walked without visiting a list of elements:
///
/// `[delays] [FIFO jitter] [delays] rate [delays] [loss] [delays] [jitter] [delays]`
///
/// (both testbed chains, with or without a loss model; loss stages of model `none` are left
/// out: they never draw and never lose). Consecutive delays are summed once, at build time;
/// integer addition is associative, so every time is the one the element-by-element walk
/// computes. Each element keeps the random stream of its index in the chain. A chain of any
/// other shape is walked element by element ([`LinkPath::new`] picks).
#[derive(Clone, Debug)]
struct Shaped {
    pre_delay: Nanos,
    pre_jitter: Option<JitterFifo>,
    to_rate: Nanos,
    rate: RateStage,
    to_loss: Nanos,
    loss: Option<LossStage>,
    to_jitter: Nanos,
    jitter: Option<JitterFifo>,
    tail_delay: Nanos,
}

impl Shaped {
    /// The chain in the shape above, or `None` (also when its delays would overflow).
    fn build(chain: &[StageConfig], seed: u64, stream_base: u64) -> Option<Shaped> {
        // Where the next element goes: 0 in front of the first jitter, 1 in front of the rate
        // stage, 2 behind it, 3 behind the loss stage, 4 behind the last jitter.
        let mut at = 0;
        let mut delays: [Nanos; 5] = [0; 5];
        let (mut pre_jitter, mut rate, mut loss, mut jitter) = (None, None, None, None);
        for (i, st) in chain.iter().enumerate() {
            let rng = || SplitMix64::stream(seed, stream_base + i as u64);
            match st {
                StageConfig::Delay(d) => delays[at] = delays[at].checked_add(ms_to_ns(d.ms))?,
                StageConfig::Loss(LossModel::None) => {}
                StageConfig::Jitter(j) if at == 0 && !j.allow_reordering => {
                    pre_jitter = Some(JitterFifo::new(j, rng()));
                    at = 1;
                }
                StageConfig::Rate(r) if at <= 1 => {
                    rate = Some(RateStage::with_rng(r.clone(), rng()));
                    at = 2;
                }
                StageConfig::Loss(m) if at == 2 => {
                    loss = Some(LossStage::new(m.clone(), rng()));
                    at = 3;
                }
                StageConfig::Jitter(j) if at == 2 || at == 3 => {
                    jitter = Some(JitterFifo::new(j, rng()));
                    at = 4;
                }
                _ => return None,
            }
        }
        let [pre_delay, to_rate, to_loss, to_jitter, tail_delay] = delays;
        Some(Shaped { pre_delay, pre_jitter, to_rate, rate: rate?, to_loss, loss, to_jitter, jitter, tail_delay })
    }

    /// [`LinkPath::transmit`] of a packet that fits the MTU.
    #[inline(always)]
    fn transmit(&mut self, c: &mut LinkCounters, now: Nanos, size: u32) -> Transit {
        let mut t = now + self.pre_delay;
        if let Some(j) = &mut self.pre_jitter {
            t = j.pass(t);
        }
        t += self.to_rate;
        let enqueued = t;
        let departed = match self.rate.offer(now, t, size) {
            RateOutcome::Departs(d) => d,
            RateOutcome::Lost(d) => {
                c.count_error_loss(size);
                return Transit { outcome: Outcome::ErrorLoss, enqueued, departed: d, at: d };
            }
            RateOutcome::Dropped => {
                c.count_buffer_drop(size);
                return Transit { outcome: Outcome::BufferDrop, enqueued, departed: t, at: t };
            }
        };
        t = departed + self.to_loss;
        if let Some(l) = &mut self.loss {
            if l.lose(t) {
                c.count_error_loss(size);
                return Transit { outcome: Outcome::ErrorLoss, enqueued, departed, at: t };
            }
        }
        t += self.to_jitter;
        if let Some(j) = &mut self.jitter {
            t = j.pass(t);
        }
        t += self.tail_delay;
        c.count_delivered(size);
        Transit { outcome: Outcome::Delivered, enqueued, departed, at: t }
    }
}

/// One direction of a link: a chain of elements with counters.
///
/// A chain of the testbed's shape (one rate stage, fixed delays, at most one loss stage and
/// a jitter element on either side of the rate stage) takes a specialised per-packet path;
/// any other chain is walked element by element. Both give the same results (property-tested
/// against each other and against a reference model of the chain).
#[derive(Clone, Debug)]
pub struct LinkPath {
    /// The chain when it has the common shape (then `elements` is empty).
    shaped: Option<Shaped>,
    elements: Vec<Element>,
    mtu: u32,
    pub(crate) fifo: bool,
    /// Counters, without the offered ones (see [`LinkPath::counters`]).
    counters: LinkCounters,
    #[cfg(debug_assertions)]
    last_push: Nanos,
}

impl LinkPath {
    /// Build a direction from its chain. Element `i` that needs randomness draws from
    /// `SplitMix64::stream(seed, stream_base + i)`. Fails on an invalid chain (see
    /// [`validate_chain`], with `mtu` as the largest packet).
    pub fn new(chain: &[StageConfig], mtu: u32, seed: u64, stream_base: u64) -> Result<Self, String> {
        let mut path = Self::new_general(chain, mtu, seed, stream_base)?;
        if let Some(s) = Shaped::build(chain, seed, stream_base) {
            path.shaped = Some(s);
            path.elements = Vec::new();
        }
        Ok(path)
    }

    /// A direction walked element by element, whatever its shape.
    fn new_general(chain: &[StageConfig], mtu: u32, seed: u64, stream_base: u64) -> Result<Self, String> {
        // Buffers must hold at least a 1-byte packet here; the simulator also checks them
        // against its largest message.
        validate_chain(chain, 1)?;
        let mut fifo = true;
        let elements = chain
            .iter()
            .enumerate()
            .map(|(i, st)| {
                let rng = || SplitMix64::stream(seed, stream_base + i as u64);
                match st {
                    StageConfig::Rate(r) => Element::Rate(RateStage::with_rng(r.clone(), rng())),
                    StageConfig::Delay(d) => Element::Delay(ms_to_ns(d.ms)),
                    StageConfig::Loss(m) => Element::Loss(LossStage::new(m.clone(), rng())),
                    StageConfig::Jitter(j) => {
                        fifo &= !j.allow_reordering;
                        Element::Jitter(JitterFifo::new(j, rng()))
                    }
                }
            })
            .collect();
        Ok(LinkPath {
            shaped: None,
            elements,
            mtu,
            fifo,
            counters: LinkCounters::default(),
            #[cfg(debug_assertions)]
            last_push: 0,
        })
    }

    /// The MTU: larger packets are refused ([`Outcome::Oversized`]).
    pub fn mtu(&self) -> u32 {
        self.mtu
    }

    /// Whether deliveries leave in push order (no element allows reordering).
    pub fn is_fifo(&self) -> bool {
        self.fifo
    }

    /// Send a packet of `size` bytes (IP size) into the direction at `now`. Calls must come in
    /// non-decreasing `now`. Allocation-free once the rate stages' queues have grown to their
    /// working size.
    #[inline]
    pub fn transmit(&mut self, now: Nanos, size: u32) -> Transit {
        if size > self.mtu {
            return Transit { outcome: Outcome::Oversized, enqueued: now, departed: now, at: now };
        }
        #[cfg(debug_assertions)]
        {
            debug_assert!(now >= self.last_push, "packets must be pushed in time order");
            self.last_push = now;
        }
        match &mut self.shaped {
            Some(s) => s.transmit(&mut self.counters, now, size),
            None => self.transmit_general(now, size),
        }
    }

    /// [`LinkPath::transmit`] through the chain's elements one by one.
    #[inline(never)]
    fn transmit_general(&mut self, now: Nanos, size: u32) -> Transit {
        let c = &mut self.counters;
        let mut t = now;
        let (mut enqueued, mut departed) = (None, None);
        for el in &mut self.elements {
            match el {
                Element::Rate(r) => {
                    enqueued.get_or_insert(t);
                    match r.offer(now, t, size) {
                        RateOutcome::Departs(d) => {
                            t = d;
                            departed = Some(d);
                        }
                        RateOutcome::Lost(d) => {
                            c.count_error_loss(size);
                            let e = enqueued.unwrap_or(t);
                            return Transit { outcome: Outcome::ErrorLoss, enqueued: e, departed: d, at: d };
                        }
                        RateOutcome::Dropped => {
                            c.count_buffer_drop(size);
                            let e = enqueued.unwrap_or(t);
                            return Transit { outcome: Outcome::BufferDrop, enqueued: e, departed: t, at: t };
                        }
                    }
                }
                Element::Delay(d) => t += *d,
                Element::Loss(l) => {
                    if l.lose(t) {
                        c.count_error_loss(size);
                        let e = enqueued.unwrap_or(now);
                        return Transit {
                            outcome: Outcome::ErrorLoss,
                            enqueued: e,
                            departed: departed.unwrap_or(e),
                            at: t,
                        };
                    }
                }
                Element::Jitter(j) => t = j.pass(t),
            }
        }
        c.count_delivered(size);
        let e = enqueued.unwrap_or(now);
        Transit { outcome: Outcome::Delivered, enqueued: e, departed: departed.unwrap_or(e), at: t }
    }

    /// Packet and byte counters.
    pub fn counters(&self) -> LinkCounters {
        self.counters.with_offered()
    }

    /// The first rate stage (the bottleneck of the testbed chains), if any.
    pub fn rate_stage(&self) -> Option<&RateStage> {
        if let Some(s) = &self.shaped {
            return Some(&s.rate);
        }
        self.elements.iter().find_map(|e| match e {
            Element::Rate(r) => Some(r),
            _ => None,
        })
    }

    /// Serialisation time of the first rate stage before `end`, ns (0 without a rate stage).
    /// Call it at `end`, before any later push.
    pub fn busy_ns_until(&self, end: Nanos) -> u64 {
        self.rate_stage().map_or(0, |r| r.busy_ns_until(end))
    }
}

#[cfg(test)]
mod tests {
    use crate::*;
    use proptest::prelude::*;

    fn fixed_jitter(ms: f64) -> StageConfig {
        StageConfig::Jitter(JitterConfig { min_ms: ms, max_ms: ms, allow_reordering: false })
    }

    #[test]
    fn downlink_rate_after_rest_of_path_is_exact() {
        // Rest of path fixed 15 ms, then 30 kbit/s, 400 ms.
        let mut chain = testbed_downlink(1_000_000, LossModel::None);
        chain[0] = fixed_jitter(15.0);
        let mut l = LinkPath::new(&chain, 296, 1, 0).unwrap();
        let a = l.transmit(0, 94);
        assert_eq!(a.enqueued, 15_000_000);
        assert_eq!(a.departed, 15_000_000 + 25_066_667);
        assert_eq!(a.at, 415_000_000 + 25_066_667);
        // Pushed 10 ms later: arrives at the rate stage at 25 ms while the first is still being
        // serialised (until 40.07 ms): queues behind it with the exact remainder carried.
        let b = l.transmit(10_000_000, 94);
        assert_eq!(b.enqueued, 25_000_000);
        assert_eq!(b.departed, 15_000_000 + 50_133_334);
        // Pushed after the backlog drained: starts at its own arrival.
        let c = l.transmit(100_000_000, 94);
        assert_eq!(c.departed, 115_000_000 + 25_066_667);
    }

    #[test]
    fn rest_of_path_is_fifo() {
        let chain = vec![StageConfig::Jitter(JitterConfig { min_ms: 10.0, max_ms: 20.0, allow_reordering: false })];
        let mut l = LinkPath::new(&chain, 296, 3, 0).unwrap();
        let mut prev = 0;
        let mut held = 0;
        for i in 0..10_000u64 {
            let t = l.transmit(i * 1_000_000, 50).at; // a packet every 1 ms: jitter spread 10 ms
            assert!(t >= prev);
            assert!(t >= i * 1_000_000 + 10_000_000);
            if t > i * 1_000_000 + 20_000_000 {
                unreachable!("never more than the max delay beyond the previous delivery")
            }
            if t == prev {
                held += 1;
            }
            prev = t;
        }
        assert!(held > 1000, "FIFO held back packets: {held}");
        // With reordering allowed, deliveries are arrival + U.
        let chain = vec![StageConfig::Jitter(JitterConfig { min_ms: 10.0, max_ms: 20.0, allow_reordering: true })];
        let mut l: Link<u64> = Link::new(&chain, 296, 3, 0).unwrap();
        for i in 0..100u64 {
            l.push(i * 1_000_000, 50, i);
        }
        assert_eq!(l.held_nth(0), None, "no place in line on a direction that may reorder");
        let mut out = vec![];
        while let Some(p) = l.poll(u64::MAX) {
            out.push(p);
        }
        assert_eq!(out.len(), 100);
        assert!(out.windows(2).any(|w| w[0] > w[1]), "expected some reordering");
    }

    #[test]
    fn loss_after_rate_uses_capacity() {
        let chain = testbed_uplink(10_000, LossModel::Bernoulli { p: 1.0 });
        let mut l = LinkPath::new(&chain, 296, 1, 0).unwrap();
        let a = l.transmit(0, 39);
        assert_eq!(a.outcome, Outcome::ErrorLoss);
        assert_eq!(a.departed, 5_200_000);
        let b = l.transmit(0, 39);
        assert_eq!(b.departed, 10_400_000, "the lost packet occupied the serialiser");
        assert_eq!(l.rate_stage().unwrap().busy_ns(), 10_400_000);
        let c = l.counters();
        assert_eq!((c.offered_packets, c.error_loss_packets, c.delivered_packets), (2, 2, 0));
    }

    #[test]
    fn oversized_is_refused() {
        let mut l = LinkPath::new(&testbed_uplink(28_200, LossModel::None), 296, 1, 0).unwrap();
        assert_eq!(l.transmit(0, 297).outcome, Outcome::Oversized);
        assert_eq!(l.counters().offered_packets, 0);
        assert_eq!(l.transmit(0, 296).outcome, Outcome::Delivered);
    }

    #[test]
    fn testbed_chains_take_the_shaped_path() {
        let sched = RateSchedule::parse("0 30000; 1 0; 2 10000 0.1").unwrap();
        for loss in [
            LossModel::None,
            LossModel::Bernoulli { p: 0.02 },
            LossModel::profile("high", ErrorClock::Time, 5.0).unwrap(),
            LossModel::profile("medium", ErrorClock::Packet, 5.0).unwrap(),
        ] {
            for mut chain in [testbed_uplink(28_200, loss.clone()), testbed_downlink(1_410_000, loss.clone())] {
                assert!(LinkPath::new(&chain, 296, 1, 0).unwrap().shaped.is_some(), "{chain:?}");
                for st in &mut chain {
                    if let StageConfig::Rate(r) = st {
                        r.schedule = Some(sched.clone());
                    }
                }
                assert!(LinkPath::new(&chain, 296, 1, 0).unwrap().shaped.is_some(), "{chain:?}");
            }
        }
        // Two rate stages, a loss in front of the rate stage, no rate stage: walked.
        let mut two = testbed_uplink(28_200, LossModel::None);
        two.extend(testbed_downlink(28_200, LossModel::None));
        let lossy_front = [StageConfig::Loss(LossModel::Bernoulli { p: 0.1 }), two[0].clone()];
        for chain in [&two[..], &lossy_front[..], &two[1..2]] {
            let p = LinkPath::new(chain, 296, 1, 0).unwrap();
            assert!(p.shaped.is_none() && p.elements.len() == chain.len(), "{chain:?}");
        }
    }

    fn arb_loss() -> impl Strategy<Value = LossModel> {
        prop_oneof![
            3 => Just(LossModel::None),
            1 => (0.0f64..=1.0).prop_map(|p| LossModel::Bernoulli { p }),
            1 => (0.0f64..=1.0, 0.0f64..=1.0, 0.0f64..=1.0, 0.0f64..=1.0)
                .prop_map(|(p, r, loss_low, loss_burst)| LossModel::GilbertElliott { p, r, loss_low, loss_burst }),
            1 => (0.001f64..2.0, 0.001f64..2.0, 0.0f64..=1.0, 0.0f64..=1.0).prop_map(
                |(low_mean_s, burst_mean_s, loss_low, loss_burst)| LossModel::GilbertElliottTime {
                    low_mean_s,
                    burst_mean_s,
                    loss_low,
                    loss_burst
                }
            ),
        ]
    }

    fn arb_stage() -> impl Strategy<Value = StageConfig> {
        let rate = (
            prop_oneof![Just(8_000u64), 1_000u64..200_000, 200_000u64..100_000_000],
            prop_oneof![300u64..2_000, 2_000u64..50_000, Just(u64::MAX)],
            any::<bool>(),
            prop_oneof![Just(0u32), 0u32..40],
            proptest::option::weighted(0.2, Just("0 30000; 0.5 0; 0.7 8000 0.2; 1.5 60000")),
        )
            .prop_map(|(bits_per_s, buffer_bytes, in_service, overhead, sched)| {
                StageConfig::Rate(RateConfig {
                    bits_per_s,
                    buffer_bytes,
                    buffer_counts_in_service: in_service,
                    per_packet_overhead_bytes: overhead,
                    schedule: sched.map(|s| RateSchedule::parse(s).unwrap()),
                })
            });
        prop_oneof![
            3 => rate,
            2 => prop_oneof![Just(0.0), 0.0f64..500.0].prop_map(|ms| StageConfig::Delay(DelayConfig { ms })),
            2 => arb_loss().prop_map(StageConfig::Loss),
            2 => (0.0f64..30.0, 0.0f64..30.0, proptest::bool::weighted(0.15)).prop_map(|(a, b, reorder)| {
                StageConfig::Jitter(JitterConfig { min_ms: a.min(b), max_ms: a.max(b), allow_reordering: reorder })
            }),
        ]
    }

    /// Random chains, mostly of the testbed's shape (so that both paths are exercised).
    fn arb_chain() -> impl Strategy<Value = Vec<StageConfig>> {
        let testbed = (any::<bool>(), 300u64..5_000, arb_loss(), proptest::option::of(arb_stage())).prop_map(
            |(up, buffer, loss, extra)| {
                let mut c = if up { testbed_uplink(buffer, loss) } else { testbed_downlink(buffer, loss) };
                c.extend(extra);
                c
            },
        );
        prop_oneof![1 => testbed, 2 => proptest::collection::vec(arb_stage(), 0..7)]
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(400))]

        /// The specialised path, the element-by-element walk and the reference model of the
        /// chain give the same fates, times, counters and rate-stage statistics, packet by
        /// packet, over random chains (any order of rate, delay, loss and jitter elements,
        /// scheduled rates, every loss model), sizes (oversized ones included), entry times
        /// and buffers; and a [`Link`] hands the payloads out in the same order.
        #[test]
        fn shaped_general_and_reference_paths_agree(
            chain in arb_chain(),
            seed: u64,
            steps in proptest::collection::vec((0u64..40_000_000, 0u32..320, any::<bool>()), 1..400),
        ) {
            prop_assume!(validate_chain(&chain, 1).is_ok());
            let mut fast = LinkPath::new(&chain, 296, seed, STREAM_UPLINK).unwrap();
            let mut general = LinkPath::new_general(&chain, 296, seed, STREAM_UPLINK).unwrap();
            let mut reference = crate::reference::RefPath::new(&chain, 296, seed, STREAM_UPLINK);
            let mut link: Link<usize> = Link::from_path(LinkPath::new(&chain, 296, seed, STREAM_UPLINK).unwrap());
            let mut ref_link: Link<usize> = Link::from_path(LinkPath::new_general(&chain, 296, seed, STREAM_UPLINK).unwrap());
            let (mut now, mut out, mut ref_out) = (0u64, vec![], vec![]);
            for (k, (gap, size, burst)) in steps.into_iter().enumerate() {
                if !burst {
                    now += gap;
                }
                let want = reference.transmit(now, size);
                prop_assert_eq!(fast.transmit(now, size), want);
                prop_assert_eq!(general.transmit(now, size), want);
                prop_assert_eq!(link.push(now, size, k), want);
                ref_link.push(now, size, k);
                while let Some(p) = link.poll(now) {
                    out.push(p);
                }
                while let Some(p) = ref_link.poll(now) {
                    ref_out.push(p);
                }
                prop_assert_eq!(fast.counters(), reference.counters());
                prop_assert_eq!(general.counters(), reference.counters());
                let (f, g, r) = (fast.rate_stage(), general.rate_stage(), reference.rate_stage());
                prop_assert_eq!(f.is_some(), r.is_some());
                if let (Some(f), Some(g), Some(r)) = (f, g, r) {
                    prop_assert_eq!(f.stats(), r.stats());
                    prop_assert_eq!(g.stats(), r.stats());
                    prop_assert_eq!(f.last_departure(), r.last_departure());
                    prop_assert_eq!(f.busy_ns(), r.busy_ns());
                    prop_assert_eq!(f.busy_ns_until(now), r.busy_ns_until(now));
                    prop_assert_eq!(f.busy_ns_until(now + gap), r.busy_ns_until(now + gap));
                }
            }
            prop_assert_eq!(fast.busy_ns_until(now), general.busy_ns_until(now));
            prop_assert_eq!(link.in_flight(), ref_link.in_flight());
            // What the link holds is what it delivers from now on (in that order when FIFO).
            let mut held: Vec<usize> = link.held().copied().collect();
            prop_assert_eq!(held.len(), link.in_flight());
            let before = out.len();
            while let Some(p) = link.poll(u64::MAX) {
                out.push(p);
            }
            let mut rest = out[before..].to_vec();
            if !link.path().fifo {
                held.sort_unstable();
                rest.sort_unstable();
            }
            prop_assert_eq!(held, rest);
            while let Some(p) = ref_link.poll(u64::MAX) {
                ref_out.push(p);
            }
            prop_assert_eq!(out, ref_out);
        }
    }
}
