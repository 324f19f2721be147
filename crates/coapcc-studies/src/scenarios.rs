//! The 40 RTT scenarios of Makarem's Table 5.1 as seeded generators.
//!
//! Scenarios 1-4 draw every RTT from one Pareto distribution; scenarios 7-40 alternate a
//! period of 100 values from one distribution with a period of 100 from another, for 100 000
//! values. "Events" add RTT spikes (10 s; 1 s for scenario 35): five distinct positions chosen
//! uniformly at random in every block of 1000 values, each one value long (the thesis says only
//! "5 times every 1000 transmissions"). Scenarios 5 and 6 are real traces (Paris to Auckland,
//! Paris to Rennes) that were never published: they are read from a trace file when one is
//! given, and are otherwise unavailable (never silently synthesised).
//!
//! All values are milliseconds. Draws that come out non-positive (a Normal(4000, 2000) can)
//! are drawn again ([`Floor::Resample`], the default) or clipped to 1 ms.

use coapcc_cc::SplitMix64;
use serde::Serialize;

use crate::dist::{Dist, Floor};

/// Values per scenario (transmissions of the thesis's runs).
pub const SCENARIO_LEN: usize = 100_000;
/// Length of each alternating period.
pub const PERIOD_LEN: usize = 100;
/// Spikes per block of [`SPIKE_BLOCK`] values.
pub const SPIKES_PER_BLOCK: usize = 5;
/// Block length of the spike rule.
pub const SPIKE_BLOCK: usize = 1000;
/// Smallest RTT a scenario produces, ms.
pub const MIN_RTT_MS: f64 = 1.0;

/// What a scenario is made of.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ScenarioKind {
    /// One distribution for every value.
    Single {
        /// The distribution.
        dist: Dist,
    },
    /// Period 1 and period 2 alternate, [`PERIOD_LEN`] values each (50 in the chapter 2
    /// scenario, [`CHAPTER_2`]).
    Alternating {
        /// Period 1.
        p1: Dist,
        /// Period 2.
        p2: Dist,
    },
    /// A real trace (scenarios 5 and 6), only from a file.
    Trace {
        /// Where the trace was measured.
        path: &'static str,
    },
}

/// One row of Table 5.1.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Scenario {
    /// Scenario number, 1-40.
    pub id: u32,
    /// Distributions.
    pub kind: ScenarioKind,
    /// Spike height in ms (10 000 or 1000), when the scenario has events.
    pub spike_ms: Option<f64>,
}

const fn u(a: f64, b: f64) -> Dist {
    Dist::Uniform { a, b }
}
const fn n(mean: f64, sd: f64) -> Dist {
    Dist::Normal { mean, sd }
}
const fn alt(id: u32, p1: Dist, p2: Dist, events: bool) -> Scenario {
    Scenario { id, kind: ScenarioKind::Alternating { p1, p2 }, spike_ms: if events { Some(10_000.0) } else { None } }
}
const fn pareto(id: u32, shape: f64) -> Scenario {
    Scenario {
        id,
        kind: ScenarioKind::Single { dist: Dist::Pareto { shape, scale: 1000.0 } },
        spike_ms: Some(10_000.0),
    }
}
const FIX1000: Dist = Dist::Fixed { v: 1000.0 };
const FIX6000: Dist = Dist::Fixed { v: 6000.0 };

