//! Named parameters: every ambiguity of the specification is one of these.
//!
//! Each algorithm configuration implements [`Params`]: it can set a parameter from text, write
//! its fully resolved parameters back as text, apply a reproduction [`Preset`], and describe
//! its parameters ([`ParamInfo`]) for `coapcc algorithms` and the documentation.

use core::fmt;

/// Static description of one parameter.
#[derive(Clone, Copy, Debug)]
pub struct ParamInfo {
    /// Canonical key, as used in `NAME:key=value`.
    pub key: &'static str,
    /// Other accepted spellings (usually the specification's name).
    pub aliases: &'static [&'static str],
    /// Default value, in the textual form the parser accepts.
    pub default: &'static str,
    /// Accepted values.
    pub values: &'static str,
    /// What it does, and the specification item it resolves.
    pub doc: &'static str,
}

impl ParamInfo {
    /// Does `key` name this parameter (canonical key or alias)?
    pub fn matches(&self, key: &str) -> bool {
        self.key == key || self.aliases.contains(&key)
    }
}

/// Why a parameter could not be set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetError {
    /// No parameter of that name.
    UnknownKey,
    /// The value does not parse or is out of range; `expected` says what is accepted.
    BadValue {
        /// Human-readable description of the accepted values.
        expected: &'static str,
    },
}

/// A reproduction preset (specification §11).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Preset {
    /// RFC 7252 defaults.
    Rfc7252,
    /// Järvinen et al., ANRW 2018, and the FASOR paper (GLOBECOM 2018).
    Helsinki2018,
    /// Ancillotti & Bruno's Cooja runs.
    AncillottiCooja,
    /// Makarem's 2021 PhD thesis.
    Makarem2021,
}

impl Preset {
    /// All presets, with their textual names.
    pub const ALL: &'static [(&'static str, Preset)] = &[
        ("rfc7252", Preset::Rfc7252),
        ("helsinki2018", Preset::Helsinki2018),
        ("ancillotti-cooja", Preset::AncillottiCooja),
        ("makarem2021", Preset::Makarem2021),
    ];

    /// Parse a preset name.
    pub fn parse(s: &str) -> Option<Preset> {
        Preset::ALL.iter().find(|(n, _)| eq_choice(n, s)).map(|(_, p)| *p)
    }

    /// The textual name.
    pub fn name(self) -> &'static str {
        Preset::ALL.iter().find(|(_, p)| *p == self).map(|(n, _)| *n).unwrap_or("?")
    }
}

/// Behaviour shared by every algorithm configuration.
pub trait Params {
    /// Set `key` (canonical or alias) to `value`.
    fn set(&mut self, key: &str, value: &str) -> Result<(), SetError>;
    /// Write every parameter as `key=value` pairs separated by commas, canonical keys, in
    /// [`Params::info`] order.
    fn write(&self, w: &mut dyn fmt::Write) -> fmt::Result;
    /// Apply a reproduction preset; `Err(())` if the preset does not apply to this algorithm.
    fn apply_preset(&mut self, preset: Preset) -> Result<(), ()>;
    /// Descriptions of all parameters.
    fn info(&self) -> &'static [ParamInfo];
    /// Check cross-parameter constraints; `Err` names the offending key and the constraint.
    fn validate(&self) -> Result<(), (&'static str, &'static str)> {
        Ok(())
    }
}

/// Compare a choice name with user input, treating `-` and `_` as equal, ASCII
/// case-insensitively.
pub fn eq_choice(canonical: &str, input: &str) -> bool {
    let a = canonical.as_bytes();
    let b = input.as_bytes();
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            let n = |c: u8| if c == b'_' { b'-' } else { c.to_ascii_lowercase() };
            n(*x) == n(*y)
        })
}

/// Parse a choice from a table.
pub fn parse_choice<T: Copy>(value: &str, table: &[(&'static str, T)], expected: &'static str) -> Result<T, SetError> {
    table.iter().find(|(n, _)| eq_choice(n, value)).map(|(_, v)| *v).ok_or(SetError::BadValue { expected })
}

/// Name of `v` in a choice table.
pub fn choice_name<T: Copy + PartialEq>(v: T, table: &[(&'static str, T)]) -> &'static str {
    table.iter().find(|(_, x)| *x == v).map(|(n, _)| *n).unwrap_or("?")
}

/// Parse a boolean (`on/off`, `true/false`, `yes/no`, `1/0`).
pub fn parse_bool(value: &str) -> Result<bool, SetError> {
    const T: &[(&str, bool)] = &[
        ("on", true),
        ("true", true),
        ("yes", true),
        ("1", true),
        ("off", false),
        ("false", false),
        ("no", false),
        ("0", false),
    ];
    parse_choice(value, T, "on or off")
}

/// Parse a finite float in `[min, max]`.
pub fn parse_f64(value: &str, min: f64, max: f64, expected: &'static str) -> Result<f64, SetError> {
    match value.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= min && v <= max => Ok(v),
        _ => Err(SetError::BadValue { expected }),
    }
}

/// Parse a duration in seconds (finite, `> 0` unless `allow_zero`, at most 10^6 s).
pub fn parse_secs(value: &str, allow_zero: bool) -> Result<f64, SetError> {
    let expected = if allow_zero { "a duration in seconds, >= 0" } else { "a duration in seconds, > 0" };
    let v = parse_f64(value, 0.0, 1e6, expected)?;
    if !allow_zero && v == 0.0 {
        return Err(SetError::BadValue { expected });
    }
    Ok(v)
}

/// Parse `none` or a positive duration in seconds.
pub fn parse_opt_secs(value: &str) -> Result<Option<f64>, SetError> {
    if eq_choice("none", value) {
        Ok(None)
    } else {
        parse_secs(value, false)
            .map(Some)
            .map_err(|_| SetError::BadValue { expected: "none, or a duration in seconds > 0" })
    }
}

/// Parse an unsigned integer in `[min, max]`.
pub fn parse_u32(value: &str, min: u32, max: u32, expected: &'static str) -> Result<u32, SetError> {
    match value.trim().parse::<u32>() {
        Ok(v) if v >= min && v <= max => Ok(v),
        _ => Err(SetError::BadValue { expected }),
    }
}

/// Writes `key=value` pairs separated by commas.
pub struct KvWriter<'a> {
    w: &'a mut dyn fmt::Write,
    first: bool,
}

impl<'a> KvWriter<'a> {
    /// A writer appending to `w`.
    pub fn new(w: &'a mut dyn fmt::Write) -> Self {
        KvWriter { w, first: true }
    }

    /// Write one pair.
    pub fn kv(&mut self, key: &str, value: impl fmt::Display) -> fmt::Result {
        if !self.first {
            self.w.write_char(',')?;
        }
        self.first = false;
        write!(self.w, "{key}={value}")
    }

    /// Write an optional duration (`none` when absent).
    pub fn opt(&mut self, key: &str, value: Option<f64>) -> fmt::Result {
        match value {
            Some(v) => self.kv(key, v),
            None => self.kv(key, "none"),
        }
    }

    /// Write a boolean as `on`/`off`.
    pub fn flag(&mut self, key: &str, value: bool) -> fmt::Result {
        self.kv(key, if value { "on" } else { "off" })
    }
}
