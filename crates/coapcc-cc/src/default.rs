//! Default CoAP (RFC 7252 binary exponential backoff) and its FullBackoff variants
//! (Järvinen et al., ANRW 2018 §4.2). Specification §4.

use crate::api::{AckInfo, CongestionControl, Exchange, GiveUpReason, Snapshot, TimeoutAction};
use crate::common::{Common, DitherMode};
use crate::num::cap;
use crate::params::{self, param, param_table, Param, ParamInfo, Params, Preset};
use crate::rng::Entropy;
use crate::time::{self, Instant};

/// Which member of the family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefaultVariant {
    /// RFC 7252: nothing carries over between exchanges.
    Plain,
    /// FullBackoff1: a backed-off timer is retained until an exchange completes without
    /// retransmission.
    FullBackoff1,
    /// FullBackoff2: as FullBackoff1, but the retained timer is halved per clean exchange.
    FullBackoff2,
}

/// AMBIG-4: the timer retained after a retransmitted exchange.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FbRetained {
    /// The timer in force when the ACK arrived.
    LastArmed,
    /// Twice that (the next value the backoff would have armed), capped.
    NextDoubled,
}

/// Names of [`FbRetained`].
pub const FB_RETAINED: &[(&str, FbRetained)] =
    &[("last-armed", FbRetained::LastArmed), ("next-doubled", FbRetained::NextDoubled)];

/// AMBIG-6: the floor at which FullBackoff2 stops halving.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fb2Floor {
    /// ACK_TIMEOUT.
    AckTimeout,
    /// The dithered initial timer of the exchange that created the retained value.
    InitialDithered,
}

/// Names of [`Fb2Floor`].
pub const FB2_FLOORS: &[(&str, Fb2Floor)] =
    &[("ack-timeout", Fb2Floor::AckTimeout), ("initial-dithered", Fb2Floor::InitialDithered)];

/// Configuration of the Default CoAP family.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DefaultConfig {
    /// Family member.
    pub variant: DefaultVariant,
    /// RFC 7252 parameters.
    pub common: Common,
    /// AMBIG-2: cap on the doubled timer, seconds (RFC: none; Helsinki: 60).
    pub backoff_cap: Option<f64>,
    /// AMBIG-4.
    pub fb_retained: FbRetained,
    /// AMBIG-5: re-dither the retained timer.
    pub fb_redither: bool,
    /// AMBIG-6.
    pub fb2_floor: Fb2Floor,
    /// AMBIG-6: when halving reaches the floor, use the floor value for one more exchange
    /// instead of reverting at once.
    pub fb2_use_floor_once: bool,
}

impl DefaultConfig {
    /// Defaults (RFC 7252 parameters, recommended resolutions) for `variant`: the defaults of
    /// its parameter table; what a member does not list keeps FullBackoff's recommended rule.
    pub fn new(variant: DefaultVariant) -> Self {
        let mut c = DefaultConfig {
            variant,
            common: Common::default(),
            backoff_cap: None,
            fb_retained: FbRetained::LastArmed,
            fb_redither: false,
            fb2_floor: Fb2Floor::AckTimeout,
            fb2_use_floor_once: false,
        };
        params::apply_defaults(c.table(), &mut c);
        c
    }

    /// A fresh algorithm instance.
    pub fn build(&self) -> DefaultCoap {
        DefaultCoap::new(*self)
    }

    fn table(&self) -> &'static [Param<DefaultConfig>] {
        match self.variant {
            DefaultVariant::Plain => PLAIN,
            DefaultVariant::FullBackoff1 => FB1,
            DefaultVariant::FullBackoff2 => FB2,
        }
    }
}

const P_BACKOFF_CAP: Param<DefaultConfig> = param!(
    DefaultConfig,
    "backoff_cap" | "default_backoff_cap" | "cap" = "none",
    "none | seconds",
    "Cap on the doubled timer (AMBIG-2). RFC 7252 has none; the Helsinki experiments used 60 s.",
    opt_secs(backoff_cap),
    shared = "backoff_cap"
);

