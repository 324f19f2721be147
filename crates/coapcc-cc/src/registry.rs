//! Runtime choice of an algorithm: the registry, the textual form `NAME[:key=value,...]`, and
//! the [`Algorithm`] enum that dispatches statically (no allocation, no `dyn`).

use core::fmt;

use crate::api::{AckInfo, CongestionControl, Exchange, GiveUpReason, Snapshot, TimeoutAction};
use crate::bdp::{BdpCoap, BdpConfig};
use crate::californium::{CfRto, CfRtoConfig, CfRtoVariant};
use crate::cocoa::{Cocoa, CocoaConfig, CocoaVariant};
use crate::common::COMMON_INFO;
use crate::default::{DefaultCoap, DefaultConfig, DefaultVariant};
use crate::fasor::{Fasor, FasorConfig};
use crate::makarem::{Makarem, MakaremConfig, MakaremVariant};
use crate::params::{ParamInfo, Params, Preset, SetError};
use crate::pcocoa::{Pcocoa, PcocoaConfig};
use crate::rng::Entropy;
use crate::time::Instant;

/// One registry entry.
#[derive(Clone, Copy, Debug)]
pub struct AlgorithmInfo {
    /// Registry name.
    pub name: &'static str,
    /// One-line summary.
    pub summary: &'static str,
    /// Where its rules come from (specification section and sources).
    pub source: &'static str,
    make: fn() -> AlgorithmConfig,
}

impl AlgorithmInfo {
    /// The configuration with every parameter at its default.
    pub fn default_config(&self) -> AlgorithmConfig {
        (self.make)()
    }
}

