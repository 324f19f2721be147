//! FASOR (draft-jarvinen-core-fasor-00; Järvinen et al., GLOBECOM 2018) and FASOR with an
//! ordinal echoed in the token. Specification §7.
//!
//! Cross-exchange state: the FastRTO estimator (RFC 6298, K = 4, fed only unambiguous samples),
//! SlowRTO (`slow_factor` × the last ambiguous sample, not smoothed) and the backoff state
//! FAST / FSF / SF that picks the timer series of the next exchange:
//!
//! | State | T_0, T_1, T_2, ... (each capped) |
//! |---|---|
//! | FAST | F, 2F, 4F, 8F, ... |
//! | FSF | F, max(S, 2F), 2F, 4F, ... |
//! | SF | S, F, 2F, 4F, ... |
//!
//! F is the dithered FastRTO (`FastRTO + U[SRTT/4, SRTT]`, with `SRTT := INITIAL_RTO/3` before
//! any sample), S is SlowRTO (never dithered). `fasor-token` additionally feeds the RTT of the
//! acknowledged copy to FastRTO and bases the series on `max(FastRTO, previous sample)`.

use crate::api::{AckInfo, CongestionControl, Exchange, GiveUpReason, Snapshot, TimeoutAction};
use crate::common::{Common, DitherMode, CONTIKI_CLOCK_SECOND};
use crate::estimator::{Estimator, EstimatorParams, FirstRttvar};
use crate::num::{cap, pow2, round_to};
use crate::params::{self, param, param_table, Param, ParamInfo, Params, Preset};
use crate::rng::{unit_f64, Constant, Entropy, SplitMix64};
use crate::time::{self, Instant};

/// FASOR's backoff state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FasorState {
    /// FAST: F, 2F, 4F, ...
    Fast,
    /// FAST_SLOW_FAST: F, max(S, 2F), 2F, 4F, ...
    FastSlowFast,
    /// SLOW_FAST: S, F, 2F, 4F, ...
    SlowFast,
}

impl FasorState {
    /// The name used in snapshots and the specification (`FAST`, `FSF`, `SF`).
    pub fn name(self) -> &'static str {
        match self {
            FasorState::Fast => "FAST",
            FasorState::FastSlowFast => "FSF",
            FasorState::SlowFast => "SF",
        }
    }

    /// The state after an ambiguous ACK: FAST → FSF, FSF → SF, SF → SF.
    pub fn downgraded(self) -> Self {
        match self {
            FasorState::Fast => FasorState::FastSlowFast,
            FasorState::FastSlowFast | FasorState::SlowFast => FasorState::SlowFast,
        }
    }

    fn code(self) -> u64 {
        match self {
            FasorState::Fast => 0,
            FasorState::FastSlowFast => 1,
            FasorState::SlowFast => 2,
        }
    }

    fn from_code(c: u64) -> Self {
        match c {
            1 => FasorState::FastSlowFast,
            2 => FasorState::SlowFast,
            _ => FasorState::Fast,
        }
    }
}

/// Names of the first-sample RTTVAR choices (AMBIG-12); the first name of each is canonical.
pub const FIRST_RTTVARS: &[(&str, FirstRttvar)] = &[
    ("r-over-2k", FirstRttvar::HalfK),
    ("r-over-2", FirstRttvar::Half),
    ("R/(2K)", FirstRttvar::HalfK),
    ("R/2", FirstRttvar::Half),
];

/// AMBIG-13: how often the dither of F is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DitherScope {
    /// One draw per exchange, applied to F for the whole series.
    PerExchange,
    /// A fresh draw of F for every timer of the series.
    PerTimer,
}

/// Names of [`DitherScope`].
pub const DITHER_SCOPES: &[(&str, DitherScope)] =
    &[("per-exchange", DitherScope::PerExchange), ("per-timer", DitherScope::PerTimer)];

/// AMBIG-3: what drives SlowRTO and the state machine when the ACK names its copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenTransitions {
    /// SlowRTO and state transitions stay driven by n (SlowRTO acts as a drain timer);
    /// FastRTO is additionally updated from the copy's RTT.
    ByRetransmissions,
    /// An ACK that names its copy is an unambiguous sample: FastRTO is updated, the state
    /// returns to FAST and SlowRTO is left alone, whatever n.
    BySample,
}

/// Names of [`TokenTransitions`].
pub const TOKEN_TRANSITIONS: &[(&str, TokenTransitions)] =
    &[("by-retransmissions", TokenTransitions::ByRetransmissions), ("by-sample", TokenTransitions::BySample)];

