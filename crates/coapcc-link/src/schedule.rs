//! Time-varying links: a rate stage whose rate (and link-error probability) follows a
//! piecewise-constant schedule, given inline in the configuration or read from a trace file.
//!
//! A schedule is a list of change points `(at_s, bits_per_s, loss)`: from `at_s` on (seconds
//! since the link's epoch, the time 0 of every run) the stage serialises at `bits_per_s` and a
//! packet whose last bit leaves in that segment is lost to a link error with probability
//! `loss`. Before the first point the stage's own `bits_per_s` applies, without scheduled loss.
//! A rate of 0 is an outage: nothing is serialised until the next point (the last segment must
//! have a positive rate).
//!
//! Serialisation stays exact in integer time: a packet's bits are served segment by segment,
//! with the remainder carried in units of 1/rate ns inside a segment, and change points are
//! whole nanoseconds, so back-to-back packets accumulate no drift across changes either (see
//! [`RateStage`](crate::RateStage)). A packet lost to a scheduled error has used capacity and
//! buffer, as on the testbed.
//!
//! # Trace files
//!
//! One change point per line: `TIME_S RATE_BPS [LOSS]`, separated by whitespace or commas;
//! `#` starts a comment; blank lines are skipped. Times must increase strictly. Inline, the
//! same lines are separated by `;` (`0 30000; 10 10000 0.05; 20 30000`).

use serde::{Deserialize, Serialize};

use crate::Nanos;

/// One change point of a [`RateSchedule`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RatePoint {
    /// When the change takes effect, seconds since the link's epoch (rounded to whole ns).
    pub at_s: f64,
    /// Rate from then on, bit/s (0 = outage).
    pub bits_per_s: u64,
    /// Probability that a packet whose last bit leaves in this segment is lost (default 0).
    #[serde(default)]
    pub loss: f64,
}

/// A piecewise-constant rate (and loss) schedule.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateSchedule {
    /// Change points, strictly increasing in time.
    pub points: Vec<RatePoint>,
}

/// Most change points accepted (a day of 10 ms samples is 8.6 million).
pub const MAX_POINTS: usize = 10_000_000;

impl RateSchedule {
    /// Check the points: times finite, non-negative and strictly increasing (also after
    /// rounding to ns), losses in [0, 1], the last segment's rate positive (`initial` is the
    /// rate before the first point).
    pub fn validate(&self, initial_bits_per_s: u64) -> Result<(), String> {
        if self.points.len() > MAX_POINTS {
            return Err(format!("schedule has {} points, more than {MAX_POINTS}", self.points.len()));
        }
        let mut prev: Option<Nanos> = None;
        for (i, p) in self.points.iter().enumerate() {
            if !(p.at_s.is_finite() && (0.0..=1e9).contains(&p.at_s)) {
                return Err(format!("schedule point {i}: at_s = {} must be in [0, 1e9] seconds", p.at_s));
            }
            let at = s_to_ns(p.at_s);
            if prev.is_some_and(|q| at <= q) {
                return Err(format!("schedule point {i}: at_s = {} does not come after the previous point", p.at_s));
            }
            prev = Some(at);
            if !(0.0..=1.0).contains(&p.loss) {
                return Err(format!("schedule point {i}: loss = {} is not a probability in [0, 1]", p.loss));
            }
        }
        let last = self.points.last().map_or(initial_bits_per_s, |p| p.bits_per_s);
        if last == 0 {
            return Err("the last segment of a rate schedule must have a positive rate".into());
        }
        Ok(())
    }

    /// Whether any segment has a positive loss probability.
    pub fn has_loss(&self) -> bool {
        self.points.iter().any(|p| p.loss > 0.0)
    }

    /// Parse the trace text form (see the module documentation); `;` separates lines too.
    pub fn parse(text: &str) -> Result<RateSchedule, String> {
        let mut points = Vec::new();
        for (n, line) in text.split(['\n', ';']).enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let at = || format!("schedule line {}", n + 1);
            let v: Vec<f64> = line
                .split(|c: char| c.is_whitespace() || c == ',')
                .filter(|x| !x.is_empty())
                .map(|x| x.parse::<f64>())
                .collect::<Result<_, _>>()
                .map_err(|_| format!("{}: expected TIME_S RATE_BPS [LOSS], got '{line}'", at()))?;
            if !(2..=3).contains(&v.len()) {
                return Err(format!("{}: expected TIME_S RATE_BPS [LOSS], got '{line}'", at()));
            }
            let rate = v[1];
            if !((0.0..=1e15).contains(&rate) && rate.fract() == 0.0) {
                return Err(format!("{}: rate {rate} must be a whole number of bit/s in [0, 1e15]", at()));
            }
            points.push(RatePoint { at_s: v[0], bits_per_s: rate as u64, loss: v.get(2).copied().unwrap_or(0.0) });
            if points.len() > MAX_POINTS {
                return Err(format!("schedule has more than {MAX_POINTS} points"));
            }
        }
        if points.is_empty() {
            return Err("schedule has no points".into());
        }
        Ok(RateSchedule { points })
    }

    /// Read a trace file, or parse inline text when `spec` contains `;` or is not a file.
    pub fn from_file_or_inline(spec: &str) -> Result<RateSchedule, String> {
        let path = std::path::Path::new(spec.trim());
        if !spec.contains(';') && path.is_file() {
            let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            RateSchedule::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
        } else if !spec.contains(';') && !spec.trim().starts_with(|c: char| c.is_ascii_digit() || c == '.') {
            Err(format!("no such schedule file '{}'", spec.trim()))
        } else {
            RateSchedule::parse(spec)
        }
    }
}

