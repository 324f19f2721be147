//! TCP BBR v1, following Linux's `tcp_bbr.c` as of 4.15 (the same in what matters here from
//! 4.9 to 4.18): Startup, Drain, ProbeBW with the 8-phase gain cycle, ProbeRTT; BtlBw as
//! Linux's windowed running maximum (`lib/win_minmax.c`, [`super::minmax`]) over `bw_rounds`
//! round trips, RTprop as a min filter over `min_rtt_window`; pacing; the `cwnd_min` floor;
//! packet conservation in the first round of recovery and the cwnd restore after it. The
//! gains are state, set at the transitions where Linux sets them. While in ProbeRTT every
//! segment sent gives an application-limited rate sample (`tp->app_limited`, kept in
//! [`CcCtx::app_limited`]). On an RTO the core sets cwnd to 1 and marks everything lost
//! (go-back-N, as Linux); BBR resets its full-bandwidth counter, treats the RTO as a round
//! start and restores the saved cwnd when the loss episode ends. Linux's long-term
//! ("policer") bandwidth sampling (`bbr_lt_bw_sampling`) is modelled (`lt_sampling`): after a
//! loss, two sampling intervals of 4-16 round trips with a loss rate of at least 20 % and
//! delivery rates within 1/8 (or 4 kbit/s) of each other make BBR pace at their average,
//! with gain 1, for 48 round trips; an application-limited sample restarts the sampling.

use coapcc_cc::{Entropy, Instant, SplitMix64};

use super::minmax::MinMax;
use super::{CaState, CcCtx, RateSample, TcpCongestionControl, INFINITE_SSTHRESH};
use crate::config::{BbrParams, CycleStart, TcpConfig};

/// ProbeBW pacing gains, phase 0 to 7.
pub const CYCLE_GAINS: [f64; 8] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];

/// Linux's TCP_INIT_CWND, used by BBR as the target before any RTT sample and as the
/// delivered-segments threshold below which Startup keeps growing cwnd.
const LINUX_INIT_CWND: u32 = 10;

/// Long-term sampling (Linux `tcp_bbr.c`): shortest interval, round trips.
const LT_INTVL_MIN_RTTS: u32 = 4;
/// Loss rate (lost / delivered) that ends an interval: 50/256.
const LT_LOSS_THRESH: f64 = 50.0 / 256.0;
/// Two intervals' rates agree within this ratio ...
const LT_BW_RATIO: f64 = 1.0 / 8.0;
/// ... or within this many bytes per second (4 kbit/s).
const LT_BW_DIFF: f64 = 4000.0 / 8.0;
/// Round trips the long-term rate is used for.
const LT_BW_MAX_RTTS: u32 = 48;

/// BBR's state machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BbrMode {
    /// Exponential search for the bottleneck bandwidth.
    Startup,
    /// Drain the queue Startup built.
    Drain,
    /// Cycle pacing gains around the estimated bandwidth.
    ProbeBw,
    /// Cut inflight to `cwnd_min` to re-measure RTprop.
    ProbeRtt,
}

impl BbrMode {
    /// Lower-case name for traces.
    pub fn name(self) -> &'static str {
        match self {
            BbrMode::Startup => "startup",
            BbrMode::Drain => "drain",
            BbrMode::ProbeBw => "probe_bw",
            BbrMode::ProbeRtt => "probe_rtt",
        }
    }
}

/// BBR v1 state.
#[derive(Clone, Debug)]
pub struct Bbr {
    p: BbrParams,
    mode: BbrMode,
    /// BtlBw: Linux's windowed running maximum (`lib/win_minmax.c`) of the delivery rate in
    /// segments/s over `bw_rounds` round trips.
    bw: MinMax,
    min_rtt: Option<f64>,
    min_rtt_stamp: Instant,
    rtt_cnt: u64,
    next_rtt_delivered: u64,
    round_start: bool,
    full_bw: f64,
    full_bw_cnt: u32,
    full_bw_reached: bool,
    pacing_gain: f64,
    cwnd_gain: f64,
    cycle_idx: usize,
    cycle_stamp: Instant,
    prior_cwnd: u32,
    prev_ca_state: CaState,
    packet_conservation: bool,
    restore_cwnd: bool,
    probe_rtt_done: Option<Instant>,
    probe_rtt_round_done: bool,
    pacing_rate: f64,
    has_seen_rtt: bool,
    mtu: u32,
    lt: LongTerm,
}

