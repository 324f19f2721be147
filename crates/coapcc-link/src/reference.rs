//! Test oracle: the link model as it was before the per-packet path was specialised (a rate
//! stage that walks its queue for the occupancy and accumulates busy time in `u128`, a chain
//! walked element by element). The property tests of `lib.rs` and `rate.rs` check that the
//! optimised model gives exactly the same fates, times, counters and statistics.

use std::collections::VecDeque;

use coapcc_cc::SplitMix64;

use crate::schedule::{self, Busy, Segments};
use crate::{
    ms_to_ns, JitterFifo, LinkCounters, LossStage, Nanos, Outcome, RateConfig, RateOutcome, RateStats, StageConfig,
    Transit,
};

const NS_PER_S: u64 = 1_000_000_000;

#[derive(Clone, Copy, Debug)]
struct Pending {
    departure: Nanos,
    start: Nanos,
    bytes: u64,
}

#[derive(Clone, Debug)]
struct Scheduled {
    seg: Segments,
    rng: SplitMix64,
    busy: Busy,
}

/// The rate stage as it was: the queue pruned by the entry time, the occupancy recomputed by
/// walking it, the busy time summed in `u128`.
#[derive(Clone, Debug)]
pub(crate) struct RefRate {
    cfg: RateConfig,
    busy_int: Nanos,
    busy_frac: u64,
    queue: VecDeque<Pending>,
    queued_bytes: u64,
    busy_num: u128,
    stats: RateStats,
    sched: Option<Box<Scheduled>>,
}

impl RefRate {
    pub(crate) fn new(cfg: RateConfig, rng: SplitMix64) -> Self {
        let sched = cfg
            .schedule
            .as_ref()
            .map(|s| Box::new(Scheduled { seg: Segments::new(cfg.bits_per_s, s), rng, busy: Busy::default() }));
        RefRate {
            cfg,
            busy_int: 0,
            busy_frac: 0,
            queue: VecDeque::new(),
            queued_bytes: 0,
            busy_num: 0,
            stats: RateStats::default(),
            sched,
        }
    }

    pub(crate) fn stats(&self) -> RateStats {
        self.stats
    }

    pub(crate) fn occupancy_at(&self, t: Nanos) -> u64 {
        let mut occ = self.queued_bytes;
        for p in &self.queue {
            if p.departure <= t {
                occ -= p.bytes;
            } else {
                if !self.cfg.buffer_counts_in_service {
                    occ -= p.bytes;
                }
                break;
            }
        }
        occ
    }

    pub(crate) fn offer(&mut self, now: Nanos, t: Nanos, size: u32) -> RateOutcome {
        while let Some(p) = self.queue.front() {
            if p.departure > now {
                break;
            }
            self.queued_bytes -= p.bytes;
            self.queue.pop_front();
        }
        let bytes = size as u64 + self.cfg.per_packet_overhead_bytes as u64;
        let occ = self.occupancy_at(t);
        if occ + bytes > self.cfg.buffer_bytes {
            self.stats.dropped_packets += 1;
            self.stats.dropped_bytes += size as u64;
            return RateOutcome::Dropped;
        }
        let (s_int, s_frac) = if self.busy_int < t || (self.busy_int == t && self.busy_frac == 0) {
            (t, 0)
        } else {
            (self.busy_int, self.busy_frac)
        };
        let mut lost = false;
        let work = bytes as u128 * 8 * NS_PER_S as u128;
        let (d_int, d_frac) = if let Some(sc) = &mut self.sched {
            let (d_int, d_frac) = schedule::serve(&mut sc.seg, &mut sc.busy, s_int, s_frac as u128, work);
            let (k, _, _) = sc.seg.at(d_int);
            let p = sc.seg.loss(k);
            lost = p > 0.0 && crate::loss::unit(&mut sc.rng) < p;
            (d_int, d_frac)
        } else {
            // The plain rational sum: (s_int + s_frac / rate) + work / rate.
            let rate = self.cfg.bits_per_s as u128;
            let total = s_frac as u128 + work;
            (s_int + (total / rate) as u64, (total % rate) as u64)
        };
        self.busy_int = d_int;
        self.busy_frac = d_frac;
        let departure = d_int + u64::from(d_frac > 0);
        self.queue.push_back(Pending { departure, start: s_int, bytes });
        self.queued_bytes += bytes;
        self.busy_num += work;
        self.stats.admitted_packets += 1;
        self.stats.admitted_bytes += size as u64;
        self.stats.counted_bytes += bytes;
        self.stats.max_queue_bytes = self.stats.max_queue_bytes.max(occ + bytes);
        if lost {
            RateOutcome::Lost(departure)
        } else {
            RateOutcome::Departs(departure)
        }
    }

