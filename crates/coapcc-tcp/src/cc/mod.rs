//! Congestion controls behind one small trait, in the shape of Linux's `tcp_congestion_ops`:
//! the sender core owns loss detection and recovery (fast retransmit, PRR, RTO) and calls
//! the controller at the same points Linux does.

pub mod bbr;
pub mod minmax;
pub mod newreno;

use coapcc_cc::{Instant, SplitMix64};

use crate::config::{CcKind, TcpConfig};

pub use bbr::{Bbr, BbrMode};
pub use newreno::NewReno;

/// ssthresh before any loss ("as high as possible").
pub const INFINITE_SSTHRESH: u32 = u32::MAX;

/// Linux's congestion-avoidance state machine (`icsk_ca_state`), without SACK.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CaState {
    /// Normal operation.
    Open,
    /// Duplicate ACKs seen, fewer than the threshold.
    Disorder,
    /// Fast recovery (RFC 6582) after a fast retransmit.
    Recovery,
    /// After a retransmission timeout, until everything sent before it is acknowledged.
    Loss,
}

impl CaState {
    /// Lower-case name for traces.
    pub fn name(self) -> &'static str {
        match self {
            CaState::Open => "open",
            CaState::Disorder => "disorder",
            CaState::Recovery => "recovery",
            CaState::Loss => "loss",
        }
    }
}

/// The sender state a congestion control reads and writes (segment units, like Linux).
#[derive(Clone, Debug)]
pub struct CcCtx {
    /// Congestion window, segments.
    pub cwnd: u32,
    /// Slow-start threshold, segments.
    pub ssthresh: u32,
    /// Linux `snd_cwnd_cnt`: ACKed segments counted towards the next congestion-avoidance increase.
    pub cwnd_cnt: u32,
    /// Segments in flight (Linux `tcp_packets_in_flight`), after the current ACK.
    pub in_flight: u32,
    /// Segments delivered so far (cumulatively ACKed, plus one per duplicate ACK).
    pub delivered: u64,
    /// When `delivered` last grew.
    pub delivered_time: Instant,
    /// Segments marked lost so far, a retransmission lost again counted again (Linux
    /// `tp->lost`).
    pub lost: u64,
    /// Linux `tp->app_limited`: 0, or the `delivered` count up to which rate samples are
    /// application-limited. The sender sets it when it runs out of data
    /// (`tcp_rate_check_app_limited`), BBR while in ProbeRTT (`bbr_update_min_rtt`); it is
    /// cleared once `delivered` passes it (`tcp_rate_gen`).
    pub app_limited: u64,
    /// Current state.
    pub ca_state: CaState,
    /// Whether the window limited sending recently (Linux `tcp_is_cwnd_limited`).
    pub cwnd_limited: bool,
    /// Smoothed RTT in seconds, once sampled.
    pub srtt: Option<f64>,
    /// Smallest RTT sample seen so far, seconds (Linux `tcp_min_rtt`).
    pub min_rtt: Option<f64>,
    /// Path MTU (bytes per full segment on the wire), for pacing.
    pub mtu: u32,
    /// Initial window, segments.
    pub init_cwnd: u32,
    /// Slow-start growth limit per ACK (`None`: unlimited).
    pub abc_limit: Option<u32>,
}

/// One rate sample (Linux `struct rate_sample`), built by the sender on every ACK.
#[derive(Clone, Copy, Debug, Default)]
pub struct RateSample {
    /// Segments delivered over the sample interval; negative when there is no sample.
    pub delivered: i64,
    /// Sample interval in seconds; `<= 0` when invalid.
    pub interval: f64,
    /// `delivered` at the time the newest acknowledged segment was sent.
    pub prior_delivered: u64,
    /// Sampled while the application, not the window, limited sending.
    pub is_app_limited: bool,
    /// RTT of the newest acknowledged segment (no sample if any retransmission was ACKed).
    pub rtt: Option<f64>,
    /// Segments newly marked lost while processing this ACK.
    pub losses: u32,
    /// Segments newly ACKed or counted by a duplicate ACK.
    pub acked_sacked: u32,
    /// In flight before this ACK.
    pub prior_in_flight: u32,
}

