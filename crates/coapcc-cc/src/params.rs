//! Named parameters: every ambiguity of the specification is one of these.
//!
//! Each algorithm configuration implements [`Params`]: it can set a parameter from text, write
//! its fully resolved parameters back as text, apply a reproduction [`Preset`], and describe
//! its parameters ([`ParamInfo`]) for `coapcc algorithms` and the documentation.
//!
//! A parameter is declared **once**, as a [`Param`] built by the crate's `param!` macro: its
//! key, aliases, default (as text), accepted values, documentation, the field it sets, and
//! how it is parsed and written. From one table of them per algorithm come the parameter list
//! ([`ParamInfo`]), the parser ([`set_param`]), the canonical text ([`write_params`]) and the
//! defaults ([`apply_defaults`]: a configuration's defaults are its table's default texts,
//! parsed), so the documented default and the value in force cannot disagree.

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

/// One parameter of the configuration type `C`, declared once: its description (with its
/// default as text), its parser and its writer.
pub struct Param<C: 'static> {
    /// Description, default and accepted values.
    pub info: ParamInfo,
    /// Parse `value` into the configuration.
    pub set: fn(&mut C, &str) -> Result<(), SetError>,
    /// Write `key=value` (the key is [`ParamInfo::key`]) in canonical form.
    pub write: fn(&C, &'static str, &mut KvWriter<'_>) -> fmt::Result,
    /// The shared transmission parameter this parameter implements for its algorithm (a
    /// name of [`crate::SHARED_PARAMS`], e.g. `backoff_cap` for CoCoA's `cap`), if any.
    pub shared: Option<&'static str>,
}

impl<C> Clone for Param<C> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<C> Copy for Param<C> {}

const NO_INFO: ParamInfo = ParamInfo { key: "", aliases: &[], default: "", values: "", doc: "" };

/// The descriptions of a parameter table, in order (for `const` lists of [`ParamInfo`]).
pub const fn infos<C, const N: usize>(table: &[Param<C>]) -> [ParamInfo; N] {
    let mut out = [NO_INFO; N];
    let mut i = 0;
    while i < N {
        out[i] = table[i].info;
        i += 1;
    }
    out
}

/// Set `key` (canonical or alias) from `table`; `None` if the table has no such key.
pub fn set_param<C>(table: &[Param<C>], cfg: &mut C, key: &str, value: &str) -> Option<Result<(), SetError>> {
    table.iter().find(|p| p.info.matches(key)).map(|p| (p.set)(cfg, value))
}

/// Write every parameter of `table` as `key=value` pairs, in table order.
pub fn write_params<C>(table: &[Param<C>], cfg: &C, w: &mut KvWriter<'_>) -> fmt::Result {
    for p in table {
        (p.write)(cfg, p.info.key, w)?;
    }
    Ok(())
}

/// Write the value (only) of parameter `key` of `table`; `None` if the table has no such key.
pub fn write_value<C>(table: &[Param<C>], cfg: &C, key: &str, w: &mut dyn fmt::Write) -> Option<fmt::Result> {
    let p = table.iter().find(|p| p.info.matches(key))?;
    Some((p.write)(cfg, p.info.key, &mut KvWriter::values_only(w)))
}

/// The key of the parameter of `table` that implements shared parameter `name`, if any.
pub fn shared_key<C>(table: &[Param<C>], name: &str) -> Option<&'static str> {
    table.iter().find(|p| p.shared == Some(name)).map(|p| p.info.key)
}

/// Set every parameter of `table` to its documented default. The defaults are constants that
/// a test parses for every algorithm; a default that did not parse would leave the field as
/// it was (and fail that test), never panic.
pub fn apply_defaults<C>(table: &[Param<C>], cfg: &mut C) {
    for p in table {
        let r = (p.set)(cfg, p.info.default);
        debug_assert!(r.is_ok(), "default of {} does not parse", p.info.key);
    }
}

/// Declare one [`Param`] of configuration type `$C`:
///
/// ```text
/// param!(Config, "key" | "alias" | ... = "default", "accepted values", "doc", KIND(field.path, ...))
/// ```
///
/// KIND is `flag(f)` (on/off), `secs(f)` (seconds > 0), `opt_secs(f)` (`none` or seconds),
/// `number(f, min, max, "expected")` (finite float), `int(f, min, max, "expected")` (u32), `positive(f, max, "expected")` (float in
/// (0, max]), `choice(f, TABLE, "expected")` (a name of a `(name, value)` table), or
/// `custom(set_closure, write_closure)`. A trailing `, shared = "name"` marks the parameter
/// as the algorithm's form of a shared transmission parameter ([`crate::SHARED_PARAMS`]).
/// The descriptions of two tables, one after the other (a family that takes some parameters
/// of another family, declared there).
pub const fn concat_infos<const N: usize>(a: &[ParamInfo], b: &[ParamInfo]) -> [ParamInfo; N] {
    let mut out = [NO_INFO; N];
    let mut i = 0;
    while i < N {
        out[i] = if i < a.len() { a[i] } else { b[i - a.len()] };
        i += 1;
    }
    out
}

