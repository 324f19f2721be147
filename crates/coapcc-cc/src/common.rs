//! RFC 7252 transmission parameters shared by every algorithm, and initial-timer dithering.

use core::fmt;

use crate::api::{Exchange, TimeoutAction};
use crate::num::round_to;
use crate::params::{self, param, param_table, KvWriter, ParamInfo, Preset, SetError};
use crate::rng::{unit_f64, Entropy};

/// How the initial timer is randomised (AMBIG-25, `dither_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DitherMode {
    /// `base · U[1, ACK_RANDOM_FACTOR]`, continuous (RFC 7252).
    Uniform,
    /// libcoap: `base · (1 + (ACK_RANDOM_FACTOR − 1) · r/256)` with a random byte `r`, rounded
    /// to the 1 ms library tick (256 values from 2.0 to 2.99609375 s for a 2 s base).
    Libcoap8bit,
    /// Contiki Erbium: `base + (random mod (⌊CLOCK_SECOND·base·(ARF−1) + 0.5⌋ + 1))` ticks with
    /// CLOCK_SECOND = 128 and a 16-bit random number ([3, 4.5] s for a 3 s base).
    ContikiTicks,
    /// No dithering: `T_0 = base` (used by the specification's test vectors).
    Off,
}

/// Names of [`DitherMode`] values.
pub const DITHER_MODES: &[(&str, DitherMode)] = &[
    ("uniform", DitherMode::Uniform),
    ("libcoap-8bit", DitherMode::Libcoap8bit),
    ("contiki-ticks", DitherMode::ContikiTicks),
    ("off", DitherMode::Off),
];

/// Contiki's clock ticks per second on the platforms of the Cooja studies.
pub const CONTIKI_CLOCK_SECOND: f64 = 128.0;

/// RFC 7252 §4.8 transmission parameters and the flags every algorithm shares.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Common {
    /// ACK_TIMEOUT, seconds: the initial RTO before any measurement (default 2).
    pub ack_timeout: f64,
    /// ACK_RANDOM_FACTOR (default 1.5, must be ≥ 1).
    pub ack_random_factor: f64,
    /// MAX_RETRANSMIT (default 4; 20 in the Helsinki experiments).
    pub max_retransmit: u32,
    /// Dithering of the initial timer.
    pub dither: DitherMode,
    /// Wait a full timer after the last retransmission before failing (true); `false`
    /// reproduces the Contiki bug of failing right after sending it (§9.3).
    pub wait_after_last: bool,
}

impl Default for Common {
    /// RFC 7252's values: every parameter at the default of [`COMMON_INFO`].
    fn default() -> Self {
        let mut c = Common {
            ack_timeout: 0.0,
            ack_random_factor: 0.0,
            max_retransmit: 0,
            dither: DitherMode::Off,
            wait_after_last: false,
        };
        params::apply_defaults(COMMON_PARAMS, &mut c);
        c
    }
}

param_table!(COMMON_PARAMS, COMMON_INFO_TABLE: Common = [
    param!(Common, "ack_timeout" | "ACK_TIMEOUT" = "2", "seconds > 0",
        "ACK_TIMEOUT: initial RTO before any RTT measurement (RFC 7252 §4.8).",
        secs(ack_timeout), shared = "ack_timeout"),
    param!(Common, "ack_random_factor" | "ACK_RANDOM_FACTOR" = "1.5", ">= 1",
        "ACK_RANDOM_FACTOR: the initial timer is dithered over [RTO, RTO·factor].",
        number(ack_random_factor, 1.0, 100.0, "a number >= 1"), shared = "ack_random_factor"),
    param!(Common, "max_retransmit" | "MAX_RETRANSMIT" = "4", "0..=255",
        "MAX_RETRANSMIT: retransmissions before the exchange fails (Helsinki experiments: 20).",
        int(max_retransmit, 0, 255, "an integer 0..=255"), shared = "max_retransmit"),
    param!(Common, "dither" | "dither_mode" = "uniform", "uniform | libcoap-8bit | contiki-ticks | off",
        "Dither quantisation of the initial timer (AMBIG-25): continuous, libcoap's random byte, Contiki's clock ticks, or none.",
        choice(dither, DITHER_MODES, "uniform, libcoap-8bit, contiki-ticks or off"), shared = "dither"),
    param!(Common, "wait_after_last" | "wait_after_last_retransmission" = "on", "on | off",
        "Wait a full timer after the last retransmission before failing; off reproduces the Contiki Erbium bug (§9.3).",
        flag(wait_after_last), shared = "wait_after_last"),
]);

