//! Configuration: every parameter of the TCP model and of its congestion controls is named,
//! documented and settable from text, `newreno[:key=value,...]` or `bbr[:key=value,...]`,
//! in the same style as the CoAP-over-UDP algorithms of `coapcc-cc`.
//!
//! Defaults follow Linux (the kernel the published experiments ran on); the `helsinki2018`
//! preset sets what the Helsinki CoAP-over-TCP study configured (initial window 4, initial
//! RTO 2 s, SYN/SYN-ACK retries 40/41, MTU 296) and the two mechanisms as its thesis describes
//! them (New Reno's recovery as RFC 6582, the RTO backoff kept until new data is acknowledged).
//! The canonical text form names the defaults it starts from: `preset=linux` (a name alone) or
//! `preset=helsinki2018`, then every parameter.

use core::fmt;

use coapcc_cc::params::{choice_name, eq_choice, parse_bool, parse_choice, parse_f64, parse_secs, parse_u32, KvWriter};
pub use coapcc_cc::params::{ParamInfo, Preset, SetError};

/// How the minimum RTO is applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RtoMinMode {
    /// Linux: the variance term is floored, `RTO = SRTT + max(4·RTTVAR, rto_min)`, so the RTO
    /// is always at least `rto_min` above the smoothed RTT.
    Linux,
    /// RFC 6298: `RTO = max(rto_min, SRTT + 4·RTTVAR)`.
    Rfc6298,
}

const RTO_MIN_MODES: &[(&str, RtoMinMode)] = &[("linux", RtoMinMode::Linux), ("rfc6298", RtoMinMode::Rfc6298)];

/// What ends the exponential backoff of the retransmission timer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RtoBackoffReset {
    /// Linux and RFC 6298 §5 with Karn's rule: only a valid RTT sample recomputes the RTO and
    /// ends the backoff. Without timestamps a sample needs an ACK that covers no retransmitted
    /// segment (`tcp_clean_rtx_queue` sets `FLAG_RETRANS_DATA_ACKED` for any, and then takes
    /// no sample); an ACK of new data without a sample re-arms the timer with the backed-off
    /// value (`tcp_ack_update_rtt` zeroes `icsk_backoff` only on a sample, `tcp_rearm_rto`
    /// uses `icsk_rto`).
    Sample,
    /// The thesis's wording: "the backed off RTO value [is kept] until a new data segment that
    /// did not require retransmissions is acknowledged". An ACK that newly covers a segment
    /// never retransmitted ends the backoff even when it also covers retransmitted ones (the
    /// RTT sample still follows Karn's rule).
    NewData,
    /// Every ACK of new data ends the backoff and re-arms the timer with the unbacked RTO of the
    /// current SRTT/RTTVAR (ns-3's `TcpSocketBase::NewAck` does this).
    Ack,
}

const RTO_BACKOFF_RESETS: &[(&str, RtoBackoffReset)] =
    &[("sample", RtoBackoffReset::Sample), ("new_data", RtoBackoffReset::NewData), ("ack", RtoBackoffReset::Ack)];

/// How RTT samples become the RTO.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RttEstimator {
    /// Linux's `tcp_rtt_estimator` and `tcp_set_rto`: RFC 6298's gains on `mdev`, a finer
    /// gain for samples below SRTT, and a variance term that is the largest `mdev` of the
    /// round trip (at least `min_rto`), decaying once per round trip.
    Linux,
    /// RFC 6298 §2, with `min_rto` applied as `rto_min_mode` says.
    Rfc6298,
}

const RTT_ESTIMATORS: &[(&str, RttEstimator)] = &[("linux", RttEstimator::Linux), ("rfc6298", RttEstimator::Rfc6298)];

/// What the Reno ssthresh is computed from on a loss.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SsthreshBase {
    /// Linux `tcp_reno_ssthresh`: `max(cwnd / 2, 2)` segments.
    Cwnd,
    /// RFC 5681 eq. 4: `max(FlightSize / 2, 2·SMSS)`.
    Flight,
}

const SSTHRESH_BASES: &[(&str, SsthreshBase)] = &[("cwnd", SsthreshBase::Cwnd), ("flight", SsthreshBase::Flight)];