    pub(crate) fn busy_ns(&self) -> u64 {
        match &self.sched {
            Some(sc) => sc.busy.ns(),
            None => (self.busy_num / self.cfg.bits_per_s as u128) as u64,
        }
    }

    pub(crate) fn busy_ns_until(&self, end: Nanos) -> u64 {
        let mut after = 0u64;
        for p in self.queue.iter().rev() {
            if p.departure <= end {
                break;
            }
            after += p.departure - p.start.max(end);
        }
        self.busy_ns().saturating_sub(after)
    }

    pub(crate) fn last_departure(&self) -> Option<Nanos> {
        self.queue.back().map(|p| p.departure)
    }
}

#[derive(Clone, Debug)]
enum Element {
    Rate(RefRate),
    Delay(Nanos),
    Loss(LossStage),
    Jitter(JitterFifo),
}

/// A direction as it was: every element of the chain visited in turn for every packet.
#[derive(Clone, Debug)]
pub(crate) struct RefPath {
    elements: Vec<Element>,
    mtu: u32,
    counters: LinkCounters,
}

impl RefPath {
    pub(crate) fn new(chain: &[StageConfig], mtu: u32, seed: u64, stream_base: u64) -> Self {
        let elements = chain
            .iter()
            .enumerate()
            .map(|(i, st)| {
                let rng = || SplitMix64::stream(seed, stream_base + i as u64);
                match st {
                    StageConfig::Rate(r) => Element::Rate(RefRate::new(r.clone(), rng())),
                    StageConfig::Delay(d) => Element::Delay(ms_to_ns(d.ms)),
                    StageConfig::Loss(m) => Element::Loss(LossStage::new(m.clone(), rng())),
                    StageConfig::Jitter(j) => Element::Jitter(JitterFifo::new(j, rng())),
                }
            })
            .collect();
        RefPath { elements, mtu, counters: LinkCounters::default() }
    }

    pub(crate) fn counters(&self) -> LinkCounters {
        self.counters
    }

    pub(crate) fn rate_stage(&self) -> Option<&RefRate> {
        self.elements.iter().find_map(|e| match e {
            Element::Rate(r) => Some(r),
            _ => None,
        })
    }

    pub(crate) fn transmit(&mut self, now: Nanos, size: u32) -> Transit {
        if size > self.mtu {
            return Transit { outcome: Outcome::Oversized, enqueued: now, departed: now, at: now };
        }
        let c = &mut self.counters;
        c.offered_packets += 1;
        c.offered_bytes += size as u64;
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
                            c.error_loss_packets += 1;
                            c.error_loss_bytes += size as u64;
                            let e = enqueued.unwrap_or(t);
                            return Transit { outcome: Outcome::ErrorLoss, enqueued: e, departed: d, at: d };
                        }
                        RateOutcome::Dropped => {
                            c.buffer_drop_packets += 1;
                            c.buffer_drop_bytes += size as u64;
                            let e = enqueued.unwrap_or(t);
                            return Transit { outcome: Outcome::BufferDrop, enqueued: e, departed: t, at: t };
                        }
                    }
                }
                Element::Delay(d) => t += *d,
                Element::Loss(l) => {
                    if l.lose(t) {
                        c.error_loss_packets += 1;
                        c.error_loss_bytes += size as u64;
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
        c.delivered_packets += 1;
        c.delivered_bytes += size as u64;
        let e = enqueued.unwrap_or(now);
        Transit { outcome: Outcome::Delivered, enqueued: e, departed: departed.unwrap_or(e), at: t }
    }
}