/// Linux's long-term ("policer") bandwidth sampling state.
#[derive(Clone, Debug, Default)]
struct LongTerm {
    is_sampling: bool,
    use_bw: bool,
    /// Segments per second.
    bw: f64,
    rtt_cnt: u32,
    /// Interval start, whole milliseconds of `delivered_time` (Linux `lt_last_stamp`).
    last_stamp_ms: u64,
    last_delivered: u64,
    last_lost: u64,
}

/// Whole milliseconds of `t` (Linux's `div_u64(tp->delivered_mstamp, USEC_PER_MSEC)`).
fn ms(t: Instant) -> u64 {
    t.as_nanos() / 1_000_000
}

fn secs(s: f64) -> core::time::Duration {
    core::time::Duration::from_nanos((s * 1e9).round() as u64)
}

impl Bbr {
    /// A controller with these parameters.
    pub fn new(p: BbrParams, tcp: &TcpConfig) -> Self {
        Bbr {
            p,
            mode: BbrMode::Startup,
            bw: MinMax::default(),
            min_rtt: None,
            min_rtt_stamp: Instant::ZERO,
            rtt_cnt: 0,
            next_rtt_delivered: 0,
            round_start: false,
            full_bw: 0.0,
            full_bw_cnt: 0,
            full_bw_reached: false,
            pacing_gain: p.high_gain,
            cwnd_gain: p.high_gain,
            cycle_idx: 0,
            cycle_stamp: Instant::ZERO,
            prior_cwnd: 0,
            prev_ca_state: CaState::Open,
            packet_conservation: false,
            restore_cwnd: false,
            probe_rtt_done: None,
            probe_rtt_round_done: false,
            pacing_rate: 0.0,
            has_seen_rtt: false,
            mtu: tcp.mtu,
            lt: LongTerm::default(),
        }
    }

    /// The bandwidth pacing and cwnd use (Linux `bbr_bw`): the long-term rate while it is in
    /// use, else the max filter's.
    pub fn bw(&self) -> f64 {
        if self.lt.use_bw {
            self.lt.bw
        } else {
            self.max_bw()
        }
    }

    /// Whether the long-term ("policer") rate is in use.
    pub fn lt_use_bw(&self) -> bool {
        self.lt.use_bw
    }

    /// Whether a long-term sampling interval is under way (Linux `lt_is_sampling`).
    pub fn lt_is_sampling(&self) -> bool {
        self.lt.is_sampling
    }

    fn reset_lt_interval(&mut self, ctx: &CcCtx) {
        self.lt.last_stamp_ms = ms(ctx.delivered_time);
        self.lt.last_delivered = ctx.delivered;
        self.lt.last_lost = ctx.lost;
        self.lt.rtt_cnt = 0;
    }

    fn reset_lt(&mut self, ctx: &CcCtx) {
        self.lt.bw = 0.0;
        self.lt.use_bw = false;
        self.lt.is_sampling = false;
        self.reset_lt_interval(ctx);
    }

    /// Linux `bbr_lt_bw_interval_done`.
    fn lt_interval_done(&mut self, ctx: &CcCtx, bw: f64) {
        if self.lt.bw > 0.0 {
            let diff = (bw - self.lt.bw).abs();
            if diff <= LT_BW_RATIO * self.lt.bw || diff * f64::from(self.mtu) <= LT_BW_DIFF {
                self.lt.bw = (bw + self.lt.bw) / 2.0;
                self.lt.use_bw = true;
                self.pacing_gain = 1.0;
                self.lt.rtt_cnt = 0;
                return;
            }
        }
        self.lt.bw = bw;
        self.reset_lt_interval(ctx);
    }

    /// Linux `bbr_lt_bw_sampling`, once per ACK (and on an RTO, as a loss).
    fn lt_sampling(&mut self, ctx: &CcCtx, losses: u32, app_limited: bool, rng: &mut SplitMix64) {
        if !self.p.lt_sampling {
            return;
        }
        if self.lt.use_bw {
            if self.mode == BbrMode::ProbeBw && self.round_start {
                self.lt.rtt_cnt += 1;
                if self.lt.rtt_cnt >= LT_BW_MAX_RTTS {
                    self.reset_lt(ctx);
                    self.reset_probe_bw(ctx, rng);
                }
            }
            return;
        }
        if !self.lt.is_sampling {
            if losses == 0 {
                return;
            }
            self.reset_lt_interval(ctx);
            self.lt.is_sampling = true;
        }
        if app_limited {
            self.reset_lt(ctx);
            return;
        }
        if self.round_start {
            self.lt.rtt_cnt += 1;
        }
        if self.lt.rtt_cnt < LT_INTVL_MIN_RTTS {
            return;
        }
        if self.lt.rtt_cnt > 4 * LT_INTVL_MIN_RTTS {
            self.reset_lt(ctx);
            return;
        }
        if losses == 0 {
            return;
        }
        let lost = ctx.lost - self.lt.last_lost;
        let delivered = ctx.delivered - self.lt.last_delivered;
        if delivered == 0 || (lost as f64) < LT_LOSS_THRESH * delivered as f64 {
            return;
        }
        // Linux counts the interval in whole milliseconds of both stamps.
        let t_ms = ms(ctx.delivered_time).saturating_sub(self.lt.last_stamp_ms);
        if t_ms < 1 {
            return;
        }
        self.lt_interval_done(ctx, delivered as f64 / (t_ms as f64 / 1e3));
    }