/// Parameters of the TCP machinery shared by every congestion control (handshake, ACKs,
/// RTO, loss recovery).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TcpConfig {
    /// Path MTU in bytes; MSS = `mtu - header_bytes`.
    pub mtu: u32,
    /// TCP/IP header bytes per segment (40: IPv4 + TCP, no options: no timestamps, no SACK).
    pub header_bytes: u32,
    /// Initial congestion window in segments.
    pub init_cwnd: u32,
    /// Initial RTO (before the first RTT sample), seconds; also the first SYN/SYN-ACK timeout.
    pub init_rto: f64,
    /// Minimum RTO, seconds.
    pub min_rto: f64,
    /// Maximum RTO, seconds.
    pub max_rto: f64,
    /// How `min_rto` is applied by the RFC 6298 estimator.
    pub rto_min_mode: RtoMinMode,
    /// How RTT samples become the RTO.
    pub rtt_estimator: RttEstimator,
    /// What ends the RTO backoff.
    pub rto_backoff_reset: RtoBackoffReset,
    /// SYN retransmissions before the connection attempt fails.
    pub syn_retries: u32,
    /// SYN-ACK retransmissions before the passive side gives up.
    pub synack_retries: u32,
    /// Delayed-ACK timer, seconds.
    pub delack: f64,
    /// ACK at once when this many full-sized segments are unacknowledged.
    pub ack_every: u32,
    /// Segments ACKed immediately at the start of a connection (Linux quick-ACK mode; 0 = none).
    pub quickack: u32,
    /// Duplicate ACKs that trigger fast retransmit.
    pub dupthresh: u32,
    /// Limited Transmit (RFC 3042): each of the first duplicate ACKs releases one new segment.
    pub limited_transmit: bool,
    /// Proportional Rate Reduction (RFC 6937, Linux's variant) during fast recovery; off gives
    /// RFC 6582's window inflation and deflation.
    pub prr: bool,
    /// Slow-start increase per ACK in segments (appropriate byte counting limit L); `None` =
    /// all newly acknowledged segments (Linux).
    pub abc_limit: Option<u32>,
    /// Receive window in bytes; `None` = never limiting.
    pub rwnd: Option<u32>,
    /// Take an RTT sample from the handshake (Linux does, when the SYN or SYN-ACK was not
    /// retransmitted).
    pub handshake_rtt: bool,
}

impl TcpConfig {
    /// Linux defaults (kernel 4.x/5.x) on the coapcc testbed MTU of 296 bytes.
    pub const LINUX: TcpConfig = TcpConfig {
        mtu: 296,
        header_bytes: 40,
        init_cwnd: 10,
        init_rto: 1.0,
        min_rto: 0.2,
        max_rto: 120.0,
        rto_min_mode: RtoMinMode::Linux,
        rtt_estimator: RttEstimator::Linux,
        rto_backoff_reset: RtoBackoffReset::Sample,
        syn_retries: 6,
        synack_retries: 5,
        delack: 0.2,
        ack_every: 2,
        quickack: 0,
        dupthresh: 3,
        limited_transmit: true,
        prr: true,
        abc_limit: None,
        rwnd: None,
        handshake_rtt: true,
    };

    /// Maximum segment size in bytes.
    pub fn mss(&self) -> u32 {
        self.mtu - self.header_bytes
    }

    /// The Helsinki CoAP-over-TCP study's settings (testbed spec §4): Linux with initial window
    /// 4, initial RTO 2 s, SYN/SYN-ACK retries 40/41 and MTU 296; New Reno's recovery as the
    /// thesis's §2 describes it (RFC 6582's inflation and deflation: `prr=off`; the kernel of
    /// the time also had PRR, `prr=on`); the RTO backoff kept "until a new data segment that
    /// did not require retransmissions is acknowledged" (`rto_backoff_reset=new_data`).
    pub const HELSINKI2018: TcpConfig = TcpConfig {
        mtu: 296,
        init_cwnd: 4,
        init_rto: 2.0,
        syn_retries: 40,
        synack_retries: 41,
        prr: false,
        rto_backoff_reset: RtoBackoffReset::NewData,
        ..TcpConfig::LINUX
    };

    fn apply_preset(&mut self, preset: Preset) -> Result<(), ()> {
        match preset {
            Preset::Helsinki2018 => {
                *self = TcpConfig::HELSINKI2018;
                Ok(())
            }
            _ => Err(()),
        }
    }