/// Every algorithm, in documentation order.
pub const ALGORITHMS: &[AlgorithmInfo] = &[
    AlgorithmInfo {
        name: "default",
        summary: "RFC 7252 binary exponential backoff from a dithered 2-3 s initial timer; nothing carries over",
        source: "RFC 7252 §4.2, §4.8 (spec §4.1)",
        make: || AlgorithmConfig::Default(DefaultConfig::new(DefaultVariant::Plain)),
    },
    AlgorithmInfo {
        name: "default-fb1",
        summary: "Default CoAP keeping the backed-off timer until an exchange completes without retransmission",
        source: "Järvinen et al., ANRW 2018 §4.2 (spec §4.2)",
        make: || AlgorithmConfig::Default(DefaultConfig::new(DefaultVariant::FullBackoff1)),
    },
    AlgorithmInfo {
        name: "default-fb2",
        summary: "FullBackoff1, but the retained timer is halved per clean exchange down to ACK_TIMEOUT",
        source: "Järvinen et al., ANRW 2018 §4.2 (spec §4.3)",
        make: || AlgorithmConfig::Default(DefaultConfig::new(DefaultVariant::FullBackoff2)),
    },
    AlgorithmInfo {
        name: "cocoa",
        summary: "CoCoA: strong (K=4) and weak (K=1) RFC 6298 estimators blended into the RTO, variable backoff factor, 32 s cap, ageing",
        source: "draft-ietf-core-cocoa-03 (spec §5.1)",
        make: || AlgorithmConfig::Cocoa(CocoaConfig::new(CocoaVariant::Cocoa)),
    },
    AlgorithmInfo {
        name: "cocoa-strong",
        summary: "CoCoA-S: CoCoA with the strong estimator only (retransmitted exchanges give no sample)",
        source: "Betzler et al.; Californium COCOA_STRONG (spec §5.4)",
        make: || AlgorithmConfig::Cocoa(CocoaConfig::new(CocoaVariant::Strong)),
    },
    AlgorithmInfo {
        name: "cocoa-fb1",
        summary: "CoCoA with FullBackoff1 retention of the backed-off timer (the FASOR paper's \"CoCoA+FB1\")",
        source: "Järvinen et al., ANRW 2018 §4.2 (spec §5.2)",
        make: || AlgorithmConfig::Cocoa(CocoaConfig::new(CocoaVariant::FullBackoff1)),
    },
    AlgorithmInfo {
        name: "cocoa-fb2",
        summary: "CoCoA FullBackoff2: retained timer re-derived from the larger of the old and new RTO",
        source: "Järvinen et al., ANRW 2018 §4.2 (spec §5.3)",
        make: || AlgorithmConfig::Cocoa(CocoaConfig::new(CocoaVariant::FullBackoff2)),
    },
    AlgorithmInfo {
        name: "cocoa-plus",
        summary: "CoCoA+: CoCoA with one backoff factor per exchange from a VBF table, 60 s caps",
        source: "Betzler et al. 2015 via Ancillotti & Bruno and Makarem 2021 (spec §6)",
        make: || AlgorithmConfig::Cocoa(CocoaConfig::new(CocoaVariant::Plus)),
    },
    AlgorithmInfo {
        name: "californium-cocoa",
        summary: "Eclipse Californium 3.x CoCoA: swapped gains, G = 100 ms, integer ms, per-exchange VBF from the dithered timer",
        source: "Eclipse Californium (spec §9.1)",
        make: || AlgorithmConfig::Cocoa(CocoaConfig::new(CocoaVariant::Californium)),
    },
    AlgorithmInfo {
        name: "fasor",
        summary: "FASOR: FastRTO from unambiguous samples, SlowRTO from ambiguous ones, FAST/FSF/SF backoff series",
        source: "draft-jarvinen-core-fasor-00; FASOR paper, GLOBECOM 2018 (spec §7.1)",
        make: || AlgorithmConfig::Fasor(FasorConfig::new(false)),
    },
    AlgorithmInfo {
        name: "fasor-token",
        summary: "FASOR with a transmission ordinal echoed in the token: every ACK gives an unambiguous sample",
        source: "FASOR paper §III; draft §4.4-4.5 (spec §7.2)",
        make: || AlgorithmConfig::Fasor(FasorConfig::new(true)),
    },
    AlgorithmInfo {
        name: "pcocoa",
        summary: "pCoCoA (partial): Linux-like estimator with transmission counter, spurious-retransmission k, CoCoA+ backoff",
        source: "Bolettieri et al. 2018 via Makarem 2021 (spec §8; gaps are parameters)",
        make: || AlgorithmConfig::Pcocoa(PcocoaConfig::new()),
    },
    AlgorithmInfo {
        name: "basic-rto",
        summary: "Californium BasicRto: RTO = factor x last RTT sample, binary backoff",
        source: "Eclipse Californium (spec §9.1)",
        make: || AlgorithmConfig::CfRto(CfRtoConfig::new(CfRtoVariant::Basic)),
    },
    AlgorithmInfo {
        name: "linux-rto",
        summary: "Californium LinuxRto: Linux TCP's mdev/mdev_max estimator on strong samples, integer ms",
        source: "Eclipse Californium (spec §9.1)",
        make: || AlgorithmConfig::CfRto(CfRtoConfig::new(CfRtoVariant::Linux)),
    },
    AlgorithmInfo {
        name: "peakhopper-rto",
        summary: "Californium PeakhopperRto (PH-RTO): peak-hopping RTO over a 2-sample history",
        source: "Eclipse Californium (spec §9.1)",
        make: || AlgorithmConfig::CfRto(CfRtoConfig::new(CfRtoVariant::Peakhopper)),
    },
    AlgorithmInfo {
        name: "makarem-rto",
        summary: "Makarem's thesis RTO estimator (version 1, 2 or final): EWMA with gamma for falling RTTs, K = 7 after a spurious retransmission; no dither, no backoff",
        source: "Makarem 2021 ch. 5, Algorithms 2-4",
        make: || AlgorithmConfig::Makarem(MakaremConfig::new(MakaremVariant::Rto)),
    },
    AlgorithmInfo {
        name: "cocoa-4state",
        summary: "CoCoA-4-state-strong: CoCoA strong estimator (gains 1/4, 1/8) with a persistent 4-state backoff (factors 1.1/1.3/1.7/2.5)",
        source: "Makarem 2021 §2.6",
        make: || AlgorithmConfig::Makarem(MakaremConfig::new(MakaremVariant::FourState)),
    },
    AlgorithmInfo {
        name: "idc-coap",
        summary: "IDC-CoAP: rate-based, the spacing between sends x iw on a loss, -dw or -fw per ACK; the thesis's final RTO, never backed off",
        source: "Makarem 2021 §6.1, Algorithm 5",
        make: || AlgorithmConfig::Makarem(MakaremConfig::new(MakaremVariant::Idc)),
    },
    AlgorithmInfo {
        name: "idc-coap-extra",
        summary: "IDC-CoAP with extra instructions: after a loss the spacing returns 3/4 of the way to the congestion level",
        source: "Makarem 2021 §6.3, Algorithm 7",
        make: || AlgorithmConfig::Makarem(MakaremConfig::new(MakaremVariant::IdcExtra)),
    },
    AlgorithmInfo {
        name: "idc-coap-probing",
        summary: "IDC-CoAP with a 10-phase cycle probing at the congestion level (an open problem in the thesis)",
        source: "Makarem 2021 §6.3, Algorithm 8",
        make: || AlgorithmConfig::Makarem(MakaremConfig::new(MakaremVariant::IdcProbing)),
    },
    AlgorithmInfo {
        name: "idc-coap-exp",
        summary: "IDC-CoAP with exponential growth back to the congestion level (an open problem in the thesis)",
        source: "Makarem 2021 §6.3, Algorithm 9",
        make: || AlgorithmConfig::Makarem(MakaremConfig::new(MakaremVariant::IdcExp)),
    },
    AlgorithmInfo {
        name: "mbc-coap",
        summary: "MBC-CoAP: rate-based, spacing = min of the last m inter-ACK times / an 8-phase pacing gain (1.25, 0.75, 1...)",
        source: "Makarem 2021 §6.1, Algorithm 6",
        make: || AlgorithmConfig::Makarem(MakaremConfig::new(MakaremVariant::Mbc)),
    },
    AlgorithmInfo {
        name: "bdp-coap",
        summary: "BDP-CoAP: BBR-derived pacing (10-phase gain cycle 1.2/0.8/1, min-max filter over the last 10 attempts, retransmission samples discarded); CoCoA+'s RTO_init, never backed off",
        source: "Ancillotti & Bruno's BDP-CoAP as described in Makarem 2021 ch. 2",
        make: || AlgorithmConfig::Bdp(BdpConfig::new()),
    },
];