    /// Current mode.
    pub fn mode(&self) -> BbrMode {
        self.mode
    }

    /// Current pacing gain.
    pub fn pacing_gain(&self) -> f64 {
        self.pacing_gain
    }

    /// Current cwnd gain.
    pub fn cwnd_gain(&self) -> f64 {
        self.cwnd_gain
    }

    /// Current ProbeBW phase index (0 = the 5/4 phase, 1 = the 3/4 phase).
    pub fn cycle_idx(&self) -> usize {
        self.cycle_idx
    }

    /// BtlBw estimate in segments per second.
    pub fn max_bw(&self) -> f64 {
        self.bw.get()
    }

    /// RTprop estimate, seconds.
    pub fn min_rtt(&self) -> Option<f64> {
        self.min_rtt
    }

    /// Has Startup found the pipe full?
    pub fn full_bw_reached(&self) -> bool {
        self.full_bw_reached
    }

    /// Round trips counted so far.
    pub fn round_count(&self) -> u64 {
        self.rtt_cnt
    }

    fn target_cwnd(&self, bw: f64, gain: f64) -> u32 {
        let Some(rtt) = self.min_rtt else { return LINUX_INIT_CWND };
        let w = bw * rtt;
        let mut cwnd = (w * gain).ceil() as u32;
        cwnd = cwnd.saturating_add(self.p.quanta);
        (cwnd + 1) & !1
    }

    fn rate_bytes(&self, bw: f64, gain: f64) -> f64 {
        bw * f64::from(self.mtu) * gain * (1.0 - self.p.pacing_margin)
    }

    fn init_pacing_from_rtt(&mut self, ctx: &CcCtx) {
        let rtt = match ctx.srtt {
            Some(s) => {
                self.has_seen_rtt = true;
                s.max(1e-6)
            }
            None => 1e-3,
        };
        let bw = f64::from(ctx.cwnd) / rtt;
        self.pacing_rate = self.rate_bytes(bw, self.p.high_gain);
    }

    fn save_cwnd(&mut self, ctx: &CcCtx) {
        if self.prev_ca_state < CaState::Recovery && self.mode != BbrMode::ProbeRtt {
            self.prior_cwnd = ctx.cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(ctx.cwnd);
        }
    }

    // The gains are state, set where Linux sets them (`bbr_reset_startup_mode`,
    // `bbr_check_drain`, `bbr_reset_probe_bw_mode`, `bbr_advance_cycle_phase`, ProbeRTT's
    // entry in `bbr_update_min_rtt`, `bbr_lt_bw_interval_done`), and kept between.

    fn reset_startup(&mut self) {
        self.mode = BbrMode::Startup;
        self.pacing_gain = self.p.high_gain;
        self.cwnd_gain = self.p.high_gain;
    }

    /// The ProbeBW phase's pacing gain (Linux 4.13+ `bbr_advance_cycle_phase`): 1 while the
    /// long-term rate is in use.
    fn cycle_gain(&self) -> f64 {
        if self.lt.use_bw {
            1.0
        } else {
            CYCLE_GAINS[self.cycle_idx]
        }
    }

    fn reset_probe_bw(&mut self, ctx: &CcCtx, rng: &mut SplitMix64) {
        self.mode = BbrMode::ProbeBw;
        self.pacing_gain = 1.0;
        self.cwnd_gain = self.p.cwnd_gain;
        match self.p.cycle_start {
            CycleStart::Random => {
                // Linux: idx = 7 - rand(0..7) ∈ 1..=7, then advanced once: never phase 1 (3/4).
                let r = (rng.next_u64() % 7) as usize;
                self.cycle_idx = 7 - r;
                self.advance_cycle(ctx);
            }
            CycleStart::Fixed(i) => {
                self.cycle_idx = usize::from(i) & 7;
                self.cycle_stamp = ctx.delivered_time;
                self.pacing_gain = self.cycle_gain();
            }
        }
    }