    fn set(&mut self, key: &str, v: &str) -> Result<(), SetError> {
        let info = TCP_INFO.iter().find(|p| p.matches(key)).ok_or(SetError::UnknownKey)?;
        match info.key {
            "mtu" => self.mtu = parse_u32(v, 68, 65535, "an MTU in bytes, 68-65535")?,
            "header_bytes" => self.header_bytes = parse_u32(v, 20, 120, "header bytes, 20-120")?,
            "iw" => self.init_cwnd = parse_u32(v, 1, 1000, "segments, 1-1000")?,
            "init_rto" => self.init_rto = parse_secs(v, false)?,
            "min_rto" => self.min_rto = parse_secs(v, false)?,
            "max_rto" => self.max_rto = parse_secs(v, false)?,
            "rto_min_mode" => self.rto_min_mode = parse_choice(v, RTO_MIN_MODES, "linux or rfc6298")?,
            "rtt_estimator" => self.rtt_estimator = parse_choice(v, RTT_ESTIMATORS, "linux or rfc6298")?,
            "rto_backoff_reset" => {
                self.rto_backoff_reset = parse_choice(v, RTO_BACKOFF_RESETS, "sample, new_data or ack")?
            }
            "syn_retries" => self.syn_retries = parse_u32(v, 0, 255, "a count, 0-255")?,
            "synack_retries" => self.synack_retries = parse_u32(v, 0, 255, "a count, 0-255")?,
            "delack" => self.delack = parse_secs(v, true)?,
            "ack_every" => self.ack_every = parse_u32(v, 1, 64, "segments, 1-64")?,
            "quickack" => self.quickack = parse_u32(v, 0, 1_000_000, "a count of segments")?,
            "dupthresh" => self.dupthresh = parse_u32(v, 1, 1000, "a count, 1-1000")?,
            "limited_transmit" => self.limited_transmit = parse_bool(v)?,
            "prr" => self.prr = parse_bool(v)?,
            "abc_limit" => {
                self.abc_limit =
                    if eq_choice("none", v) { None } else { Some(parse_u32(v, 1, 1000, "none, or segments 1-1000")?) }
            }
            "rwnd" => {
                self.rwnd =
                    if eq_choice("none", v) { None } else { Some(parse_u32(v, 1, u32::MAX, "none, or bytes >= 1")?) }
            }
            "handshake_rtt" => self.handshake_rtt = parse_bool(v)?,
            _ => return Err(SetError::UnknownKey),
        }
        Ok(())
    }

    fn write(&self, w: &mut KvWriter<'_>) -> fmt::Result {
        w.kv("mtu", self.mtu)?;
        w.kv("header_bytes", self.header_bytes)?;
        w.kv("iw", self.init_cwnd)?;
        w.kv("init_rto", self.init_rto)?;
        w.kv("min_rto", self.min_rto)?;
        w.kv("max_rto", self.max_rto)?;
        w.kv("rto_min_mode", choice_name(self.rto_min_mode, RTO_MIN_MODES))?;
        w.kv("rtt_estimator", choice_name(self.rtt_estimator, RTT_ESTIMATORS))?;
        w.kv("rto_backoff_reset", choice_name(self.rto_backoff_reset, RTO_BACKOFF_RESETS))?;
        w.kv("syn_retries", self.syn_retries)?;
        w.kv("synack_retries", self.synack_retries)?;
        w.kv("delack", self.delack)?;
        w.kv("ack_every", self.ack_every)?;
        w.kv("quickack", self.quickack)?;
        w.kv("dupthresh", self.dupthresh)?;
        w.flag("limited_transmit", self.limited_transmit)?;
        w.flag("prr", self.prr)?;
        match self.abc_limit {
            Some(l) => w.kv("abc_limit", l)?,
            None => w.kv("abc_limit", "none")?,
        }
        match self.rwnd {
            Some(r) => w.kv("rwnd", r)?,
            None => w.kv("rwnd", "none")?,
        }
        w.flag("handshake_rtt", self.handshake_rtt)
    }

    fn validate(&self) -> Result<(), (&'static str, &'static str)> {
        if self.header_bytes + 1 > self.mtu {
            return Err(("mtu", "must exceed header_bytes"));
        }
        if self.min_rto > self.max_rto {
            return Err(("min_rto", "must not exceed max_rto"));
        }
        Ok(())
    }
}