/// Look up a registry entry by name.
pub fn lookup(name: &str) -> Option<&'static AlgorithmInfo> {
    ALGORITHMS.iter().find(|a| crate::params::eq_choice(a.name, name))
}

/// A configured algorithm: a plain value (`Copy`), the factory of fresh [`Algorithm`]s.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AlgorithmConfig {
    /// `default`, `default-fb1`, `default-fb2`.
    Default(DefaultConfig),
    /// `cocoa`, `cocoa-strong`, `cocoa-fb1`, `cocoa-fb2`, `cocoa-plus`, `californium-cocoa`.
    Cocoa(CocoaConfig),
    /// `pcocoa`.
    Pcocoa(PcocoaConfig),
    /// `fasor`, `fasor-token`.
    Fasor(FasorConfig),
    /// `basic-rto`, `linux-rto`, `peakhopper-rto`.
    CfRto(CfRtoConfig),
    /// `makarem-rto`, `cocoa-4state`, `idc-coap` (and its §6.3 variants), `mbc-coap`.
    Makarem(MakaremConfig),
    /// `bdp-coap`.
    Bdp(BdpConfig),
}

macro_rules! each_config {
    ($self:expr, $c:ident => $e:expr) => {
        match $self {
            AlgorithmConfig::Default($c) => $e,
            AlgorithmConfig::Cocoa($c) => $e,
            AlgorithmConfig::Pcocoa($c) => $e,
            AlgorithmConfig::Fasor($c) => $e,
            AlgorithmConfig::CfRto($c) => $e,
            AlgorithmConfig::Makarem($c) => $e,
            AlgorithmConfig::Bdp($c) => $e,
        }
    };
}

/// Run `f` on the family configuration inside `cfg` (its [`Params`] view).
pub(crate) fn with_params<R>(cfg: &AlgorithmConfig, f: impl FnOnce(&dyn Params) -> R) -> R {
    each_config!(cfg, c => f(c))
}

impl AlgorithmConfig {
    /// A fresh algorithm instance (initial state).
    pub fn build(&self) -> Algorithm {
        match self {
            AlgorithmConfig::Default(c) => Algorithm::Default(c.build()),
            AlgorithmConfig::Cocoa(c) => Algorithm::Cocoa(c.build()),
            AlgorithmConfig::Pcocoa(c) => Algorithm::Pcocoa(c.build()),
            AlgorithmConfig::Fasor(c) => Algorithm::Fasor(c.build()),
            AlgorithmConfig::CfRto(c) => Algorithm::CfRto(c.build()),
            AlgorithmConfig::Makarem(c) => Algorithm::Makarem(c.build()),
            AlgorithmConfig::Bdp(c) => Algorithm::Bdp(c.build()),
        }
    }

