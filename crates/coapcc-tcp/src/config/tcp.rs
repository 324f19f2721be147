//! The TCP machinery's parameters, shared by every congestion control: handshake, ACKs and
//! the receiver, RTO, loss recovery ([`TcpConfig`], [`TCP_INFO`]).

use core::fmt;

use coapcc_cc::params::{choice_name, eq_choice, parse_bool, parse_choice, parse_secs, parse_u32, KvWriter};

use super::{ParamInfo, Preset, SetError};

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

/// How the receiver decides when to acknowledge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReceiverModel {
    /// Linux 4.15's receiver: quick-ACK mode (at the start, while the receive window opens,
    /// after a duplicate segment, after a long silence), the adaptive delayed-ACK timeout
    /// `ato`, interactive (pingpong) mode, the ACK a read sends after a short segment.
    Linux,
    /// RFC 5681 §4.2 as a fixed rule: every `ack_every`-th full segment, at once for
    /// out-of-order data, duplicates and hole fills, otherwise after the constant `delack`.
    Rfc5681,
}

const RECEIVER_MODELS: &[(&str, ReceiverModel)] =
    &[("linux", ReceiverModel::Linux), ("rfc5681", ReceiverModel::Rfc5681)];

/// What the Linux receiver's delayed-ACK timeout is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DelackTimer {
    /// Linux's estimate `ato` (40 ms to 200/500 ms, adapted to the data's arrival spacing).
    Ato,
    /// Always `delack` (a constant timer, as the thesis describes it).
    Fixed,
}

const DELACK_TIMERS: &[(&str, DelackTimer)] = &[("ato", DelackTimer::Ato), ("fixed", DelackTimer::Fixed)];

/// Linux 4.15 x86-64 with the default `tcp_rmem` (87380 B) and `tcp_adv_win_scale` (1): the
/// receive buffer `tcp_fixup_rcvbuf` sets, half of which is window (`tcp_full_space`).
/// `SKB_TRUESIZE(mss + MAX_TCP_HEADER)` with a 304-byte `MAX_TCP_HEADER` and 576 bytes of
/// `sk_buff` and `skb_shared_info`, times `tcp_default_init_rwnd(mss)`: twice
/// `TCP_INIT_CWND`, 20 segments at MSS <= 1460 (not the window offered at the handshake).
fn linux_rcvbuf(mss: u32) -> u32 {
    let truesize = mss + 304 + 576;
    let default_init_rwnd = if mss > 1460 { (1460 * 20 / mss).max(2) } else { 20 };
    // 2 × truesize × tcp_default_init_rwnd, × 4 with tcp_moderate_rcvbuf; at most tcp_rmem[2].
    (8 * truesize * default_init_rwnd).clamp(87_380, 6_291_456)
}

/// What the Reno ssthresh is computed from on a loss.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SsthreshBase {
    /// Linux `tcp_reno_ssthresh`: `max(cwnd / 2, 2)` segments.
    Cwnd,
    /// RFC 5681 eq. 4: `max(FlightSize / 2, 2·SMSS)`.
    Flight,
}