/// Parameters shared by every TCP congestion control.
pub const TCP_INFO: &[ParamInfo] = &[
    ParamInfo { key: "mtu", aliases: &[], default: "296", values: "68-65535", doc: "Path MTU in bytes; the MSS is mtu - header_bytes (296 - 40 = 256 on the testbed)." },
    ParamInfo { key: "header_bytes", aliases: &[], default: "40", values: "20-120", doc: "TCP/IP header bytes per segment: IPv4 + TCP without options (no timestamps, no SACK)." },
    ParamInfo { key: "iw", aliases: &["init_cwnd", "initcwnd"], default: "10", values: "1-1000", doc: "Initial congestion window in segments (Linux 10; the Helsinki study set 4)." },
    ParamInfo { key: "init_rto", aliases: &[], default: "1", values: "seconds > 0", doc: "RTO before the first RTT sample, and the first SYN/SYN-ACK timeout (Linux 1 s; the study set 2 s)." },
    ParamInfo { key: "min_rto", aliases: &["rto_min"], default: "0.2", values: "seconds > 0", doc: "Minimum RTO (Linux 200 ms; RFC 6298 1 s)." },
    ParamInfo { key: "max_rto", aliases: &["rto_max"], default: "120", values: "seconds > 0", doc: "Maximum (backed-off) RTO (Linux 120 s)." },
    ParamInfo { key: "rto_min_mode", aliases: &[], default: "linux", values: "linux, rfc6298", doc: "With rtt_estimator=rfc6298: linux: RTO = SRTT + max(4 RTTVAR, min_rto); rfc6298: RTO = max(min_rto, SRTT + 4 RTTVAR)." },
    ParamInfo { key: "rtt_estimator", aliases: &[], default: "linux", values: "linux, rfc6298", doc: "linux: tcp_rtt_estimator (the variance term is the round trip's largest mdev, at least min_rto, decaying once per round trip); rfc6298: RFC 6298 section 2." },
    ParamInfo { key: "rto_backoff_reset", aliases: &[], default: "sample", values: "sample, new_data, ack", doc: "What ends the RTO backoff: sample (Linux, RFC 6298 with Karn: an RTT sample, i.e. an ACK covering no retransmitted segment), new_data (an ACK newly covering any segment never retransmitted: the thesis's wording) or ack (every ACK of new data, as ns-3)." },
    ParamInfo { key: "syn_retries", aliases: &[], default: "6", values: "0-255", doc: "SYN retransmissions before connect fails (Linux 6; the study set 40)." },
    ParamInfo { key: "synack_retries", aliases: &[], default: "5", values: "0-255", doc: "SYN-ACK retransmissions before the passive side gives up (Linux 5; the study set 41)." },
    ParamInfo { key: "delack", aliases: &["delayed_ack"], default: "0.2", values: "seconds >= 0", doc: "Delayed-ACK timer (the study: a constant 200 ms)." },
    ParamInfo { key: "ack_every", aliases: &[], default: "2", values: "1-64", doc: "ACK at once when this many full-sized segments are unacknowledged (RFC 5681: every second)." },
    ParamInfo { key: "quickack", aliases: &[], default: "0", values: "segments >= 0", doc: "Segments ACKed at once at connection start (Linux quick-ACK mode acks up to 16; the study describes plain delayed ACKs)." },
    ParamInfo { key: "dupthresh", aliases: &[], default: "3", values: "1-1000", doc: "Duplicate ACKs that trigger fast retransmit." },
    ParamInfo { key: "limited_transmit", aliases: &[], default: "on", values: "on, off", doc: "RFC 3042 Limited Transmit (Linux default, on in the study)." },
    ParamInfo { key: "prr", aliases: &[], default: "on", values: "on, off", doc: "Proportional Rate Reduction in fast recovery as Linux does it (since 3.2); off: RFC 6582 cwnd inflation and deflation, as the thesis describes recovery (helsinki2018). BBR sets cwnd itself and takes neither." },
    ParamInfo { key: "abc_limit", aliases: &["abc_l"], default: "none", values: "none, 1-1000", doc: "Slow-start growth per ACK in segments; none = every newly acknowledged segment (Linux); 1 = RFC 5681's 1 SMSS per ACK." },
    ParamInfo { key: "rwnd", aliases: &[], default: "none", values: "none, bytes", doc: "Receive window; none = never limiting (window scaling on, large buffers)." },
    ParamInfo { key: "handshake_rtt", aliases: &[], default: "on", values: "on, off", doc: "Seed SRTT/RTTVAR (and BBR's min RTT) from the SYN or SYN-ACK round trip, as Linux does (Karn: not if retransmitted)." },
];

/// New Reno (RFC 5681 + RFC 6582) parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NewRenoParams {
    /// What ssthresh is halved from on loss.
    pub ssthresh_base: SsthreshBase,
}