fn s_to_ns(s: f64) -> Nanos {
    (s * 1e9).round() as Nanos
}

/// The running schedule of a rate stage: segment `k` runs from `changes[k - 1]` (0 for
/// `k = 0`) to `changes[k]` at `rates[k]` with loss `losses[k]`.
#[derive(Clone, Debug)]
pub(crate) struct Segments {
    changes: Vec<Nanos>,
    rates: Vec<u64>,
    losses: Vec<f64>,
    /// Segment of the latest time asked for (times only grow).
    cursor: usize,
}

impl Segments {
    pub(crate) fn new(initial_bits_per_s: u64, s: &RateSchedule) -> Self {
        let mut seg = Segments {
            changes: Vec::with_capacity(s.points.len()),
            rates: vec![initial_bits_per_s],
            losses: vec![0.0],
            cursor: 0,
        };
        for p in &s.points {
            seg.changes.push(s_to_ns(p.at_s));
            seg.rates.push(p.bits_per_s);
            seg.losses.push(p.loss);
        }
        seg
    }

    /// The segment containing time `t` (non-decreasing across calls): index, rate and end.
    #[inline]
    pub(crate) fn at(&mut self, t: Nanos) -> (usize, u64, Option<Nanos>) {
        while self.cursor < self.changes.len() && self.changes[self.cursor] <= t {
            self.cursor += 1;
        }
        let k = self.cursor;
        (k, self.rates[k], self.changes.get(k).copied())
    }

    pub(crate) fn loss(&self, k: usize) -> f64 {
        self.losses[k]
    }
}

/// Busy time of a scheduled stage: work served per segment, exact within a segment.
#[derive(Clone, Debug, Default)]
pub(crate) struct Busy {
    /// Picoseconds of the segments left behind (rounded down once per segment).
    done_ps: u128,
    /// The segment being accumulated, its rate and the work served in it (bits × 10⁹).
    seg: usize,
    rate: u64,
    units: u128,
}

impl Busy {
    fn add(&mut self, k: usize, rate: u64, units: u128) {
        if k != self.seg {
            self.done_ps += self.current_ps();
            (self.seg, self.rate, self.units) = (k, rate, 0);
        }
        self.rate = rate;
        self.units += units;
    }

    fn current_ps(&self) -> u128 {
        if self.rate == 0 {
            0
        } else {
            self.units * 1000 / self.rate as u128
        }
    }

    /// Total busy time, ns (rounded down).
    pub(crate) fn ns(&self) -> u64 {
        ((self.done_ps + self.current_ps()) / 1000) as u64
    }
}