    /// The registry name.
    pub fn name(&self) -> &'static str {
        // Cheapest exact answer: build is allocation-free and tiny.
        self.build().name()
    }

    /// The registry entry.
    pub fn info(&self) -> &'static AlgorithmInfo {
        let n = self.name();
        ALGORITHMS.iter().find(|a| a.name == n).expect("every config has a registry entry")
    }

    /// Algorithm-specific parameters (see also [`COMMON_INFO`]).
    pub fn params(&self) -> &'static [ParamInfo] {
        each_config!(self, c => c.info())
    }

    /// Set one parameter from text.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), SetError> {
        each_config!(self, c => c.set(key, value))
    }

    /// Apply a reproduction preset (resets every parameter first).
    pub fn apply_preset(&mut self, preset: Preset) -> Result<(), ()> {
        each_config!(self, c => c.apply_preset(preset))
    }

    /// Check cross-parameter constraints.
    pub fn validate(&self) -> Result<(), (&'static str, &'static str)> {
        each_config!(self, c => c.validate())
    }

    /// The RFC 7252 transmission parameters shared by every algorithm (ACK_TIMEOUT,
    /// ACK_RANDOM_FACTOR, MAX_RETRANSMIT, ...), e.g. to derive EXCHANGE_LIFETIME.
    pub fn common(&self) -> crate::common::Common {
        match self {
            AlgorithmConfig::Bdp(c) => c.rto.common,
            AlgorithmConfig::Default(c) => c.common,
            AlgorithmConfig::Cocoa(c) => c.common,
            AlgorithmConfig::Pcocoa(c) => c.common,
            AlgorithmConfig::Fasor(c) => c.common,
            AlgorithmConfig::CfRto(c) => c.common,
            AlgorithmConfig::Makarem(c) => c.common,
        }
    }

    /// MAX_RETRANSMIT of the configuration.
    pub fn max_retransmit(&self) -> u32 {
        self.build().max_retransmit()
    }

    /// Parse `NAME[:key=value,...]`. A `preset=NAME` pair is applied first, wherever it
    /// stands; the other pairs are applied in order on top of it.
    pub fn parse(spec: &str) -> Result<AlgorithmConfig, SpecError<'_>> {
        let spec = spec.trim();
        let (name, rest) = match spec.find(':') {
            Some(i) => (&spec[..i], Some(&spec[i + 1..])),
            None => (spec, None),
        };
        let name = name.trim();
        let info = lookup(name).ok_or(SpecError::UnknownAlgorithm { name })?;
        let mut cfg = info.default_config();
        let pairs = || rest.into_iter().flat_map(|r| r.split(',')).map(str::trim).filter(|p| !p.is_empty());
        for pair in pairs() {
            let (k, v) = split_pair(pair)?;
            if crate::params::eq_choice("preset", k) {
                let preset = Preset::parse(v).ok_or(SpecError::UnknownPreset { preset: v })?;
                cfg.apply_preset(preset)
                    .map_err(|_| SpecError::PresetNotApplicable { preset: v, algorithm: info.name })?;
            }
        }
        for pair in pairs() {
            let (k, v) = split_pair(pair)?;
            if crate::params::eq_choice("preset", k) {
                continue;
            }
            cfg.set(k, v).map_err(|e| match e {
                SetError::UnknownKey => SpecError::UnknownKey { algorithm: info.name, key: k, valid: cfg.params() },
                SetError::BadValue { expected } => SpecError::BadValue { key: k, value: v, expected },
            })?;
        }
        cfg.validate().map_err(|(key, problem)| SpecError::Invalid { algorithm: info.name, key, problem })?;
        Ok(cfg)
    }
}

fn split_pair(pair: &str) -> Result<(&str, &str), SpecError<'_>> {
    match pair.find('=') {
        Some(i) => Ok((pair[..i].trim(), pair[i + 1..].trim())),
        None => Err(SpecError::MissingValue { item: pair }),
    }
}

/// Canonical, fully resolved textual form: `NAME:key=value,...` with every parameter.
impl fmt::Display for AlgorithmConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:", self.name())?;
        each_config!(self, c => c.write(f))
    }
}