impl Default for NewRenoParams {
    fn default() -> Self {
        NewRenoParams { ssthresh_base: SsthreshBase::Cwnd }
    }
}

/// New Reno's own parameters.
pub const NEWRENO_INFO: &[ParamInfo] = &[ParamInfo {
    key: "ssthresh_base",
    aliases: &[],
    default: "cwnd",
    values: "cwnd, flight",
    doc: "ssthresh on loss: max(cwnd/2, 2) segments (Linux) or RFC 5681's max(FlightSize/2, 2 SMSS).",
}];

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
    fn set(&mut self, key: &str, v: &str) -> Result<(), SetError> {
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

    fn write(&self, w: &mut KvWriter<'_>) -> fmt::Result {
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

/// Which congestion control, with its own parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CcKind {
    /// TCP New Reno.
    NewReno(NewRenoParams),
    /// TCP BBR v1.
    Bbr(BbrParams),
}

/// Which defaults a TCP configuration starts from (the first key of its canonical form).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpBase {
    /// Linux's defaults (`preset=linux`; what a name alone means).
    Linux,
    /// A reproduction preset's values.
    Preset(Preset),
}

impl TcpBase {
    /// `linux`, or the preset's name.
    pub fn name(self) -> &'static str {
        match self {
            TcpBase::Linux => "linux",
            TcpBase::Preset(p) => p.name(),
        }
    }
}

/// Names accepted by `preset=` in a TCP specification: `linux` (the defaults) and every
/// reproduction preset that defines TCP settings.
pub const TCP_PRESETS: &[&str] = &["linux", "helsinki2018"];

/// A complete TCP configuration: the congestion control and the shared machinery.
/// Text form: `newreno[:key=value,...]` / `bbr[:key=value,...]`, `preset=helsinki2018` (or
/// `preset=linux`, the defaults) allowed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TcpCcConfig {
    /// The congestion control.
    pub cc: CcKind,
    /// Everything else.
    pub tcp: TcpConfig,
    /// The defaults the parameters started from.
    pub base: TcpBase,
}

/// Names of the TCP congestion controls, for listings.
pub const TCP_CC_NAMES: &[&str] = &["newreno", "bbr"];

/// Why a textual TCP configuration was rejected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TcpSpecError(pub String);

impl fmt::Display for TcpSpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TcpSpecError {}

impl TcpCcConfig {
    /// New Reno with Linux defaults.
    pub fn newreno() -> Self {
        TcpCcConfig { cc: CcKind::NewReno(NewRenoParams::default()), tcp: TcpConfig::LINUX, base: TcpBase::Linux }
    }

    /// BBR v1 with Linux defaults.
    pub fn bbr() -> Self {
        TcpCcConfig { cc: CcKind::Bbr(BbrParams::default()), tcp: TcpConfig::LINUX, base: TcpBase::Linux }
    }