/// AMBIG-3: the base F of the series under the token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenSeriesBase {
    /// F = max(FastRTO, Previous-RTT-Sample) with the previous exchange's unambiguous sample
    /// R_k (draft §4.5 as the specification words it). Since that sample was also fed to
    /// FastRTO, and an RFC 6298 update never leaves the RTO below the sample it was fed, this
    /// equals `fast-only` in practice.
    MaxFastPrevSample,
    /// F = max(FastRTO, t_ack − t0 of the previous exchange): the whole time the previous
    /// exchange took, from its original transmission (the reading under which the max binds).
    MaxFastPrevTotal,
    /// F = FastRTO, as plain FASOR.
    FastOnly,
}

/// Names of [`TokenSeriesBase`].
pub const TOKEN_SERIES_BASES: &[(&str, TokenSeriesBase)] = &[
    ("max-fast-prev-sample", TokenSeriesBase::MaxFastPrevSample),
    ("max-fast-prev-total", TokenSeriesBase::MaxFastPrevTotal),
    ("fast-only", TokenSeriesBase::FastOnly),
];

/// AMBIG-20: state update when an exchange fails after MAX_RETRANSMIT retransmissions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GiveUpPolicy {
    /// No estimator update, SlowRTO unchanged, state downgraded as for an ambiguous ACK
    /// (only when a SlowRTO exists: the FSF and SF series need one).
    Downgrade,
    /// Treat the failure as an ambiguous ACK at the give-up time: SlowRTO =
    /// `slow_factor` × (t_give_up − t0), capped, and downgrade.
    AmbiguousAck,
    /// Nothing changes.
    Unchanged,
}

/// Names of [`GiveUpPolicy`].
pub const GIVE_UP_POLICIES: &[(&str, GiveUpPolicy)] = &[
    ("downgrade", GiveUpPolicy::Downgrade),
    ("ambiguous-ack", GiveUpPolicy::AmbiguousAck),
    ("unchanged", GiveUpPolicy::Unchanged),
];

/// Configuration of FASOR and FASOR with token.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FasorConfig {
    /// `fasor-token`: the response echoes the ordinal of the copy it answers.
    pub token: bool,
    /// RFC 7252 parameters. `ack_timeout` is FASOR's INITIAL_RTO; `ack_random_factor` is not
    /// used (FASOR dithers over [SRTT/4, SRTT]); `dither` only selects off / the quantisation.
    pub common: Common,
    /// SLOWRTO_FACTOR (1.5).
    pub slow_factor: f64,
    /// Upper bound of FastRTO, SlowRTO and every timer, seconds (60).
    pub cap: Option<f64>,
    /// AMBIG-12: first-sample RTTVAR of FastRTO.
    pub first_rttvar: FirstRttvar,
    /// AMBIG-13.
    pub dither_scope: DitherScope,
    /// AMBIG-20.
    pub give_up: GiveUpPolicy,
    /// AMBIG-3 (`fasor-token` only).
    pub token_transitions: TokenTransitions,
    /// AMBIG-3 (`fasor-token` only).
    pub token_series_base: TokenSeriesBase,
}

impl FasorConfig {
    /// Defaults (draft -00 text, recommended resolutions: the defaults of the parameter
    /// table); `token` selects `fasor-token`.
    pub fn new(token: bool) -> Self {
        let mut c = FasorConfig {
            token,
            common: Common::default(),
            slow_factor: 0.0,
            cap: None,
            first_rttvar: FirstRttvar::HalfK,
            dither_scope: DitherScope::PerExchange,
            give_up: GiveUpPolicy::Downgrade,
            // Plain FASOR does not list these: the token rules are inert without a token.
            token_transitions: TokenTransitions::ByRetransmissions,
            token_series_base: TokenSeriesBase::MaxFastPrevSample,
        };
        params::apply_defaults(c.table(), &mut c);
        c
    }

    /// A fresh algorithm instance.
    pub fn build(&self) -> Fasor {
        Fasor::new(*self)
    }

    /// The FastRTO estimator's parameters: RFC 6298 gains, K = 4, G = 0, no lower bound,
    /// upper bound `cap`.
    pub fn estimator_params(&self) -> EstimatorParams {
        EstimatorParams { first_rttvar: self.first_rttvar, max_rto: self.cap, ..EstimatorParams::rfc6298(4.0) }
    }

    fn table(&self) -> &'static [Param<FasorConfig>] {
        if self.token {
            TOKEN
        } else {
            PLAIN
        }
    }
}