/// Table 5.1, in order (index = id - 1).
pub const TABLE_5_1: [Scenario; 40] = [
    pareto(1, 3.0),
    pareto(2, 4.0),
    pareto(3, 5.0),
    pareto(4, 6.0),
    Scenario { id: 5, kind: ScenarioKind::Trace { path: "Paris -> Auckland" }, spike_ms: None },
    Scenario { id: 6, kind: ScenarioKind::Trace { path: "Paris -> Rennes" }, spike_ms: None },
    alt(7, u(100.0, 300.0), n(3000.0, 100.0), false),
    alt(8, u(100.0, 1000.0), n(3000.0, 100.0), false),
    alt(9, u(100.0, 300.0), n(3000.0, 1000.0), false),
    alt(10, u(100.0, 2000.0), n(4000.0, 1000.0), false),
    alt(11, u(300.0, 3000.0), n(6000.0, 200.0), true),
    alt(12, u(300.0, 3000.0), n(4000.0, 200.0), true),
    alt(13, u(200.0, 1000.0), n(6000.0, 200.0), true),
    alt(14, u(100.0, 2000.0), n(6000.0, 200.0), true),
    alt(15, u(100.0, 500.0), n(4000.0, 200.0), true),
    alt(16, u(100.0, 500.0), n(4000.0, 1000.0), true),
    alt(17, u(100.0, 500.0), FIX1000, true),
    alt(18, u(100.0, 500.0), FIX6000, true),
    alt(19, n(6000.0, 200.0), u(200.0, 1000.0), true),
    alt(20, n(6000.0, 200.0), u(300.0, 3000.0), true),
    alt(21, u(300.0, 3000.0), n(4000.0, 2000.0), true),
    alt(22, u(100.0, 2000.0), n(6000.0, 2000.0), true),
    alt(23, u(300.0, 3000.0), n(6000.0, 200.0), false),
    alt(24, u(300.0, 3000.0), n(4000.0, 200.0), false),
    alt(25, u(200.0, 1000.0), n(6000.0, 200.0), false),
    alt(26, u(100.0, 2000.0), n(6000.0, 200.0), false),
    alt(27, u(100.0, 500.0), n(4000.0, 200.0), false),
    alt(28, u(100.0, 500.0), FIX6000, false),
    alt(29, n(6000.0, 200.0), u(200.0, 1000.0), false),
    alt(30, n(6000.0, 200.0), u(300.0, 3000.0), false),
    alt(31, u(100.0, 300.0), n(3000.0, 300.0), false),
    alt(32, u(100.0, 1000.0), n(3000.0, 300.0), false),
    alt(33, u(5000.0, 6000.0), n(1000.0, 200.0), true),
    alt(34, u(5000.0, 6000.0), n(1000.0, 200.0), false),
    Scenario {
        id: 35,
        kind: ScenarioKind::Alternating { p1: u(500.0, 600.0), p2: n(100.0, 20.0) },
        spike_ms: Some(1000.0),
    },
    alt(36, u(500.0, 600.0), n(100.0, 20.0), false),
    alt(37, u(4000.0, 5000.0), n(1000.0, 200.0), true),
    alt(38, u(4000.0, 5000.0), n(1000.0, 200.0), false),
    alt(39, u(1000.0, 1500.0), n(500.0, 50.0), true),
    alt(40, u(1000.0, 1500.0), n(500.0, 50.0), false),
];

/// Scenario 33 as the thesis's §5.1.4 text describes it (U(500, 600)/N(100, 20) with 10 s
/// spikes), which contradicts its Table 5.1.
pub const SCENARIO_33_TEXT: Scenario = Scenario {
    id: 33,
    kind: ScenarioKind::Alternating { p1: u(500.0, 600.0), p2: n(100.0, 20.0) },
    spike_ms: Some(10_000.0),
};

/// The chapter 2 scenario (id 0 here; it is not in Table 5.1): Normal(2000, 500) and
/// Normal(3000, 500) alternating every 50 values, no events. The thesis uses it to study the
/// prior algorithms.
pub const CHAPTER_2: Scenario =
    Scenario { id: 0, kind: ScenarioKind::Alternating { p1: n(2000.0, 500.0), p2: n(3000.0, 500.0) }, spike_ms: None };

/// Period length of the chapter 2 scenario.
pub const CHAPTER_2_PERIOD: usize = 50;

/// Which definition of scenario 33 to use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Scenario33 {
    /// Table 5.1: U(5000, 6000)/N(1000, 200) with events (default).
    #[default]
    Table,
    /// The §5.1.4 text: U(500, 600)/N(100, 20) with 10 s spikes.
    Text,
}