    fn advance_cycle(&mut self, ctx: &CcCtx) {
        self.cycle_idx = (self.cycle_idx + 1) & 7;
        self.cycle_stamp = ctx.delivered_time;
        self.pacing_gain = self.cycle_gain();
    }

    fn reset_mode(&mut self, ctx: &CcCtx, rng: &mut SplitMix64) {
        if self.full_bw_reached {
            self.reset_probe_bw(ctx, rng);
        } else {
            self.reset_startup();
        }
    }

    fn update_bw(&mut self, ctx: &CcCtx, rs: &RateSample, rng: &mut SplitMix64) {
        self.round_start = false;
        if rs.delivered < 0 || rs.interval <= 0.0 {
            return;
        }
        if rs.prior_delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = ctx.delivered;
            self.rtt_cnt += 1;
            self.round_start = true;
            self.packet_conservation = false;
        }
        self.lt_sampling(ctx, rs.losses, rs.is_app_limited, rng);
        let bw = rs.delivered as f64 / rs.interval;
        if !rs.is_app_limited || bw >= self.max_bw() {
            // Linux keeps the round count in a u32 (`bbr->rtt_cnt`).
            self.bw.running_max(self.p.bw_rounds, self.rtt_cnt as u32, bw);
        }
    }

    fn is_next_cycle_phase(&self, ctx: &CcCtx, rs: &RateSample) -> bool {
        let full_length = self.min_rtt.is_some_and(|m| ctx.delivered_time.saturating_since(self.cycle_stamp) > secs(m));
        let gain = self.pacing_gain;
        if gain == 1.0 {
            return full_length;
        }
        let bw = self.max_bw();
        if gain > 1.0 {
            full_length && (rs.losses > 0 || rs.prior_in_flight >= self.target_cwnd(bw, gain))
        } else {
            full_length || rs.prior_in_flight <= self.target_cwnd(bw, 1.0)
        }
    }

    fn check_full_bw(&mut self, rs: &RateSample) {
        if self.full_bw_reached || !self.round_start || rs.is_app_limited {
            return;
        }
        let max = self.max_bw();
        if max >= self.full_bw * self.p.full_bw_thresh {
            self.full_bw = max;
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= self.p.full_bw_cnt;
    }

    fn check_drain(&mut self, ctx: &mut CcCtx, rng: &mut SplitMix64) {
        if self.mode == BbrMode::Startup && self.full_bw_reached {
            self.mode = BbrMode::Drain;
            self.pacing_gain = self.p.drain_gain;
            self.cwnd_gain = self.p.high_gain;
        }
        if self.mode == BbrMode::Drain && ctx.in_flight <= self.target_cwnd(self.max_bw(), 1.0) {
            self.reset_probe_bw(ctx, rng);
        }
    }

    fn update_min_rtt(&mut self, ctx: &mut CcCtx, rs: &RateSample, now: Instant, rng: &mut SplitMix64) {
        let expired = now > self.min_rtt_stamp + secs(self.p.min_rtt_window);
        if let Some(rtt) = rs.rtt {
            if self.min_rtt.map_or(true, |m| rtt <= m) || expired {
                self.min_rtt = Some(rtt);
                self.min_rtt_stamp = now;
            }
        }
        if expired && self.mode != BbrMode::ProbeRtt {
            self.mode = BbrMode::ProbeRtt;
            self.pacing_gain = 1.0;
            self.cwnd_gain = 1.0;
            self.save_cwnd(ctx);
            self.probe_rtt_done = None;
        }
        if self.mode == BbrMode::ProbeRtt {
            // Linux: "Ignore low rate samples during this mode": every segment sent from now
            // until everything now in flight is delivered gives an application-limited rate
            // sample (which also restarts the long-term sampler).
            ctx.app_limited = (ctx.delivered + u64::from(ctx.in_flight)).max(1);
            match self.probe_rtt_done {
                None if ctx.in_flight <= self.p.cwnd_min => {
                    self.probe_rtt_done = Some(now + secs(self.p.probe_rtt_time));
                    self.probe_rtt_round_done = false;
                    self.next_rtt_delivered = ctx.delivered;
                }
                Some(done) => {
                    if self.round_start {
                        self.probe_rtt_round_done = true;
                    }
                    if self.probe_rtt_round_done && now > done {
                        self.min_rtt_stamp = now;
                        self.restore_cwnd = true;
                        self.reset_mode(ctx, rng);
                    }
                }
                None => {}
            }
        }
    }

    fn set_pacing_rate(&mut self, ctx: &CcCtx) {
        if !self.has_seen_rtt && ctx.srtt.is_some() {
            self.init_pacing_from_rtt(ctx);
        }
        let rate = self.rate_bytes(self.bw(), self.pacing_gain);
        if self.full_bw_reached || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    fn recover_or_restore(&mut self, ctx: &CcCtx, rs: &RateSample, cwnd: &mut u32) -> bool {
        let state = ctx.ca_state;
        let mut c = ctx.cwnd;
        if rs.losses > 0 {
            c = c.saturating_sub(rs.losses).max(1);
        }
        if state == CaState::Recovery && self.prev_ca_state != CaState::Recovery {
            self.packet_conservation = true;
            self.next_rtt_delivered = ctx.delivered;
            c = ctx.in_flight + rs.acked_sacked;
        } else if self.prev_ca_state >= CaState::Recovery && state < CaState::Recovery {
            self.restore_cwnd = true;
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;
        if self.restore_cwnd {
            c = c.max(self.prior_cwnd);
            self.restore_cwnd = false;
        }
        if self.packet_conservation {
            *cwnd = c.max(ctx.in_flight + rs.acked_sacked);
            return true;
        }
        *cwnd = c;
        false
    }

    fn set_cwnd(&mut self, ctx: &mut CcCtx, rs: &RateSample) {
        let acked = rs.acked_sacked;
        let mut cwnd = ctx.cwnd;
        if acked > 0 && !self.recover_or_restore(ctx, rs, &mut cwnd) {
            let target = self.target_cwnd(self.bw(), self.cwnd_gain);
            if self.full_bw_reached {
                cwnd = cwnd.saturating_add(acked).min(target);
            } else if cwnd < target || ctx.delivered < u64::from(LINUX_INIT_CWND) {
                cwnd = cwnd.saturating_add(acked);
            }
            cwnd = cwnd.max(self.p.cwnd_min);
        }
        ctx.cwnd = cwnd;
        if self.mode == BbrMode::ProbeRtt {
            ctx.cwnd = ctx.cwnd.min(self.p.cwnd_min);
        }
    }
}

impl TcpCongestionControl for Bbr {
    fn init(&mut self, ctx: &mut CcCtx, now: Instant) {
        ctx.ssthresh = INFINITE_SSTHRESH;
        self.min_rtt = ctx.min_rtt;
        self.min_rtt_stamp = now;
        self.next_rtt_delivered = ctx.delivered;
        self.init_pacing_from_rtt(ctx);
        self.reset_startup();
        self.reset_lt(ctx);
    }

    /// Linux 4.15 `bbr_ssthresh`: save cwnd, and "BBR does not use ssthresh" (it stays
    /// infinite; setting it to the BDP on leaving Startup came with later kernels).
    fn ssthresh(&mut self, ctx: &CcCtx) -> u32 {
        self.save_cwnd(ctx);
        INFINITE_SSTHRESH
    }

    fn set_state(&mut self, ctx: &mut CcCtx, state: CaState, rng: &mut SplitMix64) {
        if state == CaState::Loss {
            self.prev_ca_state = CaState::Loss;
            self.full_bw = 0.0;
            self.round_start = true;
            // An RTO is a loss for the long-term sampler (Linux: rs.losses = 1).
            self.lt_sampling(ctx, 1, false, rng);
        }
    }

    fn cong_avoid(&mut self, _ctx: &mut CcCtx, _acked: u32) {}

    fn cong_control(&mut self, ctx: &mut CcCtx, rs: &RateSample, now: Instant, rng: &mut SplitMix64) -> bool {
        self.update_bw(ctx, rs, rng);
        if self.mode == BbrMode::ProbeBw && self.is_next_cycle_phase(ctx, rs) {
            self.advance_cycle(ctx);
        }
        self.check_full_bw(rs);
        self.check_drain(ctx, rng);
        self.update_min_rtt(ctx, rs, now, rng);
        self.set_pacing_rate(ctx);
        self.set_cwnd(ctx, rs);
        true
    }

    fn pacing_rate(&self) -> Option<f64> {
        Some(self.pacing_rate)
    }

    fn bbr_mode(&self) -> Option<BbrMode> {
        Some(self.mode)
    }
}
