//! Shared transmission parameters: set once for any algorithm, listed side by side.
//!
//! A fair comparison runs every algorithm with the same transmission parameters. Each
//! algorithm spells some of them its own way (the cap of backed-off timers is `cap` for CoCoA
//! and FASOR, `backoff_cap` for Default CoAP and CoCoA+, `max_ack_timeout` for Californium's
//! CoCoA); [`SHARED_PARAMS`] names them once, and every parameter declaration says which
//! shared parameter it implements ([`crate::params::Param::shared`]).
//!
//! The project's rule, for every front end: an algorithm name alone means its specification's
//! defaults (RFC 7252's values for the shared parameters); a reproduction preset is asked for
//! explicitly (`NAME:preset=...`) and sets the testbed's shared parameters for every algorithm
//! (plus the settings its publication used for the algorithms it ran); shared overrides apply
//! last, on top of both.
//!
//! NSTART is not an algorithm parameter: it belongs to the endpoint (the simulator's and the
//! real endpoints' configuration), which tells the algorithm how many exchanges are in flight.
//!
//! ```
//! use coapcc_cc::{AlgorithmConfig, TransmissionOverrides};
//! // Two groups of a run, one override for both (e.g. `--max-retransmit 20 --backoff-cap 60`).
//! let overrides = TransmissionOverrides { max_retransmit: Some(20), backoff_cap: Some(Some(60.0)), ..Default::default() };
//! let mut groups = [AlgorithmConfig::parse("default").unwrap(), AlgorithmConfig::parse("cocoa").unwrap()];
//! for g in &mut groups {
//!     overrides.apply(g).unwrap();
//! }
//! // The same by name, from text (a CLI flag or a TOML key):
//! let mut fasor = AlgorithmConfig::parse("fasor:preset=helsinki2018").unwrap();
//! fasor.set_shared("max_retransmit", "20").unwrap();
//! assert!(fasor.set_shared("nstart", "2").is_err()); // not an algorithm parameter
//! // A table of the resolved values, one column per group:
//! for (name, _) in groups[0].shared_values() {
//!     let row: Vec<String> = groups.iter().map(|g| g.shared_value(name).map_or("-".into(), |v| v.to_string())).collect();
//!     println!("{name:<18} {}", row.join("  "));
//! }
//! assert_eq!(groups[1].shared_value("backoff_cap").unwrap().to_string(), "60"); // CoCoA's `cap`
//! assert_eq!(groups[0].shared_value("max_retransmit").unwrap().to_string(), "20");
//! ```

use core::fmt;

use crate::common::{DitherMode, COMMON_INFO, DITHER_MODES};
use crate::params::{choice_name, ParamInfo, SetError};
use crate::registry::AlgorithmConfig;

/// One shared transmission parameter.
#[derive(Clone, Copy, Debug)]
pub struct SharedInfo {
    /// Its name (`set_shared` key, column of [`AlgorithmConfig::shared_values`]).
    pub name: &'static str,
    /// What it is, across algorithms.
    pub doc: &'static str,
}

/// Every shared transmission parameter, in table order.
pub const SHARED_PARAMS: &[SharedInfo] = &[
    SharedInfo { name: "ack_timeout", doc: "ACK_TIMEOUT, seconds: the initial RTO before any RTT measurement (FASOR's INITIAL_RTO)." },
    SharedInfo {
        name: "ack_random_factor",
        doc: "ACK_RANDOM_FACTOR: the initial timer is dithered over [RTO, RTO x factor] (FASOR dithers its own way).",
    },
    SharedInfo { name: "max_retransmit", doc: "MAX_RETRANSMIT: retransmissions before an exchange fails." },
    SharedInfo {
        name: "dither",
        doc: "Quantisation of the initial timer's dither: uniform, libcoap-8bit, contiki-ticks or off.",
    },
    SharedInfo {
        name: "wait_after_last",
        doc: "Wait a full timer after the last retransmission before failing (off: the Contiki Erbium bug).",
    },
    SharedInfo {
        name: "backoff_cap",
        doc: "Upper bound of backed-off timers, seconds or none: Default CoAP's and CoCoA+'s backoff_cap, CoCoA's and FASOR's cap, Californium's max_ack_timeout.",
    },
];

/// Why a shared parameter could not be set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SharedError<'a> {
    /// No shared parameter of that name.
    Unknown {
        /// The name given.
        name: &'a str,
    },
    /// The algorithm has no parameter implementing it.
    NotApplicable {
        /// The shared parameter.
        name: &'static str,
        /// The algorithm.
        algorithm: &'static str,
    },
    /// The value is not accepted by the algorithm's parameter.
    BadValue {
        /// The shared parameter.
        name: &'static str,
        /// The algorithm's own key for it.
        key: &'static str,
        /// The algorithm.
        algorithm: &'static str,
        /// What is accepted.
        expected: &'static str,
    },
}

impl fmt::Display for SharedError<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SharedError::Unknown { name } => {
                write!(f, "unknown shared transmission parameter '{name}'; valid: ")?;
                for (i, s) in SHARED_PARAMS.iter().enumerate() {
                    write!(f, "{}{}", if i > 0 { ", " } else { "" }, s.name)?;
                }
                Ok(())
            }
            SharedError::NotApplicable { name, algorithm } => {
                write!(f, "{algorithm} has no parameter for the shared transmission parameter '{name}'")
            }
            SharedError::BadValue { name, key, algorithm, expected } => {
                write!(f, "bad value for shared parameter '{name}' ({algorithm}'s '{key}'): expected {expected}")
            }
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for SharedError<'_> {}

/// The canonical text of one parameter's value in a configuration (`Display`).
#[derive(Clone, Copy, Debug)]
pub struct ParamValue<'a> {
    cfg: &'a AlgorithmConfig,
    key: &'static str,
}