/// Options of scenario generation (each a documented gap of the thesis).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScenarioOptions {
    /// Number of values (default [`SCENARIO_LEN`]).
    pub len: usize,
    /// Non-positive draws: resample (default) or clip to [`MIN_RTT_MS`].
    pub floor: Floor,
    /// Scenario 33 definition (default: the table's).
    pub scenario33: Scenario33,
}

impl Default for ScenarioOptions {
    fn default() -> Self {
        ScenarioOptions { len: SCENARIO_LEN, floor: Floor::Resample, scenario33: Scenario33::Table }
    }
}

/// A scenario cannot be generated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScenarioError {
    /// No such scenario id.
    Unknown(u32),
    /// A trace scenario without a trace file.
    NoTrace(u32),
}

impl core::fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ScenarioError::Unknown(id) => {
                write!(f, "unknown RTT scenario {id} (valid: 1-40 of Table 5.1, 0 = the chapter 2 alternation)")
            }
            ScenarioError::NoTrace(id) => write!(
                f,
                "scenario {id} is a real RTT trace that was never published; give one with --trace FILE (one RTT in ms per line)"
            ),
        }
    }
}

impl std::error::Error for ScenarioError {}

/// The definition of scenario `id` under `opts`.
pub fn scenario(id: u32, opts: &ScenarioOptions) -> Result<Scenario, ScenarioError> {
    if id == 33 && opts.scenario33 == Scenario33::Text {
        return Ok(SCENARIO_33_TEXT);
    }
    if id == 0 {
        return Ok(CHAPTER_2);
    }
    TABLE_5_1.get((id as usize).wrapping_sub(1)).copied().ok_or(ScenarioError::Unknown(id))
}

/// Generate scenario `id` (RTTs in ms) from `seed`. Trace scenarios (5, 6) need `trace`,
/// which is used as given (truncated or repeated to `opts.len` values).
pub fn generate(id: u32, seed: u64, opts: &ScenarioOptions, trace: Option<&[f64]>) -> Result<Vec<f64>, ScenarioError> {
    let sc = scenario(id, opts)?;
    let len = opts.len;
    let mut rng = SplitMix64::stream(seed, 0x5C0_0000 + id as u64);
    let mut out = Vec::with_capacity(len);
    match sc.kind {
        ScenarioKind::Trace { .. } => {
            let t = trace.filter(|t| !t.is_empty()).ok_or(ScenarioError::NoTrace(id))?;
            out.extend(t.iter().copied().cycle().take(len));
        }
        ScenarioKind::Single { dist } => {
            out.extend((0..len).map(|_| dist.sample(&mut rng, opts.floor, MIN_RTT_MS)));
        }
        ScenarioKind::Alternating { p1, p2 } => {
            let period = if id == 0 { CHAPTER_2_PERIOD } else { PERIOD_LEN };
            for i in 0..len {
                let d = if (i / period) % 2 == 0 { p1 } else { p2 };
                out.push(d.sample(&mut rng, opts.floor, MIN_RTT_MS));
            }
        }
    }
    if let Some(spike) = sc.spike_ms {
        let mut spikes = SplitMix64::stream(seed, 0x5A1_0000 + id as u64);
        for block in (0..len).step_by(SPIKE_BLOCK) {
            let blen = SPIKE_BLOCK.min(len - block);
            let k = SPIKES_PER_BLOCK.min(blen);
            // k distinct positions in the block: a partial Fisher-Yates shuffle of indices.
            let mut idx: Vec<usize> = (0..blen).collect();
            for j in 0..k {
                let r = j + (coapcc_cc::rng::unit_f64(&mut spikes) * (blen - j) as f64) as usize;
                idx.swap(j, r.min(blen - 1));
                out[block + idx[j]] = spike;
            }
        }
    }
    Ok(out)
}