const P_FB_RETAINED: Param<DefaultConfig> = param!(
    DefaultConfig,
    "fb_retained" | "fb_retained_value" = "last-armed",
    "last-armed | next-doubled",
    "Timer retained after a retransmitted exchange: the one in force at the ACK, or its double (AMBIG-4).",
    choice(fb_retained, FB_RETAINED, "last-armed or next-doubled")
);

const P_FB_REDITHER: Param<DefaultConfig> = param!(
    DefaultConfig,
    "fb_redither" = "off",
    "on | off",
    "Re-dither the retained timer when it starts the next exchange (AMBIG-5).",
    flag(fb_redither)
);

param_table!(PLAIN, PLAIN_INFO: DefaultConfig = [P_BACKOFF_CAP]);
param_table!(FB1, FB1_INFO: DefaultConfig = [P_BACKOFF_CAP, P_FB_RETAINED, P_FB_REDITHER]);
param_table!(FB2, FB2_INFO: DefaultConfig = [
    P_BACKOFF_CAP,
    P_FB_RETAINED,
    P_FB_REDITHER,
    param!(DefaultConfig, "fb2_floor" = "ack-timeout", "ack-timeout | initial-dithered",
        "Halving stops (the retained timer is dropped) once it reaches this floor (AMBIG-6).",
        choice(fb2_floor, FB2_FLOORS, "ack-timeout or initial-dithered")),
    param!(DefaultConfig, "fb2_use_floor_once" = "off", "on | off",
        "When halving reaches the floor, start one more exchange with the floor value before reverting (AMBIG-6).",
        flag(fb2_use_floor_once)),
]);

impl Params for DefaultConfig {
    params::table_params!();

    fn apply_preset(&mut self, preset: Preset) -> Result<(), ()> {
        *self = DefaultConfig::new(self.variant);
        match preset {
            Preset::Rfc7252 | Preset::Makarem2021 => self.common.apply_preset(preset, DitherMode::Uniform),
            Preset::Helsinki2018 => {
                self.common.apply_preset(preset, DitherMode::Libcoap8bit);
                self.backoff_cap = Some(60.0);
            }
            // Contiki Erbium's CoAP-CC (§9.3): 3 s, dithered in clock ticks. The FullBackoff
            // variants were not run there: the testbed's shared parameters only.
            Preset::AncillottiCooja => self.common.apply_preset(preset, DitherMode::Uniform),
        }
        Ok(())
    }

    fn info(&self) -> &'static [ParamInfo] {
        match self.variant {
            DefaultVariant::Plain => PLAIN_INFO,
            DefaultVariant::FullBackoff1 => FB1_INFO,
            DefaultVariant::FullBackoff2 => FB2_INFO,
        }
    }
}

/// An optional retained timer, seconds, in 8 bytes (an `Option<f64>` takes 16, which made
/// [`DefaultCoap`] 72 bytes, more than the one cache line a simulator client's algorithm
/// state fits in otherwise): "none" is one NaN bit pattern no arithmetic produces from
/// anything but itself, and this type never computes with it. Any other value, NaNs
/// included, is kept as given.
#[derive(Clone, Copy, PartialEq)]
struct Retained(u64);

impl Retained {
    /// The bits of "none": a quiet NaN with a payload of its own.
    const NONE_BITS: u64 = 0x7ff8_c0a9_cc00_0000;
    const NONE: Retained = Retained(Self::NONE_BITS);

    #[inline(always)]
    fn some(v: f64) -> Retained {
        Retained(v.to_bits())
    }

    #[inline(always)]
    fn get(self) -> Option<f64> {
        (self.0 != Self::NONE_BITS).then(|| f64::from_bits(self.0))
    }
}

impl core::fmt::Debug for Retained {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.get().fmt(f)
    }
}

/// Default CoAP, FullBackoff1 or FullBackoff2.
#[derive(Clone, Debug)]
pub struct DefaultCoap {
    cfg: DefaultConfig,
    /// Retained timer B, seconds.
    retained: Retained,
    /// FullBackoff2 with `fb2_floor = initial-dithered`: the dithered T_0 of the last fresh draw.
    floor: f64,
}

impl DefaultCoap {
    /// A fresh instance.
    pub fn new(cfg: DefaultConfig) -> Self {
        DefaultCoap { cfg, retained: Retained::NONE, floor: cfg.common.ack_timeout }
    }

