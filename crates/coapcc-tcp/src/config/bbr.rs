//! BBR v1's own parameters ([`BbrParams`], [`BBR_INFO`]).

use core::fmt;

use coapcc_cc::params::{eq_choice, parse_bool, parse_f64, parse_secs, parse_u32, KvWriter};

use super::{ParamInfo, SetError};

/// How BBR picks the first ProbeBW gain-cycle phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CycleStart {
    /// Uniformly among the 7 phases other than the 3/4 phase (Linux).
    Random,
    /// Always the given phase index (0-7; tests and what-if runs).
    Fixed(u8),
}

/// BBR v1 parameters (Linux `tcp_bbr.c` constants).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BbrParams {
    /// Startup pacing and cwnd gain (2/ln 2).
    pub high_gain: f64,
    /// Drain pacing gain (1/high_gain).
    pub drain_gain: f64,
    /// ProbeBW cwnd gain.
    pub cwnd_gain: f64,
    /// Bandwidth growth that counts as "still growing" in Startup.
    pub full_bw_thresh: f64,
    /// Rounds without that growth before the pipe is full.
    pub full_bw_cnt: u32,
    /// BtlBw max-filter window, in round trips.
    pub bw_rounds: u32,
    /// RTprop min-filter window, seconds.
    pub min_rtt_window: f64,
    /// Time spent at the minimum cwnd in ProbeRTT, seconds.
    pub probe_rtt_time: f64,
    /// Minimum cwnd (and the ProbeRTT cwnd), segments.
    pub cwnd_min: u32,
    /// Segments added to the target cwnd for send/ACK quantisation (Linux 3 × the TSO goal,
    /// which is 1 segment below 1.2 Mbit/s); the result is rounded up to even.
    pub quanta: u32,
    /// Fraction the pacing rate is kept below the bandwidth estimate (Linux >= 4.20: 1 %).
    pub pacing_margin: f64,
    /// First ProbeBW phase.
    pub cycle_start: CycleStart,
    /// Long-term ("policer") bandwidth sampling (Linux `bbr_lt_bw_sampling`, since 4.9).
    pub lt_sampling: bool,
}

impl Default for BbrParams {
    fn default() -> Self {
        let high = 2885.0 / 1000.0;
        BbrParams {
            high_gain: high,
            drain_gain: 1000.0 / 2885.0,
            cwnd_gain: 2.0,
            full_bw_thresh: 1.25,
            full_bw_cnt: 3,
            bw_rounds: 10,
            min_rtt_window: 10.0,
            probe_rtt_time: 0.2,
            cwnd_min: 4,
            quanta: 3,
            pacing_margin: 0.01,
            cycle_start: CycleStart::Random,
            lt_sampling: true,
        }
    }
}

/// BBR's own parameters.
pub const BBR_INFO: &[ParamInfo] = &[
    ParamInfo {
        key: "high_gain",
        aliases: &[],
        default: "2.885",
        values: "> 1",
        doc: "Startup pacing and cwnd gain (2/ln 2).",
    },
    ParamInfo {
        key: "drain_gain",
        aliases: &[],
        default: "0.3466",
        values: "(0, 1]",
        doc: "Drain pacing gain (1/high_gain).",
    },
    ParamInfo { key: "cwnd_gain", aliases: &[], default: "2", values: ">= 1", doc: "ProbeBW cwnd gain." },
    ParamInfo {
        key: "full_bw_thresh",
        aliases: &[],
        default: "1.25",
        values: "> 1",
        doc: "Startup ends after full_bw_cnt rounds without this much BtlBw growth.",
    },
    ParamInfo {
        key: "full_bw_cnt",
        aliases: &[],
        default: "3",
        values: "1-100",
        doc: "Rounds without growth that end Startup.",
    },
    ParamInfo {
        key: "bw_rounds",
        aliases: &[],
        default: "10",
        values: "1-1000",
        doc: "BtlBw max-filter window in round trips (Linux's three-sample windowed maximum: the best sample counts until more than this many rounds passed).",
    },
    ParamInfo {
        key: "min_rtt_window",
        aliases: &[],
        default: "10",
        values: "seconds > 0",
        doc: "RTprop min-filter window; its expiry triggers ProbeRTT.",
    },
    ParamInfo {
        key: "probe_rtt_time",
        aliases: &[],
        default: "0.2",
        values: "seconds > 0",
        doc: "Time held at cwnd_min in ProbeRTT (plus one round trip).",
    },
    ParamInfo {
        key: "cwnd_min",
        aliases: &[],
        default: "4",
        values: "1-1000",
        doc: "cwnd floor and ProbeRTT cwnd, segments.",
    },
    ParamInfo {
        key: "quanta",
        aliases: &[],
        default: "3",
        values: "0-1000",
        doc: "Segments added to the target cwnd (3 x Linux's TSO goal, 1 segment at these rates).",
    },
    ParamInfo {
        key: "pacing_margin",
        aliases: &[],
        default: "0.01",
        values: "[0, 0.5]",
        doc: "Pacing below the estimate (Linux >= 4.20 paces 1 % low; older kernels, as in 2018, 0).",
    },
    ParamInfo {
        key: "cycle_start",
        aliases: &[],
        default: "random",
        values: "random, 0-7",
        doc: "First ProbeBW phase: random among all but the 3/4 phase (Linux), or a fixed index.",
    },
    ParamInfo {
        key: "lt_sampling",
        aliases: &[],
        default: "on",
        values: "on, off",
        doc: "Long-term (policer) bandwidth sampling: after losses, pace at the delivery rate of two consistent lossy intervals for 48 round trips (Linux since 4.9).",
    },
];