const P_INITIAL_RTO: Param<FasorConfig> = param!(
    FasorConfig,
    "initial_rto" | "INITIAL_RTO" = "2",
    "seconds > 0",
    "INITIAL_RTO: FastRTO before any sample. The same value as ack_timeout (setting either sets both).",
    secs(common.ack_timeout)
);
const P_SLOW_FACTOR: Param<FasorConfig> = param!(
    FasorConfig,
    "slow_factor" | "SLOWRTO_FACTOR" | "slowrto_factor" = "1.5",
    "> 0",
    "SLOWRTO_FACTOR: SlowRTO = factor × (t_ack − t0) of the last ambiguous ACK.",
    positive(slow_factor, 100.0, "a number > 0")
);
const P_CAP: Param<FasorConfig> = param!(
    FasorConfig,
    "cap" | "fasor_cap" | "max_rto" = "60",
    "none | seconds",
    "Upper bound of FastRTO, SlowRTO and every armed timer (draft: MAY, at least 60 s; paper: 60 s).",
    opt_secs(cap),
    shared = "backoff_cap"
);
const P_FIRST_RTTVAR: Param<FasorConfig> = param!(
    FasorConfig,
    "first_rttvar" | "fasor_first_rttvar" = "r-over-2k",
    "r-over-2k | r-over-2",
    "First-sample RTTVAR of FastRTO: R/(2K) = R/8 (draft -00 text) or R/2 (RFC 6298) (AMBIG-12).",
    choice(first_rttvar, FIRST_RTTVARS, "r-over-2k or r-over-2")
);
const P_DITHER_SCOPE: Param<FasorConfig> = param!(
    FasorConfig,
    "dither_scope" | "fasor_dither_scope" = "per-exchange",
    "per-exchange | per-timer",
    "Draw F = FastRTO + U[SRTT/4, SRTT] once per exchange, or afresh for every timer (AMBIG-13).",
    choice(dither_scope, DITHER_SCOPES, "per-exchange or per-timer")
);
const P_GIVE_UP: Param<FasorConfig> = param!(FasorConfig,
    "give_up" | "on_give_up_policy" = "downgrade", "downgrade | ambiguous-ack | unchanged",
    "After MAX_RETRANSMIT is exhausted: downgrade the state as for an ambiguous ACK (if a SlowRTO exists), also set SlowRTO from the give-up time, or change nothing (AMBIG-20).",
    choice(give_up, GIVE_UP_POLICIES, "downgrade, ambiguous-ack or unchanged"));

param_table!(PLAIN, PLAIN_INFO: FasorConfig =
    [P_INITIAL_RTO, P_SLOW_FACTOR, P_CAP, P_FIRST_RTTVAR, P_DITHER_SCOPE, P_GIVE_UP]);

param_table!(TOKEN, TOKEN_INFO: FasorConfig = [
    P_INITIAL_RTO,
    P_SLOW_FACTOR,
    P_CAP,
    P_FIRST_RTTVAR,
    P_DITHER_SCOPE,
    P_GIVE_UP,
    param!(FasorConfig, "token_transitions" = "by-retransmissions", "by-retransmissions | by-sample",
        "With an echoed ordinal: SlowRTO and state still driven by n, FastRTO also fed R_k; or the echoed sample counts as unambiguous (AMBIG-3).",
        choice(token_transitions, TOKEN_TRANSITIONS, "by-retransmissions or by-sample")),
    param!(FasorConfig, "token_series_base" = "max-fast-prev-sample",
        "max-fast-prev-sample | max-fast-prev-total | fast-only",
        "Series base F = max(FastRTO, previous exchange's sample R_k) (draft), max(FastRTO, previous exchange's t_ack − t0), or FastRTO alone (AMBIG-3).",
        choice(token_series_base, TOKEN_SERIES_BASES, "max-fast-prev-sample, max-fast-prev-total or fast-only")),
]);

impl Params for FasorConfig {
    params::table_params!();

    fn apply_preset(&mut self, preset: Preset) -> Result<(), ()> {
        *self = FasorConfig::new(self.token);
        // Every preset: the testbed's shared transmission parameters (INITIAL_RTO is
        // ACK_TIMEOUT; the dither mode only quantises FASOR's own [SRTT/4, SRTT] dither).
        self.common.apply_preset(preset, DitherMode::Uniform);
        if preset == Preset::Helsinki2018 {
            // The FASOR paper: MAX_RETRANSMIT 20, INITIAL_RTO 2 s with dithering, cap 60 s,
            // SLOWRTO_FACTOR 1.5, one token byte with `by-retransmissions` (§11).
            self.cap = Some(60.0);
            self.slow_factor = 1.5;
            self.token_transitions = TokenTransitions::ByRetransmissions;
        }
        Ok(())
    }