impl ParamValue<'_> {
    /// The algorithm's own key of the parameter.
    pub fn key(&self) -> &'static str {
        self.key
    }
}

impl fmt::Display for ParamValue<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        crate::registry::with_params(self.cfg, |p| p.write_value(self.key, f)).unwrap_or(Err(fmt::Error))
    }
}

impl AlgorithmConfig {
    /// The parameter (own or common) that implements shared parameter `name` here.
    pub fn shared_param<'a>(&self, name: &'a str) -> Result<&'static ParamInfo, SharedError<'a>> {
        let shared = SHARED_PARAMS.iter().find(|s| crate::params::eq_choice(s.name, name));
        let shared = shared.ok_or(SharedError::Unknown { name })?;
        let na = SharedError::NotApplicable { name: shared.name, algorithm: self.name() };
        let key = crate::registry::with_params(self, |p| p.shared_key(shared.name)).ok_or(na)?;
        self.params().iter().chain(COMMON_INFO).find(|p| p.key == key).ok_or(na)
    }

    /// Set shared transmission parameter `name` ([`SHARED_PARAMS`]) from text, through the
    /// algorithm's own parameter for it. Apply after the preset (as the spec text does).
    pub fn set_shared<'a>(&mut self, name: &'a str, value: &str) -> Result<(), SharedError<'a>> {
        let p = self.shared_param(name)?;
        let algorithm = self.name();
        let name = SHARED_PARAMS.iter().find(|s| crate::params::eq_choice(s.name, name)).map_or(p.key, |s| s.name);
        self.set(p.key, value).map_err(|e| match e {
            SetError::BadValue { expected } => SharedError::BadValue { name, key: p.key, algorithm, expected },
            SetError::UnknownKey => SharedError::NotApplicable { name, algorithm },
        })
    }

    /// The value of parameter `key` (own or common; key or alias) in canonical text.
    pub fn value(&self, key: &str) -> Option<ParamValue<'_>> {
        let p = self.params().iter().chain(COMMON_INFO).find(|p| p.matches(key))?;
        Some(ParamValue { cfg: self, key: p.key })
    }

    /// The resolved value of shared parameter `name`, or `None` if the algorithm has none.
    pub fn shared_value(&self, name: &str) -> Option<ParamValue<'_>> {
        let p = self.shared_param(name).ok()?;
        Some(ParamValue { cfg: self, key: p.key })
    }

    /// Every shared parameter with its resolved value here (`None`: the algorithm has no
    /// such parameter), in [`SHARED_PARAMS`] order: one column of a side-by-side table.
    pub fn shared_values(&self) -> impl Iterator<Item = (&'static str, Option<ParamValue<'_>>)> + '_ {
        SHARED_PARAMS.iter().map(move |s| (s.name, self.shared_value(s.name)))
    }
}

/// Typed overrides of the shared transmission parameters, applied to every group of a run
/// after its preset (`None`: keep the configuration's value). See the module example.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TransmissionOverrides {
    /// ACK_TIMEOUT, seconds.
    pub ack_timeout: Option<f64>,
    /// ACK_RANDOM_FACTOR.
    pub ack_random_factor: Option<f64>,
    /// MAX_RETRANSMIT.
    pub max_retransmit: Option<u32>,
    /// Dither quantisation.
    pub dither: Option<DitherMode>,
    /// Wait a full timer after the last retransmission.
    pub wait_after_last: Option<bool>,
    /// Cap of backed-off timers (`Some(None)`: no cap).
    pub backoff_cap: Option<Option<f64>>,
}

/// A small stack buffer for formatting a value (no allocation).
struct Buf {
    b: [u8; 40],
    n: usize,
}

impl fmt::Write for Buf {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.n + s.len();
        self.b.get_mut(self.n..end).ok_or(fmt::Error)?.copy_from_slice(s.as_bytes());
        self.n = end;
        Ok(())
    }
}

fn set_fmt(cfg: &mut AlgorithmConfig, name: &'static str, v: impl fmt::Display) -> Result<(), SharedError<'static>> {
    let mut buf = Buf { b: [0; 40], n: 0 };
    let algorithm = cfg.name();
    // f64, u32 and the choice names fit in 40 bytes; Display of f64 round-trips exactly.
    let bad = SharedError::BadValue { name, key: name, algorithm, expected: "a value the parameter accepts" };
    fmt::write(&mut buf, format_args!("{v}")).map_err(|_| bad)?;
    let text = core::str::from_utf8(&buf.b[..buf.n]).map_err(|_| bad)?;
    cfg.set_shared(name, text)
}

impl TransmissionOverrides {
    /// Apply every override that is set to `cfg`; the first that the algorithm does not
    /// have or rejects is an error (the ones before it are applied).
    pub fn apply(&self, cfg: &mut AlgorithmConfig) -> Result<(), SharedError<'static>> {
        if let Some(v) = self.ack_timeout {
            set_fmt(cfg, "ack_timeout", v)?;
        }
        if let Some(v) = self.ack_random_factor {
            set_fmt(cfg, "ack_random_factor", v)?;
        }
        if let Some(v) = self.max_retransmit {
            set_fmt(cfg, "max_retransmit", v)?;
        }
        if let Some(v) = self.dither {
            set_fmt(cfg, "dither", choice_name(v, DITHER_MODES))?;
        }
        if let Some(v) = self.wait_after_last {
            set_fmt(cfg, "wait_after_last", if v { "on" } else { "off" })?;
        }
        match self.backoff_cap {
            Some(Some(v)) => set_fmt(cfg, "backoff_cap", v)?,
            Some(None) => set_fmt(cfg, "backoff_cap", "none")?,
            None => {}
        }
        Ok(())
    }
}