/// Serve `work` units (bits × 10⁹) from the exact time `t + frac / rate(t)`; returns the exact
/// end `(t', frac')` (`frac'` in units of 1/rate(t') ns), adding the work to `busy`.
pub(crate) fn serve(seg: &mut Segments, busy: &mut Busy, mut t: Nanos, mut frac: u128, mut work: u128) -> (Nanos, u64) {
    loop {
        let (k, r64, end) = seg.at(t);
        let r = r64 as u128;
        if r == 0 {
            // Outage: validation guarantees a later segment with a positive rate.
            t = end.expect("validated: the last segment has a positive rate");
            frac = 0;
            continue;
        }
        let avail = end.map(|e| r * (e - t) as u128 - frac);
        match avail {
            Some(a) if work > a => {
                work -= a;
                busy.add(k, r64, a);
                t = end.expect("some");
                frac = 0;
            }
            _ => {
                let total = frac + work;
                busy.add(k, r64, work);
                return (t + (total / r) as u64, (total % r) as u64);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{LinkPath, LossModel, Outcome, RateConfig, RateOutcome, RateStage, StageConfig};
    use coapcc_cc::SplitMix64;

    fn pt(at_s: f64, bits_per_s: u64, loss: f64) -> RatePoint {
        RatePoint { at_s, bits_per_s, loss }
    }

    fn stage(initial: u64, buffer: u64, points: Vec<RatePoint>) -> RateStage {
        RateStage::new(RateConfig {
            bits_per_s: initial,
            buffer_bytes: buffer,
            buffer_counts_in_service: true,
            per_packet_overhead_bytes: 0,
            schedule: Some(RateSchedule { points }),
        })
    }

    #[test]
    fn service_across_a_rate_change_is_exact() {
        // 30 kbit/s until 10 ms, then 60 kbit/s. A 94-byte packet (752 bits) at t = 0: 300 bits
        // by 10 ms, the other 452 bits at 60 kbit/s take 7 533 333 + 1/3 ns: it leaves at
        // 17 533 333.33 ns, i.e. 17 533 334 (never before its last bit).
        let mut s = stage(30_000, 1_000_000, vec![pt(0.010, 60_000, 0.0)]);
        assert_eq!(s.offer(0, 0, 94), RateOutcome::Departs(17_533_334));
        // Back to back: + 752/60 000 s = 12 533 333.33 ns -> 30 066 666.67 ns.
        assert_eq!(s.offer(0, 0, 94), RateOutcome::Departs(30_066_667));
        // Third: the thirds add up to exactly 42 600 000 ns: no drift across the change.
        assert_eq!(s.offer(0, 0, 94), RateOutcome::Departs(42_600_000));
        // Busy time: 10 ms + 3 × 752 bits at 60 kbit/s − 300 bits at 60 kbit/s = 42.6 ms.
        assert_eq!(s.busy_ns(), 42_600_000);
    }

    #[test]
    fn a_schedule_equal_to_the_constant_rate_changes_nothing() {
        let mut a = stage(30_000, 2_500, vec![pt(0.0, 30_000, 0.0), pt(0.5, 30_000, 0.0), pt(7.0, 30_000, 0.0)]);
        let mut b = RateStage::new(RateConfig {
            bits_per_s: 30_000,
            buffer_bytes: 2_500,
            buffer_counts_in_service: true,
            per_packet_overhead_bytes: 0,
            schedule: None,
        });
        let mut rng = SplitMix64::new(3);
        let mut t = 0;
        for _ in 0..5_000 {
            t += coapcc_cc::Entropy::next_u64(&mut rng) % 40_000_000;
            let size = 28 + (coapcc_cc::Entropy::next_u64(&mut rng) % 268) as u32;
            assert_eq!(a.offer(t, t, size), b.offer(t, t, size));
        }
        assert_eq!(a.stats(), b.stats());
        assert!(a.busy_ns().abs_diff(b.busy_ns()) <= 5_000, "{} {}", a.busy_ns(), b.busy_ns());
    }

    #[test]
    fn outage_holds_the_queue_and_slow_rate_stretches_service() {
        // 8 000 bit/s = 1 byte per ms. Outage from 50 ms to 150 ms, then 16 000 bit/s.
        let mut s = stage(8_000, 10_000, vec![pt(0.05, 0, 0.0), pt(0.15, 16_000, 0.0)]);
        // 100 B at 0: 50 B by 50 ms, nothing until 150 ms, 50 B at 2 B/ms: 175 ms.
        assert_eq!(s.offer(0, 0, 100), RateOutcome::Departs(175_000_000));
        // Arriving during the outage: waits behind it, 100 B at 2 B/ms.
        assert_eq!(s.offer(60_000_000, 60_000_000, 100), RateOutcome::Departs(225_000_000));
        // The buffer still counts both while they wait (in-service included).
        assert_eq!(s.occupancy_at(100_000_000), 200);
        // Arriving in the outage with an idle serialiser: starts at 150 ms.
        let mut s = stage(8_000, 10_000, vec![pt(0.05, 0, 0.0), pt(0.15, 16_000, 0.0)]);
        assert_eq!(s.offer(60_000_000, 60_000_000, 10), RateOutcome::Departs(155_000_000));
        assert_eq!(s.busy_ns(), 5_000_000);
    }

    #[test]
    fn scheduled_loss_uses_capacity_and_conserves_bytes() {
        // A downlink with a trace: 30 kbit/s, then a 10 kbit/s stretch with 30 % loss, back
        // to 30 kbit/s without loss.
        let sched = RateSchedule::parse("0 30000\n# bad stretch\n5 10000 0.3\n15, 30000").unwrap();
        let mut chain = crate::testbed_downlink(3_000, LossModel::None);
        if let StageConfig::Rate(r) = &mut chain[1] {
            r.schedule = Some(sched.clone());
        }
        crate::validate_chain(&chain, 296).unwrap();
        let run = |seed| {
            let mut l = LinkPath::new(&chain, 296, seed, 0x200).unwrap();
            let (mut lost_in_bad, mut lost_elsewhere) = (0, 0);
            for i in 0..2_000u64 {
                let tr = l.transmit(i * 10_000_000, 40 + (i % 250) as u32);
                if tr.outcome == Outcome::ErrorLoss {
                    assert!(tr.departed > tr.enqueued, "a lost packet was serialised");
                    if (5_000_000_000..15_000_000_000).contains(&tr.departed) {
                        lost_in_bad += 1;
                    } else {
                        lost_elsewhere += 1;
                    }
                }
            }
            (l.counters(), lost_in_bad, lost_elsewhere)
        };
        let (c, bad, elsewhere) = run(5);
        assert!(bad > 0 && elsewhere == 0, "{bad} {elsewhere}");
        assert!(c.buffer_drop_packets > 0);
        assert_eq!(c.offered_packets, c.delivered_packets + c.buffer_drop_packets + c.error_loss_packets);
        assert_eq!(c.offered_bytes, c.delivered_bytes + c.buffer_drop_bytes + c.error_loss_bytes);
        // Deterministic: same seed, same fates; another seed, other loss draws.
        assert_eq!(run(5).0, c);
        assert_ne!(run(6).0, c);
    }

    #[test]
    fn parse_and_validate() {
        let s = RateSchedule::parse("0 30000; 10 10000 0.05; 20 30000").unwrap();
        assert_eq!(s.points, vec![pt(0.0, 30_000, 0.0), pt(10.0, 10_000, 0.05), pt(20.0, 30_000, 0.0)]);
        assert!(s.has_loss());
        for (bad, msg) in [
            ("", "no points"),
            ("0 1 2 3", "expected TIME_S"),
            ("0 x", "expected TIME_S"),
            ("0 1.5", "whole number"),
            ("0 -3", "whole number"),
        ] {
            let e = RateSchedule::parse(bad).unwrap_err();
            assert!(e.contains(msg) && !e.contains('\n'), "{bad:?}: {e}");
        }
        assert!(RateSchedule::parse("1 5\n0 5").unwrap().validate(1).unwrap_err().contains("after"));
        assert!(RateSchedule::parse("0 5 1.5").unwrap().validate(1).unwrap_err().contains("probability"));
        assert!(RateSchedule::parse("0 5; 1 0").unwrap().validate(1).unwrap_err().contains("last segment"));
        assert!(RateSchedule::parse("-1 5").unwrap().validate(1).is_err());
        assert!(RateSchedule::parse("nan 5").unwrap().validate(1).is_err());
        // Files, inline text and missing files.
        let dir = std::env::temp_dir().join(format!("coapcc-link-sched-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("trace.txt");
        std::fs::write(&f, "# t rate loss\n0 30000\n2.5 15000 0.1\n").unwrap();
        let s = RateSchedule::from_file_or_inline(f.to_str().unwrap()).unwrap();
        assert_eq!(s.points[1], pt(2.5, 15_000, 0.1));
        std::fs::write(&f, "0 30000\n2.5 fast\n").unwrap();
        let e = RateSchedule::from_file_or_inline(f.to_str().unwrap()).unwrap_err();
        assert!(e.contains("trace.txt") && e.contains("line 2"), "{e}");
        assert!(RateSchedule::from_file_or_inline("/nonexistent/t.txt").unwrap_err().contains("no such"));
        assert_eq!(RateSchedule::from_file_or_inline("0 1000").unwrap().points.len(), 1);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn overrides_and_json() {
        let mut l = crate::LinkConfig::default();
        crate::LinkOverrides { downlink_schedule: Some("0 30000; 1 5000".into()), ..Default::default() }
            .apply(&mut l)
            .unwrap();
        let r = match &l.downlink[1] {
            StageConfig::Rate(r) => r.clone(),
            o => panic!("{o:?}"),
        };
        assert_eq!(r.schedule.as_ref().unwrap().points.len(), 2);
        // The JSON carries the points inline (a run does not depend on the file any more),
        // and a link without schedule serialises as before.
        let j = serde_json::to_string(&l).unwrap();
        assert!(j.contains(r#""schedule":{"points":[{"at_s":0.0,"bits_per_s":30000,"loss":0.0}"#), "{j}");
        assert!(!serde_json::to_string(&crate::LinkConfig::default()).unwrap().contains("schedule"));
        let back: crate::LinkConfig = serde_json::from_str(&j).unwrap();
        assert_eq!(back, l);
        let mut none = crate::LinkConfig { uplink: vec![], downlink: vec![], mtu_bytes: 296 };
        let e = crate::LinkOverrides { uplink_schedule: Some("0 1".into()), ..Default::default() }
            .apply(&mut none)
            .unwrap_err();
        assert!(e.starts_with("--uplink-schedule:") && e.contains("no rate stage"), "{e}");
    }
}