macro_rules! param {
    ($C:ty, $key:literal $(| $alias:literal)* = $def:literal, $vals:expr, $doc:expr, $kind:ident ( $($args:tt)* )
        $(, shared = $shared:literal)?) => {
        $crate::params::Param::<$C> {
            info: $crate::params::ParamInfo {
                key: $key,
                aliases: &[$($alias),*],
                default: $def,
                values: $vals,
                doc: $doc,
            },
            set: $crate::params::param!(@set $C, $kind($($args)*)),
            write: $crate::params::param!(@write $C, $kind($($args)*)),
            shared: $crate::params::param!(@shared $($shared)?),
        }
    };
    (@shared) => { None };
    (@shared $shared:literal) => { Some($shared) };
    (@set $C:ty, custom($set:expr, $write:expr)) => { $set };
    (@write $C:ty, custom($set:expr, $write:expr)) => { $write };
    (@set $C:ty, $kind:ident($($f:ident).+ $(, $arg:expr)*)) => {
        |c: &mut $C, v: &str| -> Result<(), $crate::params::SetError> {
            c.$($f).+ = $crate::params::param!(@parse $kind, v $(, $arg)*)?;
            Ok(())
        }
    };
    (@write $C:ty, $kind:ident($($f:ident).+ $(, $arg:expr)*)) => {
        |c: &$C, k: &'static str, w: &mut $crate::params::KvWriter<'_>| $crate::params::param!(@write_value $kind, w, k, c.$($f).+ $(, $arg)*)
    };
    (@parse flag, $v:ident) => { $crate::params::parse_bool($v) };
    (@parse secs, $v:ident) => { $crate::params::parse_secs($v, false) };
    (@parse opt_secs, $v:ident) => { $crate::params::parse_opt_secs($v) };
    (@parse number, $v:ident, $min:expr, $max:expr, $exp:expr) => { $crate::params::parse_f64($v, $min, $max, $exp) };
    (@parse int, $v:ident, $min:expr, $max:expr, $exp:expr) => { $crate::params::parse_u32($v, $min, $max, $exp) };
    (@parse positive, $v:ident, $max:expr, $exp:expr) => { $crate::params::parse_positive($v, $max, $exp) };
    (@parse choice, $v:ident, $table:expr, $exp:expr) => { $crate::params::parse_choice($v, $table, $exp) };
    (@write_value flag, $w:ident, $k:ident, $val:expr) => { $w.flag($k, $val) };
    (@write_value opt_secs, $w:ident, $k:ident, $val:expr) => { $w.opt($k, $val) };
    (@write_value choice, $w:ident, $k:ident, $val:expr, $table:expr, $exp:expr) => {
        $w.kv($k, $crate::params::choice_name($val, $table))
    };
    (@write_value $kind:ident, $w:ident, $k:ident, $val:expr $(, $arg:expr)*) => { $w.kv($k, $val) };
}

/// Declare a parameter table `$NAME` (`&[Param<$C>]`) and its descriptions `$INFO`
/// (`&[ParamInfo]`), in the same order, from one list of [`Param`] constants or `param!`s.
macro_rules! param_table {
    ($NAME:ident, $INFO:ident: $C:ty = [$($p:expr),* $(,)?]) => {
        const $NAME: &[$crate::params::Param<$C>] = &[$($p),*];
        const $INFO: &[$crate::params::ParamInfo] = &$crate::params::infos::<$C, { $NAME.len() }>($NAME);
    };
}

/// The four [`Params`] methods every algorithm family writes the same way: its own parameter
/// table (`self.table()`) first, then the common parameters (`self.common`). Expands inside an
/// `impl Params for ...` block, next to the family's own `apply_preset` and friends.
macro_rules! table_params {
    () => {
        fn set(&mut self, key: &str, value: &str) -> Result<(), $crate::params::SetError> {
            $crate::params::set_param(self.table(), self, key, value).unwrap_or_else(|| self.common.set(key, value))
        }

        fn shared_key(&self, name: &str) -> Option<&'static str> {
            $crate::params::shared_key(self.table(), name).or_else(|| $crate::common::Common::shared_key(name))
        }

        fn write_value(&self, key: &str, w: &mut dyn core::fmt::Write) -> Option<core::fmt::Result> {
            $crate::params::write_value(self.table(), self, key, w).or_else(|| self.common.write_value(key, w))
        }

        fn write(&self, w: &mut dyn core::fmt::Write) -> core::fmt::Result {
            let mut w = $crate::params::KvWriter::new(w);
            self.common.write(&mut w)?;
            $crate::params::write_params(self.table(), self, &mut w)
        }
    };
}

pub(crate) use {param, param_table, table_params};

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
    /// Write the canonical value of `key` (own or common parameter, key or alias); `None` if
    /// there is no such parameter.
    fn write_value(&self, key: &str, w: &mut dyn fmt::Write) -> Option<fmt::Result>;
    /// The key of the parameter (own or common) implementing shared transmission parameter
    /// `name` ([`crate::SHARED_PARAMS`]), if the algorithm has one.
    fn shared_key(&self, name: &str) -> Option<&'static str>;
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

/// Parse a finite float in `(0, max]`.
pub fn parse_positive(value: &str, max: f64, expected: &'static str) -> Result<f64, SetError> {
    let v = parse_f64(value, 0.0, max, expected)?;
    if v == 0.0 {
        Err(SetError::BadValue { expected })
    } else {
        Ok(v)
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
    values_only: bool,
}

impl<'a> KvWriter<'a> {
    /// A writer appending to `w`.
    pub fn new(w: &'a mut dyn fmt::Write) -> Self {
        KvWriter { w, first: true, values_only: false }
    }

    /// A writer that writes only the values (one parameter's value, for tables).
    pub fn values_only(w: &'a mut dyn fmt::Write) -> Self {
        KvWriter { w, first: true, values_only: true }
    }

    /// Write one pair.
    pub fn kv(&mut self, key: &str, value: impl fmt::Display) -> fmt::Result {
        if self.values_only {
            return write!(self.w, "{value}");
        }
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