    /// Canonical name of the congestion control.
    pub fn name(&self) -> &'static str {
        match self.cc {
            CcKind::NewReno(_) => "newreno",
            CcKind::Bbr(_) => "bbr",
        }
    }

    /// The congestion control's own parameters (the shared ones are [`TCP_INFO`]).
    pub fn params(&self) -> &'static [ParamInfo] {
        match self.cc {
            CcKind::NewReno(_) => NEWRENO_INFO,
            CcKind::Bbr(_) => BBR_INFO,
        }
    }

    /// Apply a reproduction preset; `Err` names a preset that defines nothing for TCP.
    pub fn apply_preset(&mut self, preset: Preset) -> Result<(), TcpSpecError> {
        self.tcp
            .apply_preset(preset)
            .map_err(|_| TcpSpecError(format!("preset '{}' defines no settings for {}", preset.name(), self.name())))?;
        match &mut self.cc {
            CcKind::NewReno(p) => *p = NewRenoParams::default(),
            // The 2018 kernels paced at the full estimate (the 1 % margin came in 4.20).
            CcKind::Bbr(p) => *p = BbrParams { pacing_margin: 0.0, ..BbrParams::default() },
        }
        self.base = TcpBase::Preset(preset);
        Ok(())
    }

    /// Back to Linux's defaults (`preset=linux`).
    pub fn reset_to_linux(&mut self) {
        *self = match self.cc {
            CcKind::NewReno(_) => TcpCcConfig::newreno(),
            CcKind::Bbr(_) => TcpCcConfig::bbr(),
        };
    }

    /// This configuration's congestion control and defaults with `preset` applied: the
    /// `helsinki2018` values beside the Linux ones (`coapcc algorithms newreno`).
    pub fn with_preset(&self, preset: Preset) -> Result<TcpCcConfig, TcpSpecError> {
        let mut c = *self;
        c.reset_to_linux();
        c.apply_preset(preset)?;
        Ok(c)
    }

    /// Set one parameter (congestion-control or shared).
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), SetError> {
        let own = match &mut self.cc {
            CcKind::NewReno(p) => {
                if NEWRENO_INFO[0].matches(key) {
                    p.ssthresh_base = parse_choice(value, SSTHRESH_BASES, "cwnd or flight")?;
                    Ok(())
                } else {
                    Err(SetError::UnknownKey)
                }
            }
            CcKind::Bbr(p) => p.set(key, value),
        };
        match own {
            Err(SetError::UnknownKey) => self.tcp.set(key, value),
            r => r,
        }
    }

    /// Parse `NAME[:key=value,...]`; a `preset=` pair is applied first, the rest in order.
    pub fn parse(spec: &str) -> Result<TcpCcConfig, TcpSpecError> {
        let spec = spec.trim();
        let (name, rest) = match spec.find(':') {
            Some(i) => (spec[..i].trim(), Some(&spec[i + 1..])),
            None => (spec, None),
        };
        let mut cfg = if eq_choice("newreno", name) || eq_choice("reno", name) || eq_choice("new-reno", name) {
            TcpCcConfig::newreno()
        } else if eq_choice("bbr", name) || eq_choice("bbr1", name) {
            TcpCcConfig::bbr()
        } else {
            let hint = coapcc_cc::names::hint(name, ["newreno", "bbr"]);
            return Err(TcpSpecError(format!("unknown TCP congestion control '{name}'{hint}; valid: newreno, bbr")));
        };
        let pairs: Vec<&str> =
            rest.into_iter().flat_map(|r| r.split(',')).map(str::trim).filter(|p| !p.is_empty()).collect();
        let mut kv = Vec::with_capacity(pairs.len());
        for p in pairs {
            match p.find('=') {
                Some(i) => kv.push((p[..i].trim(), p[i + 1..].trim())),
                None => return Err(TcpSpecError(format!("parameter '{p}' has no value: write key=value"))),
            }
        }
        for (k, v) in &kv {
            if eq_choice("preset", k) {
                if eq_choice("linux", v) {
                    cfg.reset_to_linux();
                    continue;
                }
                let preset = Preset::parse(v).ok_or_else(|| {
                    let hint = coapcc_cc::names::hint(v, TCP_PRESETS.iter().copied());
                    TcpSpecError(format!(
                        "unknown preset '{v}' for {}{hint}; valid: {}",
                        cfg.name(),
                        TCP_PRESETS.join(", ")
                    ))
                })?;
                cfg.apply_preset(preset)?;
            }
        }
        for (k, v) in &kv {
            if eq_choice("preset", k) {
                continue;
            }
            cfg.set(k, v).map_err(|e| match e {
                SetError::UnknownKey => {
                    let mut valid = String::from("preset");
                    for p in cfg.params().iter().chain(TCP_INFO) {
                        valid.push_str(", ");
                        valid.push_str(p.key);
                    }
                    TcpSpecError(format!("unknown parameter '{k}' for {}; valid parameters: {valid}", cfg.name()))
                }
                SetError::BadValue { expected } => {
                    TcpSpecError(format!("bad value '{v}' for parameter '{k}': expected {expected}"))
                }
            })?;
        }
        cfg.tcp
            .validate()
            .map_err(|(k, p)| TcpSpecError(format!("invalid configuration of {}: '{k}' {p}", cfg.name())))?;
        Ok(cfg)
    }
}

/// Canonical, fully resolved form: `NAME:preset=BASE,own params,shared params`, where BASE
/// (`linux` or `helsinki2018`) names the defaults the values started from.
impl fmt::Display for TcpCcConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:", self.name())?;
        let mut w = KvWriter::new(f);
        w.kv("preset", self.base.name())?;
        match &self.cc {
            CcKind::NewReno(p) => w.kv("ssthresh_base", choice_name(p.ssthresh_base, SSTHRESH_BASES))?,
            CcKind::Bbr(p) => p.write(&mut w)?,
        }
        self.tcp.write(&mut w)
    }
}