    fn info(&self) -> &'static [ParamInfo] {
        if self.token {
            TOKEN_INFO
        } else {
            PLAIN_INFO
        }
    }
}

/// FASOR or FASOR with token.
#[derive(Clone, Debug)]
pub struct Fasor {
    cfg: FasorConfig,
    est: EstimatorParams,
    /// FastRTO estimator (empty: FastRTO = INITIAL_RTO).
    fast: Estimator,
    /// SlowRTO, seconds, once an ambiguous ACK arrived.
    slow: Option<f64>,
    state: FasorState,
    /// `fasor-token`: the previous exchange's unambiguous sample (R_k, or R with n = 0).
    prev_sample: Option<f64>,
    /// `fasor-token`: the previous exchange's `t_ack − t0` when it gave an unambiguous sample.
    prev_total: Option<f64>,
}

/// Dither offset within [SRTT/4, SRTT] from `rng`, quantised as `mode` says.
fn dither_offset(mode: DitherMode, srtt: f64, rng: &mut dyn Entropy) -> f64 {
    let lo = srtt / 4.0;
    let span = srtt - lo;
    match mode {
        DitherMode::Off => 0.0,
        DitherMode::Uniform => lo + span * unit_f64(rng),
        DitherMode::Libcoap8bit => lo + span * (rng.next_u64() >> 56) as f64 / 256.0,
        DitherMode::ContikiTicks => {
            let ticks = (CONTIKI_CLOCK_SECOND * span + 0.5) as u64;
            lo + ((rng.next_u64() >> 48) % (ticks + 1)) as f64 / CONTIKI_CLOCK_SECOND
        }
    }
}