/// Why a textual algorithm specification was rejected. `Display` gives a one-line message
/// that lists the valid choices.
#[derive(Clone, Copy, Debug)]
pub enum SpecError<'a> {
    /// No algorithm of that name.
    UnknownAlgorithm {
        /// The name given.
        name: &'a str,
    },
    /// The algorithm has no such parameter.
    UnknownKey {
        /// Algorithm name.
        algorithm: &'static str,
        /// The key given.
        key: &'a str,
        /// Its specific parameters (the common ones are listed too).
        valid: &'static [ParamInfo],
    },
    /// The value does not parse or is out of range.
    BadValue {
        /// The key.
        key: &'a str,
        /// The value given.
        value: &'a str,
        /// What is accepted.
        expected: &'static str,
    },
    /// `key` without `=value`.
    MissingValue {
        /// The offending item.
        item: &'a str,
    },
    /// No preset of that name.
    UnknownPreset {
        /// The name given.
        preset: &'a str,
    },
    /// The preset defines nothing for this algorithm.
    PresetNotApplicable {
        /// The preset.
        preset: &'a str,
        /// The algorithm.
        algorithm: &'static str,
    },
    /// Parameters are individually valid but inconsistent.
    Invalid {
        /// The algorithm.
        algorithm: &'static str,
        /// The offending key.
        key: &'static str,
        /// The violated constraint.
        problem: &'static str,
    },
}

impl fmt::Display for SpecError<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpecError::UnknownAlgorithm { name } => {
                let hint = crate::names::hint(name, ALGORITHMS.iter().map(|a| a.name));
                write!(f, "unknown algorithm '{name}'{hint}; valid algorithms: ")?;
                for (i, a) in ALGORITHMS.iter().enumerate() {
                    write!(f, "{}{}", if i > 0 { ", " } else { "" }, a.name)?;
                }
                Ok(())
            }
            SpecError::UnknownKey { algorithm, key, valid } => {
                let keys = valid.iter().chain(COMMON_INFO).map(|p| p.key);
                let hint = crate::names::hint(key, core::iter::once("preset").chain(keys));
                write!(f, "unknown parameter '{key}' for {algorithm}{hint}; valid parameters: preset")?;
                for p in valid.iter().chain(COMMON_INFO) {
                    write!(f, ", {}", p.key)?;
                }
                Ok(())
            }
            SpecError::BadValue { key, value, expected } => {
                write!(f, "bad value '{value}' for parameter '{key}': expected {expected}")
            }
            SpecError::MissingValue { item } => {
                write!(f, "parameter '{item}' has no value: write key=value")
            }
            SpecError::UnknownPreset { preset } => {
                let hint = crate::names::hint(preset, Preset::ALL.iter().map(|(n, _)| *n));
                write!(f, "unknown preset '{preset}'{hint}; valid presets: ")?;
                for (i, (n, _)) in Preset::ALL.iter().enumerate() {
                    write!(f, "{}{}", if i > 0 { ", " } else { "" }, n)?;
                }
                Ok(())
            }
            SpecError::PresetNotApplicable { preset, algorithm } => {
                write!(f, "preset '{preset}' defines no settings for {algorithm}")
            }
            SpecError::Invalid { algorithm, key, problem } => {
                write!(f, "invalid configuration of {algorithm}: '{key}' {problem}")
            }
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for SpecError<'_> {}

/// A configured algorithm instance with static dispatch.
///
/// Variants differ in size (CoCoA keeps two estimators and many flags); boxing the large one
/// would add an allocation per flow and an indirection per event, which this `no_std`,
/// allocation-free crate avoids on purpose.
#[derive(Clone, Debug)]
#[allow(clippy::large_enum_variant)]
pub enum Algorithm {
    /// Default CoAP family.
    Default(DefaultCoap),
    /// CoCoA family.
    Cocoa(Cocoa),
    /// pCoCoA.
    Pcocoa(Pcocoa),
    /// FASOR family.
    Fasor(Fasor),
    /// Californium RTO estimators.
    CfRto(CfRto),
    /// Makarem's thesis algorithms.
    Makarem(Makarem),
    /// BDP-CoAP.
    Bdp(BdpCoap),
}

macro_rules! each_alg {
    ($self:expr, $a:ident => $e:expr) => {
        match $self {
            Algorithm::Default($a) => $e,
            Algorithm::Cocoa($a) => $e,
            Algorithm::Pcocoa($a) => $e,
            Algorithm::Fasor($a) => $e,
            Algorithm::CfRto($a) => $e,
            Algorithm::Makarem($a) => $e,
            Algorithm::Bdp($a) => $e,
        }
    };
}

