//! The parameters of one run as experiment files, sweeps and Python name them: a flat set
//! ([`fields::FIELDS`]: `algorithm`, `clients`, `groups`, `buffer_bytes`, `errors`,
//! `workload`, the `link`, `coap` and `server` sections, `topology`, `mesh`, `messages`...),
//! their one schema ([`schema`]), their one check ([`normalize`]: every value typed and
//! checked, errors keyed by the parameter at fault, [`ParamError`]) and their translation
//! into the simulator's configuration ([`to_config`], [`resolved_specs`]).
//!
//! Python's `coapcc.SimConfig` is this set: its fields, defaults, ranges and checks all come
//! from here, and it keeps none of its own.
//!
//! The parts: the typed values and errors (here), the check (`check`), the translation
//! (`build`), the parameter table ([`fields`]), order-preserving JSON ([`json`]) and the
//! suggestions of close keys ([`close`]).

use std::fmt;

use crate::config::{ConfigError, MessagesConfig};

mod build;
mod check;
pub mod close;
pub mod fields;
pub mod json;

pub use build::{
    algorithm_specs, compose, group_counts, resolved_specs, shared_values, to_config, to_config_unchecked,
};
pub use check::{normalize, split_shares};
use close::did_you_mean;
use fields::{Field, Kind, FIELDS, GROUP_KEYS};
pub use json::Json;

/// Why parameters cannot run: the key at fault (dotted: `link.mtu_bytes`,
/// `groups[1].share`, `mesh.mac.queue_packets`), what is wrong, and the valid values when they
/// form a short list. `Display` is one line: `key: problem (valid: a, b)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamError {
    /// The dotted key at fault.
    pub key: String,
    /// What is wrong with it.
    pub problem: String,
    /// The valid values, when they form a short list.
    pub choices: Option<Vec<String>>,
}

impl ParamError {
    fn new(key: &str, problem: impl Into<String>) -> Self {
        ParamError { key: key.into(), problem: problem.into(), choices: None }
    }

    fn with_choices(key: &str, problem: impl Into<String>, choices: Vec<String>) -> Self {
        ParamError { key: key.into(), problem: problem.into(), choices: Some(choices) }
    }
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.key, self.problem)?;
        if let Some(c) = self.choices.as_ref().filter(|c| !c.is_empty()) {
            write!(f, " (valid: {})", c.join(", "))?;
        }
        Ok(())
    }
}

impl std::error::Error for ParamError {}

type R<T> = Result<T, ParamError>;
pub(super) fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// An unknown key, with the closest valid key suggested.
pub(super) fn unknown_key(key: &str, what: &str, valid: Vec<String>) -> ParamError {
    let word = key.rsplit('.').next().unwrap_or(key);
    let dym = did_you_mean(word, valid.iter().map(String::as_str));
    ParamError::with_choices(key, format!("unknown {what}{dym}"), valid)
}

/// An integer (an integral float too) in `[min, max]`.
pub(super) fn int(key: &str, v: &Json, min: i128, max: i128) -> R<i128> {
    let bad = || ParamError::new(key, format!("expected an integer, got {}", v.repr()));
    let Json::Num(n) = v else { return Err(bad()) };
    let x: i128 = if let Some(u) = n.as_u64() {
        u.into()
    } else if let Some(i) = n.as_i64() {
        i.into()
    } else {
        let f = n.as_f64().ok_or_else(bad)?;
        if f.fract() != 0.0 || !f.is_finite() {
            return Err(bad());
        }
        // An integer too large for 64 bits arrives as a float.
        if f > max as f64 {
            return Err(ParamError::new(key, format!("must be <= {max}, got {}", json::py_g(f))));
        }
        if f < min as f64 {
            return Err(ParamError::new(key, format!("must be >= {min}, got {}", json::py_g(f))));
        }
        f as i128
    };
    if x < min {
        return Err(ParamError::new(key, format!("must be >= {min}, got {x}")));
    }
    if x > max {
        return Err(ParamError::new(key, format!("must be <= {max}, got {x}")));
    }
    Ok(x)
}

/// A finite number in `[min, max]` (and `> 0` with `positive`).
pub(super) fn float(key: &str, v: &Json, min: Option<f64>, max: Option<f64>, positive: bool) -> R<f64> {
    let n = match v {
        Json::Num(n) => n,
        // JSON has no NaN or infinity: the fronts write them as these words.
        Json::Str(s) if matches!(s.as_str(), "nan" | "inf" | "-inf") => {
            return Err(ParamError::new(key, format!("must be finite, got {s}")));
        }
        _ => return Err(ParamError::new(key, format!("expected a number, got {}", v.repr()))),
    };
    let x = n.as_f64().unwrap_or(f64::NAN);
    let shown = json::py_float(x);
    if !x.is_finite() {
        return Err(ParamError::new(key, format!("must be finite, got {shown}")));
    }
    if positive && x <= 0.0 {
        return Err(ParamError::new(key, format!("must be > 0, got {shown}")));
    }
    if let Some(lo) = min.filter(|&lo| x < lo) {
        return Err(ParamError::new(key, format!("must be >= {}, got {shown}", json::py_g(lo))));
    }
    if let Some(hi) = max.filter(|&hi| x > hi) {
        return Err(ParamError::new(key, format!("must be <= {}, got {shown}", json::py_g(hi))));
    }
    Ok(x)
}