/// A TCP congestion control.
pub trait TcpCongestionControl {
    /// Called once when the connection is established.
    fn init(&mut self, ctx: &mut CcCtx, now: Instant);
    /// ssthresh to use on entering Recovery or Loss.
    fn ssthresh(&mut self, ctx: &CcCtx) -> u32;
    /// The congestion-avoidance state changes (Linux `set_state`).
    fn set_state(&mut self, ctx: &mut CcCtx, state: CaState, rng: &mut SplitMix64);
    /// Window growth on an ACK when not in Recovery (Linux `cong_avoid`); not called when
    /// [`TcpCongestionControl::cong_control`] returned `true`.
    fn cong_avoid(&mut self, ctx: &mut CcCtx, acked: u32);
    /// Full control on every ACK (Linux `cong_control`): return `true` if the controller has
    /// set cwnd itself, `false` to let the core do PRR or call `cong_avoid`.
    fn cong_control(&mut self, ctx: &mut CcCtx, rs: &RateSample, now: Instant, rng: &mut SplitMix64) -> bool;
    /// Pacing rate in wire bytes per second, if the controller paces.
    fn pacing_rate(&self) -> Option<f64>;
    /// BBR mode, if BBR.
    fn bbr_mode(&self) -> Option<BbrMode>;
}

/// Static dispatch over the available controllers.
#[derive(Clone, Debug)]
#[allow(clippy::large_enum_variant)]
pub enum TcpCc {
    /// New Reno.
    NewReno(NewReno),
    /// BBR v1.
    Bbr(Bbr),
}

impl TcpCc {
    /// Build a controller from its configuration.
    pub fn new(kind: &CcKind, tcp: &TcpConfig) -> TcpCc {
        match kind {
            CcKind::NewReno(p) => TcpCc::NewReno(NewReno::new(*p)),
            CcKind::Bbr(p) => TcpCc::Bbr(Bbr::new(*p, tcp)),
        }
    }

    /// Whether the controller sets cwnd on every ACK itself (Linux: it has `cong_control`),
    /// so that the core's window reduction in recovery (PRR, or RFC 6582's inflation and
    /// deflation) does not apply.
    pub fn owns_cwnd(&self) -> bool {
        matches!(self, TcpCc::Bbr(_))
    }
}

macro_rules! each {
    ($s:expr, $c:ident => $e:expr) => {
        match $s {
            TcpCc::NewReno($c) => $e,
            TcpCc::Bbr($c) => $e,
        }
    };
}

impl TcpCongestionControl for TcpCc {
    fn init(&mut self, ctx: &mut CcCtx, now: Instant) {
        each!(self, c => c.init(ctx, now))
    }
    fn ssthresh(&mut self, ctx: &CcCtx) -> u32 {
        each!(self, c => c.ssthresh(ctx))
    }
    fn set_state(&mut self, ctx: &mut CcCtx, state: CaState, rng: &mut SplitMix64) {
        each!(self, c => c.set_state(ctx, state, rng))
    }
    fn cong_avoid(&mut self, ctx: &mut CcCtx, acked: u32) {
        each!(self, c => c.cong_avoid(ctx, acked))
    }
    fn cong_control(&mut self, ctx: &mut CcCtx, rs: &RateSample, now: Instant, rng: &mut SplitMix64) -> bool {
        each!(self, c => c.cong_control(ctx, rs, now, rng))
    }
    fn pacing_rate(&self) -> Option<f64> {
        each!(self, c => c.pacing_rate())
    }
    fn bbr_mode(&self) -> Option<BbrMode> {
        each!(self, c => c.bbr_mode())
    }
}