/// Descriptions of the [`Common`] parameters.
pub const COMMON_INFO: &[ParamInfo] = COMMON_INFO_TABLE;

impl Common {
    /// Set a common parameter.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), SetError> {
        params::set_param(COMMON_PARAMS, self, key, value).unwrap_or(Err(SetError::UnknownKey))
    }

    /// Write the value of common parameter `key`; `None` if there is no such parameter.
    pub fn write_value(&self, key: &str, w: &mut dyn fmt::Write) -> Option<fmt::Result> {
        params::write_value(COMMON_PARAMS, self, key, w)
    }

    /// The common parameter implementing shared parameter `name`, if any.
    pub fn shared_key(name: &str) -> Option<&'static str> {
        params::shared_key(COMMON_PARAMS, name)
    }

    /// Write the common parameters.
    pub fn write(&self, w: &mut KvWriter<'_>) -> fmt::Result {
        params::write_params(COMMON_PARAMS, self, w)
    }

    /// The shared transmission parameters of a testbed profile (specification §11), the same
    /// for every algorithm: `rfc7252` and `makarem2021` are RFC 7252's values;
    /// `helsinki2018` has MAX_RETRANSMIT 20; `ancillotti-cooja` is Contiki Erbium's 3 s
    /// ACK_TIMEOUT dithered in 1/128 s clock ticks. `helsinki_dither` is the dither of the
    /// Helsinki client that ran this algorithm: libcoap's random byte for Default CoAP,
    /// uniform for every other algorithm.
    pub fn apply_preset(&mut self, preset: Preset, helsinki_dither: DitherMode) {
        *self = Common::default();
        match preset {
            Preset::Rfc7252 | Preset::Makarem2021 => {}
            Preset::Helsinki2018 => {
                self.max_retransmit = 20;
                self.dither = helsinki_dither;
            }
            Preset::AncillottiCooja => {
                self.ack_timeout = 3.0;
                self.dither = DitherMode::ContikiTicks;
            }
        }
    }

    /// The dithered initial timer for an undithered `base` (seconds).
    pub fn dither(&self, base: f64, rng: &mut dyn Entropy) -> f64 {
        let spread = self.ack_random_factor - 1.0;
        match self.dither {
            DitherMode::Off => base,
            DitherMode::Uniform => base * (1.0 + spread * unit_f64(rng)),
            DitherMode::Libcoap8bit => {
                let r = (rng.next_u64() >> 56) as f64; // one random byte
                let t = base * (1.0 + spread * r / 256.0);
                round_to(t, 1e-3)
            }
            DitherMode::ContikiTicks => {
                let span = (CONTIKI_CLOCK_SECOND * base * spread + 0.5) as u64; // floor
                let r = rng.next_u64() >> 48; // Contiki's 16-bit random_rand()
                base + (r % (span + 1)) as f64 / CONTIKI_CLOCK_SECOND
            }
        }
    }

    /// Largest value [`Common::dither`] can return for `base`.
    pub fn dither_max(&self, base: f64) -> f64 {
        match self.dither {
            DitherMode::Off => base,
            _ => base * self.ack_random_factor,
        }
    }

    /// The retransmission bookkeeping shared by all algorithms: if another retransmission is
    /// allowed, count it, arm `timer` (seconds) and return [`TimeoutAction::Retransmit`];
    /// otherwise [`TimeoutAction::GiveUp`]. `timer` is only evaluated when needed.
    pub fn retransmit(&self, ex: &mut Exchange, timer: impl FnOnce(&Exchange) -> f64) -> TimeoutAction {
        if ex.retransmissions >= self.max_retransmit {
            return TimeoutAction::GiveUp;
        }
        let t = timer(ex);
        ex.retransmissions += 1;
        ex.timer = t;
        if !self.wait_after_last && ex.retransmissions == self.max_retransmit {
            // Contiki bug: fail as soon as the last copy is out. `ex.timer` keeps the value
            // the backoff computed, so state derived from it (FullBackoff) stays sane.
            return TimeoutAction::Retransmit(core::time::Duration::ZERO);
        }
        TimeoutAction::Retransmit(crate::time::secs(t))
    }

    /// Whether another retransmission is allowed for `ex`.
    pub fn may_retransmit(&self, ex: &Exchange) -> bool {
        ex.retransmissions < self.max_retransmit
    }
}