impl BbrParams {
    pub(super) fn set(&mut self, key: &str, v: &str) -> Result<(), SetError> {
        let info = BBR_INFO.iter().find(|p| p.matches(key)).ok_or(SetError::UnknownKey)?;
        match info.key {
            "high_gain" => self.high_gain = parse_f64(v, 1.0, 100.0, "a gain in (1, 100]")?,
            "drain_gain" => self.drain_gain = parse_f64(v, 1e-3, 1.0, "a gain in (0, 1]")?,
            "cwnd_gain" => self.cwnd_gain = parse_f64(v, 1.0, 100.0, "a gain >= 1")?,
            "full_bw_thresh" => self.full_bw_thresh = parse_f64(v, 1.0, 100.0, "a ratio > 1")?,
            "full_bw_cnt" => self.full_bw_cnt = parse_u32(v, 1, 100, "rounds, 1-100")?,
            "bw_rounds" => self.bw_rounds = parse_u32(v, 1, 1000, "rounds, 1-1000")?,
            "min_rtt_window" => self.min_rtt_window = parse_secs(v, false)?,
            "probe_rtt_time" => self.probe_rtt_time = parse_secs(v, false)?,
            "cwnd_min" => self.cwnd_min = parse_u32(v, 1, 1000, "segments, 1-1000")?,
            "quanta" => self.quanta = parse_u32(v, 0, 1000, "segments, 0-1000")?,
            "pacing_margin" => self.pacing_margin = parse_f64(v, 0.0, 0.5, "a fraction in [0, 0.5]")?,
            "lt_sampling" => self.lt_sampling = parse_bool(v)?,
            "cycle_start" => {
                self.cycle_start = if eq_choice("random", v) {
                    CycleStart::Random
                } else {
                    CycleStart::Fixed(parse_u32(v, 0, 7, "random, or a phase index 0-7")? as u8)
                }
            }
            _ => return Err(SetError::UnknownKey),
        }
        Ok(())
    }

    pub(super) fn write(&self, w: &mut KvWriter<'_>) -> fmt::Result {
        w.kv("high_gain", self.high_gain)?;
        w.kv("drain_gain", self.drain_gain)?;
        w.kv("cwnd_gain", self.cwnd_gain)?;
        w.kv("full_bw_thresh", self.full_bw_thresh)?;
        w.kv("full_bw_cnt", self.full_bw_cnt)?;
        w.kv("bw_rounds", self.bw_rounds)?;
        w.kv("min_rtt_window", self.min_rtt_window)?;
        w.kv("probe_rtt_time", self.probe_rtt_time)?;
        w.kv("cwnd_min", self.cwnd_min)?;
        w.kv("quanta", self.quanta)?;
        w.kv("pacing_margin", self.pacing_margin)?;
        match self.cycle_start {
            CycleStart::Random => w.kv("cycle_start", "random")?,
            CycleStart::Fixed(i) => w.kv("cycle_start", i)?,
        }
        w.flag("lt_sampling", self.lt_sampling)
    }
}
