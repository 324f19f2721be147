//! Configuration: every parameter of the TCP model and of its congestion controls is named,
//! documented and settable from text, `newreno[:key=value,...]` or `bbr[:key=value,...]`,
//! in the same style as the CoAP-over-UDP algorithms of `coapcc-cc`.
//!
//! Defaults follow Linux (the kernel the published experiments ran on); the `helsinki2018`
//! preset sets what the Helsinki CoAP-over-TCP study configured (initial window 4, initial
//! RTO 2 s, SYN/SYN-ACK retries 40/41, MTU 296), New Reno's recovery as its thesis describes it
//! (RFC 6582) and the receiver of its kernel (Linux 4.15).
//! The canonical text form names the defaults it starts from: `preset=linux` (a name alone) or
//! `preset=helsinki2018`, then every parameter.

use core::fmt;

use coapcc_cc::params::{choice_name, eq_choice, parse_choice, KvWriter};
pub use coapcc_cc::params::{ParamInfo, Preset, SetError};

mod bbr;
mod tcp;

pub use bbr::{BbrParams, CycleStart, BBR_INFO};
use tcp::SSTHRESH_BASES;
pub use tcp::{
    DelackTimer, ReceiverModel, RtoBackoffReset, RtoMinMode, RttEstimator, SsthreshBase, TcpConfig, TCP_INFO,
};

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