// Per-exchange record layout (all `Exchange` fields are f64):
// - `rto_start`: the undithered series base (FastRTO, or max(FastRTO, previous sample)).
// - `dither`: per-exchange scope: the drawn offset; per-timer scope: SRTT at the start (the
//   dither range).
// - `factor`: `state code + 4 · seed`, an exact integer below 2^53: the backoff state the
//   series was chosen for and, for per-timer dithering, the seed from which each timer's
//   draw is derived (`on_timeout` has no entropy source).
// - `series`: the series timer of the draft pseudocode (the last power-of-two multiple of F).
impl Fasor {
    /// A fresh instance.
    pub fn new(cfg: FasorConfig) -> Self {
        Fasor {
            cfg,
            est: cfg.estimator_params(),
            fast: Estimator::new(),
            slow: None,
            state: FasorState::Fast,
            prev_sample: None,
            prev_total: None,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &FasorConfig {
        &self.cfg
    }

    /// The backoff state the next exchange will use.
    pub fn state(&self) -> FasorState {
        self.state
    }

    /// FastRTO (undithered), seconds.
    fn fast_rto(&self) -> f64 {
        if self.fast.is_empty() {
            cap(self.cfg.common.ack_timeout, self.cfg.cap)
        } else {
            self.fast.rto
        }
    }

    /// The SRTT that sets the dither range (INITIAL_RTO/3 before any sample).
    fn dither_srtt(&self) -> f64 {
        if self.fast.is_empty() {
            self.cfg.common.ack_timeout / 3.0
        } else {
            self.fast.srtt
        }
    }

    /// Undithered series base.
    fn base(&self) -> f64 {
        let f = self.fast_rto();
        let prev = match self.cfg.token_series_base {
            TokenSeriesBase::MaxFastPrevSample => self.prev_sample,
            TokenSeriesBase::MaxFastPrevTotal => self.prev_total,
            TokenSeriesBase::FastOnly => None,
        };
        let f = match (self.cfg.token, prev) {
            (true, Some(p)) => f.max(p),
            _ => f,
        };
        cap(f, self.cfg.cap)
    }

    /// Dithered F for timer `k` of `ex`.
    fn f_at(&self, ex: &Exchange, k: u32) -> f64 {
        let mode = self.cfg.common.dither;
        let f = match self.cfg.dither_scope {
            DitherScope::PerExchange => ex.rto_start + ex.dither,
            DitherScope::PerTimer => {
                let seed = (ex.factor as u64) >> 2;
                let mut word = Constant(SplitMix64::stream(seed, u64::from(k)).next_u64());
                ex.rto_start + dither_offset(mode, ex.dither, &mut word)
            }
        };
        let f = if mode == DitherMode::Libcoap8bit { round_to(f, 1e-3) } else { f };
        cap(f, self.cfg.cap)
    }

    /// Timer `k` of `ex` (T_0 for k = 0), and the series timer after it.
    fn timer(&self, ex: &Exchange, k: u32) -> (f64, f64) {
        let state = FasorState::from_code((ex.factor as u64) & 3);
        let f = self.f_at(ex, k);
        let s = self.slow;
        let c = self.cfg.cap;
        let (t, series) = match (state, k) {
            (FasorState::Fast, k) => {
                let x = cap(pow2(k) * f, c);
                (x, x)
            }
            (FasorState::FastSlowFast, 0) => (f, f),
            (FasorState::FastSlowFast, 1) => (s.unwrap_or(0.0).max(2.0 * f), ex.series),
            (FasorState::SlowFast, 0) => (s.unwrap_or(f), 0.0),
            (_, k) => {
                let x = cap(pow2(k - 1) * f, c);
                (x, x)
            }
        };
        (cap(t, c), series)
    }

    fn ambiguous(&mut self, elapsed: f64) {
        self.slow = Some(cap(self.cfg.slow_factor * elapsed, self.cfg.cap));
        self.state = self.state.downgraded();
    }
}

impl CongestionControl for Fasor {
    fn name(&self) -> &'static str {
        if self.cfg.token {
            "fasor-token"
        } else {
            "fasor"
        }
    }

    fn max_retransmit(&self) -> u32 {
        self.cfg.common.max_retransmit
    }

    fn reset(&mut self, _now: Instant) {
        self.fast = Estimator::new();
        self.slow = None;
        self.state = FasorState::Fast;
        self.prev_sample = None;
        self.prev_total = None;
    }

    fn start_exchange(&mut self, now: Instant, _in_flight: u32, rng: &mut dyn Entropy) -> Exchange {
        let mode = self.cfg.common.dither;
        let srtt = self.dither_srtt();
        let mut ex = Exchange::new(now, 0.0, self.base());
        let code = self.state.code();
        match self.cfg.dither_scope {
            DitherScope::PerExchange => {
                ex.dither = dither_offset(mode, srtt, rng);
                ex.factor = code as f64;
            }
            DitherScope::PerTimer => {
                let seed = if mode == DitherMode::Off { 0 } else { rng.next_u64() >> 14 };
                ex.dither = srtt;
                ex.factor = (code + 4 * seed) as f64;
            }
        }
        let (t0, series) = self.timer(&ex, 0);
        ex.timer = t0;
        ex.series = series;
        ex
    }

    fn on_timeout(&mut self, _now: Instant, ex: &mut Exchange) -> TimeoutAction {
        let this = &*self;
        let mut series = ex.series;
        let action = this.cfg.common.retransmit(ex, |e| {
            let (t, s) = this.timer(e, e.retransmissions + 1);
            series = s;
            t
        });
        ex.series = series;
        action
    }

    fn on_ack(&mut self, _now: Instant, _ex: &Exchange, ack: &AckInfo) {
        let n = ack.retransmissions;
        let r = ack.rtt_secs();
        let echoed = match ack.copy {
            Some(c) if self.cfg.token && c.ordinal <= n => Some(time::to_secs(c.rtt)),
            _ => None,
        };
        match echoed {
            Some(rk) => {
                self.fast.sample(&self.est, rk);
                self.prev_sample = Some(rk);
                self.prev_total = Some(r);
                if n == 0 || self.cfg.token_transitions == TokenTransitions::BySample {
                    self.state = FasorState::Fast;
                } else {
                    self.ambiguous(r);
                }
            }
            None if n == 0 => {
                self.fast.sample(&self.est, r);
                self.prev_sample = Some(r);
                self.prev_total = Some(r);
                self.state = FasorState::Fast;
            }
            None => {
                self.ambiguous(r);
                self.prev_sample = None;
                self.prev_total = None;
            }
        }
    }

    fn on_give_up(&mut self, now: Instant, ex: &Exchange, reason: GiveUpReason) {
        // AMBIG-20 concerns MAX_RETRANSMIT exhaustion; an RST carries no timing we trust.
        if reason != GiveUpReason::Timeout {
            return;
        }
        match self.cfg.give_up {
            GiveUpPolicy::Unchanged => return,
            GiveUpPolicy::Downgrade => {
                if self.slow.is_some() {
                    self.state = self.state.downgraded();
                }
            }
            GiveUpPolicy::AmbiguousAck => self.ambiguous(time::to_secs(now - ex.started)),
        }
        self.prev_sample = None;
        self.prev_total = None;
    }

    fn uses_copy_id(&self) -> bool {
        self.cfg.token
    }

    fn snapshot(&self) -> Snapshot {
        Snapshot {
            rto: time::secs(self.base()),
            strong: self.fast.snapshot(),
            slow_rto: self.slow.map(time::secs),
            state: Some(self.state.name()),
            ..Snapshot::default()
        }
    }
}