pub(super) const SSTHRESH_BASES: &[(&str, SsthreshBase)] =
    &[("cwnd", SsthreshBase::Cwnd), ("flight", SsthreshBase::Flight)];

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
    /// `rfc5681` receiver: segments ACKed immediately at the start of a connection (0 = none).
    pub quickack: u32,
    /// When to acknowledge: Linux 4.15's receiver or RFC 5681's fixed rule.
    pub receiver: ReceiverModel,
    /// Linux receiver: an out-of-order segment enters quick-ACK mode (Linux up to 4.17; 4.18
    /// stopped it).
    pub quickack_ofo: bool,
    /// Linux receiver: the delayed-ACK timeout (the adaptive `ato`, or `delack` always).
    pub delack_timer: DelackTimer,
    /// Linux receiver: the window offered at the handshake, segments (`TCP_DEFAULT_INIT_RCVWND`).
    pub init_rwnd: u32,
    /// Linux receiver: the largest window it grows to (`window_clamp`), bytes; `None` = what
    /// Linux 4.15 sets with default buffers.
    pub rcv_clamp: Option<u32>,
    /// Duplicate ACKs that trigger fast retransmit.
    pub dupthresh: u32,
    /// Limited Transmit (RFC 3042): each of the first duplicate ACKs releases one new segment.
    pub limited_transmit: bool,
    /// Proportional Rate Reduction (RFC 6937, Linux's variant) during fast recovery; off gives
    /// RFC 6582's window inflation and deflation.
    pub prr: bool,
    /// Hold Recovery, and an RTO's Loss, while the ACKs reach `high_seq` exactly (Linux
    /// `tcp_try_undo_recovery` for Reno; RFC 6582 §3.2 step 2): the episode ends only on an
    /// ACK above it, and duplicate ACKs meanwhile count for nothing. Off: an ACK of `high_seq`
    /// ends it.
    pub recover_hold: bool,
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
        receiver: ReceiverModel::Linux,
        quickack_ofo: false,
        delack_timer: DelackTimer::Ato,
        init_rwnd: 10,
        rcv_clamp: None,
        dupthresh: 3,
        limited_transmit: true,
        prr: true,
        recover_hold: false,
        abc_limit: None,
        rwnd: None,
        handshake_rtt: true,
    };

    /// Maximum segment size in bytes.
    pub fn mss(&self) -> u32 {
        self.mtu - self.header_bytes
    }

    /// The largest window the Linux receiver announces (`tp->window_clamp`): `rcv_clamp`, or
    /// what `tcp_init_buffer_space` sets: half the receive buffer less one segment.
    pub fn window_clamp(&self) -> u32 {
        let mss = self.mss();
        self.rcv_clamp.unwrap_or_else(|| {
            let full = linux_rcvbuf(mss).div_ceil(2);
            full.saturating_sub(mss).max(2 * mss)
        })
    }

    /// The Helsinki CoAP-over-TCP study's settings (testbed spec §4): Linux with initial window
    /// 4, initial RTO 2 s, SYN/SYN-ACK retries 40/41 and MTU 296; New Reno's recovery as the
    /// thesis's §2 describes it (RFC 6582's inflation and deflation: `prr=off`; the kernel of
    /// the time also had PRR, `prr=on`); the receiver of the kernel of the time, Linux 4.15
    /// (`receiver=linux` with `quickack_ofo=on`: out-of-order data entered quick-ACK mode until
    /// 4.18); the RTO backoff kept "until a new data segment that did not require
    /// retransmissions is acknowledged" (`rto_backoff_reset=new_data`).
    pub const HELSINKI2018: TcpConfig = TcpConfig {
        mtu: 296,
        init_cwnd: 4,
        init_rto: 2.0,
        syn_retries: 40,
        synack_retries: 41,
        prr: false,
        rto_backoff_reset: RtoBackoffReset::NewData,
        quickack_ofo: true,
        ..TcpConfig::LINUX
    };

    pub(super) fn apply_preset(&mut self, preset: Preset) -> Result<(), ()> {
        match preset {
            Preset::Helsinki2018 => {
                *self = TcpConfig::HELSINKI2018;
                Ok(())
            }
            _ => Err(()),
        }
    }

    pub(super) fn set(&mut self, key: &str, v: &str) -> Result<(), SetError> {
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
            "receiver" => self.receiver = parse_choice(v, RECEIVER_MODELS, "linux or rfc5681")?,
            "quickack_ofo" => self.quickack_ofo = parse_bool(v)?,
            "delack_timer" => self.delack_timer = parse_choice(v, DELACK_TIMERS, "ato or fixed")?,
            "init_rwnd" => self.init_rwnd = parse_u32(v, 1, 1000, "segments, 1-1000")?,
            "rcv_clamp" => {
                self.rcv_clamp =
                    if eq_choice("auto", v) { None } else { Some(parse_u32(v, 1, u32::MAX, "auto, or bytes >= 1")?) }
            }
            "dupthresh" => self.dupthresh = parse_u32(v, 1, 1000, "a count, 1-1000")?,
            "limited_transmit" => self.limited_transmit = parse_bool(v)?,
            "prr" => self.prr = parse_bool(v)?,
            "recover_hold" => self.recover_hold = parse_bool(v)?,
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

    pub(super) fn write(&self, w: &mut KvWriter<'_>) -> fmt::Result {
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
        w.kv("receiver", choice_name(self.receiver, RECEIVER_MODELS))?;
        w.flag("quickack_ofo", self.quickack_ofo)?;
        w.kv("delack_timer", choice_name(self.delack_timer, DELACK_TIMERS))?;
        w.kv("init_rwnd", self.init_rwnd)?;
        match self.rcv_clamp {
            Some(c) => w.kv("rcv_clamp", c)?,
            None => w.kv("rcv_clamp", "auto")?,
        }
        w.kv("dupthresh", self.dupthresh)?;
        w.flag("limited_transmit", self.limited_transmit)?;
        w.flag("prr", self.prr)?;
        w.flag("recover_hold", self.recover_hold)?;
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

    pub(super) fn validate(&self) -> Result<(), (&'static str, &'static str)> {
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
    ParamInfo { key: "receiver", aliases: &[], default: "linux", values: "linux, rfc5681", doc: "When to ACK: linux (Linux 4.15: quick-ACK mode at the start, while the window opens, after a duplicate segment; adaptive delayed-ACK timeout ato; interactive mode) or rfc5681 (every ack_every-th full segment, out-of-order data at once, else after the constant delack)." },
    ParamInfo { key: "quickack_ofo", aliases: &[], default: "off", values: "on, off", doc: "Linux receiver: an out-of-order segment enters quick-ACK mode (Linux <= 4.17, on in helsinki2018; 4.18 stopped it)." },
    ParamInfo { key: "delack_timer", aliases: &[], default: "ato", values: "ato, fixed", doc: "Linux receiver: the delayed-ACK timeout is Linux's estimate ato (40 ms up to 200 or 500 ms) or always delack." },
    ParamInfo { key: "delack", aliases: &["delayed_ack"], default: "0.2", values: "seconds >= 0", doc: "Delayed-ACK timer of the rfc5681 receiver and of delack_timer=fixed; with ato, its bound for interactive or short segments (Linux TCP_DELACK_MAX)." },
    ParamInfo { key: "ack_every", aliases: &[], default: "2", values: "1-64", doc: "ACK at once when more than ack_every - 1 full-sized segments are unacknowledged (RFC 5681 and Linux: every second)." },
    ParamInfo { key: "quickack", aliases: &[], default: "0", values: "segments >= 0", doc: "rfc5681 receiver: segments ACKed at once at connection start (the linux receiver counts its own)." },
    ParamInfo { key: "init_rwnd", aliases: &["initrwnd"], default: "10", values: "1-1000", doc: "Linux receiver: window offered at the handshake in segments (TCP_DEFAULT_INIT_RCVWND); its half in segments is the quick-ACK count, up to 16." },
    ParamInfo { key: "rcv_clamp", aliases: &["window_clamp"], default: "auto", values: "auto, bytes", doc: "Linux receiver: the window stops growing (and each segment stops being ACKed at once) here; auto = Linux 4.15 with default buffers (90 624 B at MSS 256)." },
    ParamInfo { key: "dupthresh", aliases: &[], default: "3", values: "1-1000", doc: "Duplicate ACKs that trigger fast retransmit." },
    ParamInfo { key: "limited_transmit", aliases: &[], default: "on", values: "on, off", doc: "RFC 3042 Limited Transmit (Linux default, on in the study)." },
    ParamInfo { key: "prr", aliases: &[], default: "on", values: "on, off", doc: "Proportional Rate Reduction in fast recovery as Linux does it (since 3.2); off: RFC 6582 cwnd inflation and deflation, as the thesis describes recovery (helsinki2018). BBR sets cwnd itself and takes neither." },
    ParamInfo { key: "recover_hold", aliases: &[], default: "off", values: "on, off", doc: "Hold Recovery, and an RTO's Loss, until an ACK covers more than high_seq, duplicate ACKs counting for nothing meanwhile (Linux tcp_input.c tcp_try_undo_recovery for Reno; RFC 6582 section 3.2 step 2); off (also helsinki2018): an ACK of high_seq exactly ends the episode. Alone, on takes the model further from a real kernel (docs/tcp.md)." },
    ParamInfo { key: "abc_limit", aliases: &["abc_l"], default: "none", values: "none, 1-1000", doc: "Slow-start growth per ACK in segments; none = every newly acknowledged segment (Linux); 1 = RFC 5681's 1 SMSS per ACK." },
    ParamInfo { key: "rwnd", aliases: &[], default: "none", values: "none, bytes", doc: "Receive window; none = never limiting (window scaling on, large buffers)." },
    ParamInfo { key: "handshake_rtt", aliases: &[], default: "on", values: "on, off", doc: "Seed SRTT/RTTVAR (and BBR's min RTT) from the SYN or SYN-ACK round trip, as Linux does (Karn: not if retransmitted)." },
];