impl CongestionControl for Algorithm {
    #[inline]
    fn name(&self) -> &'static str {
        each_alg!(self, a => a.name())
    }
    #[inline]
    fn max_retransmit(&self) -> u32 {
        each_alg!(self, a => a.max_retransmit())
    }
    #[inline]
    fn reset(&mut self, now: Instant) {
        each_alg!(self, a => a.reset(now))
    }
    #[inline]
    fn start_exchange(&mut self, now: Instant, in_flight: u32, rng: &mut dyn Entropy) -> Exchange {
        each_alg!(self, a => a.start_exchange(now, in_flight, rng))
    }
    #[inline]
    fn on_timeout(&mut self, now: Instant, ex: &mut Exchange) -> TimeoutAction {
        each_alg!(self, a => a.on_timeout(now, ex))
    }
    #[inline]
    fn on_ack(&mut self, now: Instant, ex: &Exchange, ack: &AckInfo) {
        each_alg!(self, a => a.on_ack(now, ex, ack))
    }
    #[inline]
    fn on_give_up(&mut self, now: Instant, ex: &Exchange, reason: GiveUpReason) {
        each_alg!(self, a => a.on_give_up(now, ex, reason))
    }
    #[inline]
    fn uses_copy_id(&self) -> bool {
        each_alg!(self, a => a.uses_copy_id())
    }
    #[inline]
    fn earliest_start(&self, now: Instant) -> Instant {
        each_alg!(self, a => a.earliest_start(now))
    }
    #[inline]
    fn snapshot(&self) -> Snapshot {
        each_alg!(self, a => a.snapshot())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every key and alias names one parameter of an algorithm (its own or a common one), so
    /// that a table can never shadow another declaration.
    #[test]
    fn keys_and_aliases_are_unique_per_algorithm() {
        for a in ALGORITHMS {
            let cfg = a.default_config();
            let all: [&[ParamInfo]; 2] = [cfg.params(), COMMON_INFO];
            let params = || all.iter().flat_map(|t| t.iter());
            for (i, p) in params().enumerate() {
                for q in params().skip(i + 1) {
                    for x in core::iter::once(&p.key).chain(p.aliases) {
                        assert!(
                            !q.matches(x) && !q.aliases.iter().any(|y| crate::params::eq_choice(x, y)),
                            "{}: '{x}' names two parameters",
                            a.name
                        );
                    }
                }
            }
        }
    }

    /// The per-flow state stays as small as CoCoA's: the simulator keeps one per client and
    /// its speed at thousands of clients is bound by cache misses on that state
    /// (BENCHMARKS.md). A member that needs more must not grow every flow.
    #[test]
    fn algorithm_state_stays_small() {
        assert!(core::mem::size_of::<Algorithm>() <= 432, "{}", core::mem::size_of::<Algorithm>());
    }

    /// Every default parses and is written back unchanged (the table is the only declaration).
    #[test]
    fn table_defaults_parse_and_round_trip() {
        struct S<'a>(&'a mut [u8], usize);
        impl fmt::Write for S<'_> {
            fn write_str(&mut self, s: &str) -> fmt::Result {
                let end = self.1 + s.len();
                self.0.get_mut(self.1..end).ok_or(fmt::Error)?.copy_from_slice(s.as_bytes());
                self.1 = end;
                Ok(())
            }
        }
        for a in ALGORITHMS {
            let mut cfg = a.default_config();
            for p in cfg.params().iter().chain(COMMON_INFO) {
                assert_eq!(cfg.set(p.key, p.default), Ok(()), "{} {}", a.name, p.key);
            }
            assert_eq!(cfg, a.default_config(), "{}", a.name);
            let mut buf = [0u8; 2048];
            let mut s = S(&mut buf, 0);
            fmt::write(&mut s, format_args!("{cfg}")).unwrap();
            let n = s.1;
            let text = core::str::from_utf8(&buf[..n]).unwrap();
            for p in cfg.params().iter().chain(COMMON_INFO) {
                let mut pair = [0u8; 256];
                let mut ps = S(&mut pair, 0);
                fmt::write(&mut ps, format_args!("{}={}", p.key, p.default)).unwrap();
                let m = ps.1;
                let want = core::str::from_utf8(&pair[..m]).unwrap();
                assert!(text.split([':', ',']).any(|kv| kv == want), "{} lacks {want}", a.name);
            }
        }
    }
}