/// Parse a trace file: one RTT in ms per line (blank lines and `#` comments ignored; the last
/// whitespace- or comma-separated field of a line is taken, so `seq,rtt` CSV works).
pub fn parse_trace(text: &str) -> Result<Vec<f64>, String> {
    let mut v = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let field = line.rsplit([',', ' ', '\t']).next().unwrap_or(line);
        match field.parse::<f64>() {
            Ok(x) if x.is_finite() && x > 0.0 => v.push(x),
            _ => return Err(format!("trace line {}: expected a positive RTT in ms, got {line:?}", i + 1)),
        }
    }
    if v.is_empty() {
        return Err("trace file has no RTT values".into());
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_has_forty_rows_in_order() {
        for (i, s) in TABLE_5_1.iter().enumerate() {
            assert_eq!(s.id as usize, i + 1);
        }
        let events = TABLE_5_1.iter().filter(|s| s.spike_ms.is_some()).count();
        // Yes: 1-4, 11-22, 33, 35, 37, 39.
        assert_eq!(events, 4 + 12 + 4);
        assert_eq!(TABLE_5_1[34].spike_ms, Some(1000.0));
    }

    #[test]
    fn alternation_and_spikes() {
        let o = ScenarioOptions::default();
        let v = generate(11, 7, &o, None).unwrap();
        assert_eq!(v.len(), SCENARIO_LEN);
        for block in v.chunks(SPIKE_BLOCK) {
            assert_eq!(block.iter().filter(|&&x| x == 10_000.0).count(), SPIKES_PER_BLOCK);
        }
        // Period 1 U(300, 3000), period 2 N(6000, 200), spikes aside.
        for (i, &x) in v.iter().enumerate() {
            if x == 10_000.0 {
                continue;
            }
            if (i / PERIOD_LEN) % 2 == 0 {
                assert!((300.0..=3000.0).contains(&x), "{i}: {x}");
            } else {
                assert!((4500.0..=7500.0).contains(&x), "{i}: {x}");
            }
        }
        // No events: no spikes.
        let v = generate(23, 7, &o, None).unwrap();
        assert!(v.iter().all(|&x| x < 8000.0));
        // Scenario 35's spikes are 1 s.
        let v = generate(35, 7, &o, None).unwrap();
        assert_eq!(v.iter().filter(|&&x| x == 1000.0).count(), 500);
    }

    #[test]
    fn seeded_and_positive() {
        let o = ScenarioOptions::default();
        assert_eq!(generate(21, 3, &o, None).unwrap(), generate(21, 3, &o, None).unwrap());
        assert_ne!(generate(21, 3, &o, None).unwrap(), generate(21, 4, &o, None).unwrap());
        assert!(generate(21, 3, &o, None).unwrap().iter().all(|&x| x >= MIN_RTT_MS));
        let p = generate(1, 3, &o, None).unwrap();
        assert!(p.iter().all(|&x| x >= 1000.0));
    }

    #[test]
    fn traces_and_errors() {
        let o = ScenarioOptions { len: 5, ..Default::default() };
        assert_eq!(generate(5, 1, &o, None), Err(ScenarioError::NoTrace(5)));
        assert_eq!(generate(41, 1, &o, None), Err(ScenarioError::Unknown(41)));
        assert_eq!(generate(41, 1, &o, None), Err(ScenarioError::Unknown(41)));
        // Scenario 0: the chapter 2 alternation, 50 values per period.
        let c2 = generate(0, 1, &ScenarioOptions { len: 100_000, ..o }, None).unwrap();
        let mean = |xs: &[f64]| xs.iter().sum::<f64>() / xs.len() as f64;
        let (a, b): (Vec<f64>, Vec<f64>) = (
            c2.chunks(50).step_by(2).flatten().copied().collect(),
            c2.chunks(50).skip(1).step_by(2).flatten().copied().collect(),
        );
        assert!((mean(&a) - 2000.0).abs() < 10.0 && (mean(&b) - 3000.0).abs() < 10.0);
        let t = parse_trace("# rtt\n1,250\n2,300.5\n\n").unwrap();
        assert_eq!(generate(6, 1, &o, Some(&t)).unwrap(), vec![250.0, 300.5, 250.0, 300.5, 250.0]);
        assert!(parse_trace("abc").is_err());
        assert!(parse_trace("").is_err());
        let text = ScenarioOptions { scenario33: Scenario33::Text, ..o };
        assert_eq!(scenario(33, &text).unwrap(), SCENARIO_33_TEXT);
    }
}