pub(super) fn float_json(x: f64) -> Json {
    Json::Num(serde_json::Number::from_f64(x).expect("checked finite"))
}

pub(super) fn int_json(x: i128) -> Json {
    if x >= 0 {
        Json::Num((x as u64).into())
    } else {
        Json::Num((x as i64).into())
    }
}

/// A value of kind `kind` (the simple kinds), normalised.
pub(super) fn simple(key: &str, kind: Kind, v: &Json) -> R<Json> {
    match kind {
        Kind::Int { min, max } => int(key, v, min, max).map(int_json),
        Kind::Float { min, max, positive } => float(key, v, min, max, positive).map(float_json),
        Kind::Bool => match v {
            Json::Bool(_) => Ok(v.clone()),
            _ => Err(ParamError::new(key, format!("expected true or false, got {}", v.repr()))),
        },
        Kind::Str => match v {
            Json::Str(_) => Ok(v.clone()),
            _ => Err(ParamError::new(key, format!("expected a string, got {}", v.repr()))),
        },
        Kind::Choice(words) => match v {
            Json::Str(s) if words.contains(&s.as_str()) => Ok(v.clone()),
            _ => Err(ParamError::with_choices(key, format!("unknown value {}", v.repr()), strs(words))),
        },
        Kind::Named(names) => {
            let list = names.list();
            match v {
                Json::Null => Ok(Json::Null),
                Json::Str(s) if s.is_empty() => Ok(Json::Null),
                Json::Str(s) if list.iter().any(|n| n == s) => Ok(v.clone()),
                Json::Str(s) => {
                    let what = if key == "profile" { "profile" } else { "preset" };
                    let dym = did_you_mean(s, list.iter().map(String::as_str));
                    Err(ParamError::with_choices(key, format!("unknown {what} '{s}'{dym}"), list))
                }
                _ => Err(ParamError::with_choices(key, format!("expected a preset name, got {}", v.repr()), list)),
            }
        }
        Kind::Special => Ok(v.clone()),
    }
}

/// The schema: every parameter with its kind, default, range, valid values and meaning, the
/// sections' too, the shared transmission parameters and the limits (JSON).
pub fn schema() -> serde_json::Value {
    use serde_json::json;
    let defaults = fields::defaults().value();
    let describe = |f: &Field, default: &serde_json::Value| {
        let mut d = json!({"name": f.name, "doc": f.doc, "optional": f.optional, "default": default});
        let kind = match f.kind {
            Kind::Int { min, max } => {
                d["min"] = json!(min as f64);
                d["max"] = json!(max as f64);
                "int"
            }
            Kind::Float { min, max, positive } => {
                d["min"] = json!(min);
                d["max"] = json!(max);
                d["positive"] = json!(positive);
                "float"
            }
            Kind::Bool => "bool",
            Kind::Str => "str",
            Kind::Choice(c) => {
                d["choices"] = json!(c);
                "choice"
            }
            Kind::Named(n) => {
                d["choices"] = json!(n.list());
                "name"
            }
            Kind::Special => "special",
        };
        d["kind"] = json!(kind);
        d
    };
    let section = |name: &str, table: &[Field]| -> Vec<serde_json::Value> {
        table.iter().map(|f| describe(f, &defaults[name][f.name])).collect()
    };
    json!({
        "fields": FIELDS.iter().map(|f| describe(f, &defaults[f.name])).collect::<Vec<_>>(),
        "sections": {
            "link": section("link", fields::LINK),
            "coap": section("coap", fields::COAP),
            "server": section("server", fields::SERVER),
        },
        "shared": fields::shared(),
        "group_keys": GROUP_KEYS,
        "workloads": ["continuous", "random", "bulk:BYTES", "periodic:LOAD_KBPS", "events:TB_S,SIZE_B", "none"],
        "messages": serde_json::to_value(MessagesConfig::default()).expect("serialises"),
        "mesh": serde_json::to_value(coapcc_mesh::MeshNetConfig::default()).expect("serialises"),
        "max_clients": crate::config::MAX_CLIENTS,
    })
}

impl From<ParamError> for ConfigError {
    fn from(e: ParamError) -> ConfigError {
        ConfigError::Invalid { field: e.key, problem: e.problem }
    }
}

#[cfg(test)]
mod tests;