    /// The configuration.
    pub fn config(&self) -> &DefaultConfig {
        &self.cfg
    }

    fn fb2_floor(&self) -> f64 {
        match self.cfg.fb2_floor {
            Fb2Floor::AckTimeout => self.cfg.common.ack_timeout,
            Fb2Floor::InitialDithered => self.floor,
        }
    }

    fn retain_from(&self, ex: &Exchange) -> f64 {
        match self.cfg.fb_retained {
            FbRetained::LastArmed => ex.timer,
            FbRetained::NextDoubled => cap(2.0 * ex.timer, self.cfg.backoff_cap),
        }
    }
}

impl CongestionControl for DefaultCoap {
    fn name(&self) -> &'static str {
        match self.cfg.variant {
            DefaultVariant::Plain => "default",
            DefaultVariant::FullBackoff1 => "default-fb1",
            DefaultVariant::FullBackoff2 => "default-fb2",
        }
    }

    fn max_retransmit(&self) -> u32 {
        self.cfg.common.max_retransmit
    }

    fn reset(&mut self, _now: Instant) {
        self.retained = Retained::NONE;
        self.floor = self.cfg.common.ack_timeout;
    }

    fn start_exchange(&mut self, now: Instant, _in_flight: u32, rng: &mut dyn Entropy) -> Exchange {
        let c = &self.cfg.common;
        let t0 = match self.retained.get() {
            Some(b) if self.cfg.fb_redither => c.dither(b, rng),
            Some(b) => b,
            None => {
                let t = c.dither(c.ack_timeout, rng);
                self.floor = t;
                t
            }
        };
        Exchange::new(now, t0, c.ack_timeout)
    }

    #[inline]
    fn on_timeout(&mut self, _now: Instant, ex: &mut Exchange) -> TimeoutAction {
        let cap_s = self.cfg.backoff_cap;
        self.cfg.common.retransmit(ex, |ex| cap(2.0 * ex.timer, cap_s))
    }

    fn on_ack(&mut self, _now: Instant, ex: &Exchange, ack: &AckInfo) {
        match self.cfg.variant {
            DefaultVariant::Plain => {}
            _ if ack.retransmissions >= 1 => self.retained = Retained::some(self.retain_from(ex)),
            DefaultVariant::FullBackoff1 => self.retained = Retained::NONE,
            DefaultVariant::FullBackoff2 => {
                if let Some(b) = self.retained.get() {
                    let floor = self.fb2_floor();
                    if b <= floor {
                        self.retained = Retained::NONE; // the floor value was used once
                    } else if b / 2.0 <= floor {
                        self.retained =
                            if self.cfg.fb2_use_floor_once { Retained::some(floor) } else { Retained::NONE };
                    } else {
                        self.retained = Retained::some(b / 2.0);
                    }
                }
            }
        }
    }

    fn on_give_up(&mut self, _now: Instant, ex: &Exchange, _reason: GiveUpReason) {
        // AMBIG-20: FullBackoff keeps the last armed timer.
        if self.cfg.variant != DefaultVariant::Plain {
            self.retained = Retained::some(ex.timer);
        }
    }

    fn snapshot(&self) -> Snapshot {
        Snapshot {
            rto: time::secs(self.cfg.common.ack_timeout),
            retained: self.retained.get().map(time::secs),
            ..Snapshot::default()
        }
    }
}

#[cfg(test)]
mod layout_tests {
    use super::*;
    use std::format;

    #[test]
    fn fits_a_cache_line() {
        assert_eq!(core::mem::size_of::<DefaultCoap>(), 64);
    }

    #[test]
    fn retained_keeps_every_value() {
        for v in [0.0, -0.0, 2.5, 60.0, f64::INFINITY, f64::NAN, f64::MIN_POSITIVE] {
            assert_eq!(Retained::some(v).get().map(f64::to_bits), Some(v.to_bits()));
        }
        assert_eq!(Retained::NONE.get(), None);
        assert_eq!(format!("{:?}", Retained::NONE), "None");
        assert_eq!(format!("{:?}", Retained::some(2.0)), "Some(2.0)");
    }
}
