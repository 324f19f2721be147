//! The parameters of one run as experiment files, sweeps and Python name them: a flat set
//! ([`fields::FIELDS`]: `algorithm`, `clients`, `groups`, `buffer_bytes`, `errors`,
//! `workload`, the `link`, `coap` and `server` sections, `topology`, `mesh`, `messages`...),
//! their one schema ([`schema`]), their one check ([`normalize`]: every value typed and
//! checked, errors keyed by the parameter at fault, [`ParamError`]) and their translation
//! into the simulator's configuration ([`to_config`], [`resolved_specs`]).
//!
//! Python's `coapcc.SimConfig` is this set: its fields, defaults, ranges and checks all come
//! from here, and it keeps none of its own.

use std::fmt;

use coapcc_link::{ErrorClock, LinkSpec, LossModel};

use crate::config::{
    compose_spec, profile_params, split_label, AccessLinkConfig, ConfigError, GroupConfig, MessagesConfig, SimConfig,
    WorkloadKind,
};

pub mod close;
pub mod fields;
pub mod json;

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

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// An unknown key, with the closest valid key suggested.
fn unknown_key(key: &str, what: &str, valid: Vec<String>) -> ParamError {
    let word = key.rsplit('.').next().unwrap_or(key);
    let dym = did_you_mean(word, valid.iter().map(String::as_str));
    ParamError::with_choices(key, format!("unknown {what}{dym}"), valid)
}

// -- typed values ------------------------------------------------------------------------

/// An integer (an integral float too) in `[min, max]`.
fn int(key: &str, v: &Json, min: i128, max: i128) -> R<i128> {
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
            return Err(ParamError::new(key, format!("must be <= {max}, got {f:.0}")));
        }
        if f < min as f64 {
            return Err(ParamError::new(key, format!("must be >= {min}, got {f:.0}")));
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
fn float(key: &str, v: &Json, min: Option<f64>, max: Option<f64>, positive: bool) -> R<f64> {
    let Json::Num(n) = v else {
        return Err(ParamError::new(key, format!("expected a number, got {}", v.repr())));
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

fn float_json(x: f64) -> Json {
    Json::Num(serde_json::Number::from_f64(x).expect("checked finite"))
}

fn int_json(x: i128) -> Json {
    if x >= 0 {
        Json::Num((x as u64).into())
    } else {
        Json::Num((x as i64).into())
    }
}

/// A value of kind `kind` (the simple kinds), normalised.
fn simple(key: &str, kind: Kind, v: &Json) -> R<Json> {
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

// -- normalising -------------------------------------------------------------------------

/// The valid top-level keys: the parameters and the shared transmission parameters.
fn valid_keys() -> Vec<String> {
    FIELDS.iter().map(|f| f.name.to_string()).chain(fields::shared().into_iter().map(String::from)).collect()
}

/// The sections whose keys a dotted top-level key may name.
const DOTTED: &[&str] = &["link", "coap", "server", "transmission", "mesh", "messages"];

/// Gather `input`'s keys into parameters: dotted keys into their sections
/// (`link.mtu_bytes`, `mesh.mac.queue_packets`), shared transmission parameters into
/// `transmission`, every other key a parameter.
fn gather(input: &Json) -> R<Vec<(String, Json)>> {
    let Json::Obj(items) = input else {
        return Err(ParamError::new("config", format!("expected a table of parameters, got {}", input.repr())));
    };
    let shared = fields::shared();
    let mut top: Vec<(String, Json)> = Vec::new();
    let mut nested: Vec<(String, Vec<(String, Json)>)> = Vec::new();
    for (k, v) in items {
        if let Some((head, tail)) = k.split_once('.') {
            if !DOTTED.contains(&head) {
                return Err(unknown_key(k, "configuration key", valid_keys()));
            }
            match nested.iter_mut().find(|(h, _)| h == head) {
                Some((_, sub)) => sub.push((tail.into(), v.clone())),
                None => nested.push((head.into(), vec![(tail.into(), v.clone())])),
            }
        } else if shared.contains(&k.as_str()) {
            match nested.iter_mut().find(|(h, _)| h == "transmission") {
                Some((_, sub)) => sub.push((k.clone(), v.clone())),
                None => nested.push(("transmission".into(), vec![(k.clone(), v.clone())])),
            }
        } else {
            top.push((k.clone(), v.clone()));
        }
    }
    for (head, sub) in nested {
        let base = match top.iter().position(|(k, _)| *k == head) {
            Some(i) => top.remove(i).1,
            None => Json::Obj(Vec::new()),
        };
        let mut merged = match base {
            Json::Obj(m) => m,
            Json::Null => Vec::new(),
            other => {
                return Err(ParamError::new(
                    &head,
                    format!("expected a table of {head} parameters, got {}", other.repr()),
                ))
            }
        };
        for (k, v) in sub {
            match merged.iter_mut().find(|(x, _)| *x == k) {
                Some(slot) => slot.1 = v,
                None => merged.push((k, v)),
            }
        }
        top.push((head, Json::Obj(merged)));
    }
    let names: Vec<&str> = FIELDS.iter().map(|f| f.name).collect();
    if let Some((k, _)) = top.iter().find(|(k, _)| !names.contains(&k.as_str())) {
        return Err(unknown_key(k, "configuration key", valid_keys()));
    }
    Ok(top)
}

/// Every parameter of `input` (an object of parameters, dotted keys and shared transmission
/// parameters at the top level allowed) typed, checked and completed with its default, in
/// [`FIELDS`] order; the first problem as a [`ParamError`].
pub fn normalize(input: &Json) -> R<Json> {
    let given = gather(input)?;
    let defaults = fields::defaults();
    let get = |name: &str| -> Json {
        given
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| defaults.get(name).cloned().unwrap_or(Json::Null))
    };
    let mut out: Vec<(String, Json)> = Vec::with_capacity(FIELDS.len());
    let put = |out: &mut Vec<(String, Json)>, k: &str, v: Json| out.push((k.into(), v));
    let field = |name: &str| -> &'static Field { FIELDS.iter().find(|f| f.name == name).expect("a field") };
    let check = |name: &str| simple(name, field(name).kind, &get(name));

    // In the order of the checks of the first front (the first problem found is the same).
    let algorithm = match get("algorithm") {
        Json::Str(s) if !s.trim().is_empty() => s,
        v => {
            return Err(ParamError::new(
                "algorithm",
                format!("expected an algorithm spec NAME[:key=value,...], got {}", v.repr()),
            ))
        }
    };
    let mut clients = int("clients", &get("clients"), 1, crate::config::MAX_CLIENTS as i128)? as u64;
    let groups = groups(&get("groups"), &mut clients)?;
    let preset = check("preset")?;
    let profile = check("profile")?;
    let transmission = transmission(&get("transmission"))?;
    let buffer = check("buffer_bytes")?;
    let clock = check("error_clock")?;
    let burst = check("error_burst_packets")?;
    let errors = errors("errors", &get("errors"), &clock, &burst)?;
    let workload = workload(&get("workload"))?;
    let transport = check("transport")?;
    if transport == Json::Str("tcp".into()) {
        if profile != Json::Null {
            return Err(ParamError::new(
                "profile",
                "a testbed profile sets CoAP-over-UDP parameters; it does not apply to tcp",
            ));
        }
        if let Json::Obj(m) = &transmission {
            if !m.is_empty() {
                let keys: Vec<&str> = m.iter().map(|(k, _)| k.as_str()).collect();
                return Err(ParamError::new(
                    "transmission",
                    format!(
                        "shared CoAP-over-UDP transmission parameters do not apply to tcp (got {})",
                        keys.join(", ")
                    ),
                ));
            }
        }
    }
    let exchanges = check("exchanges")?;
    let batch_min = check("batch_min")?;
    let batch_max = check("batch_max")?;
    if let (Json::Num(a), Json::Num(b)) = (&batch_min, &batch_max) {
        if a.as_u64() > b.as_u64() {
            return Err(ParamError::new("batch_min", format!("{a} exceeds batch_max = {b}")));
        }
    }
    let rest: Vec<(&str, Json)> = vec![
        ("start_jitter_ms", check("start_jitter_ms")?),
        ("failed_exchange_policy", check("failed_exchange_policy")?),
        ("unnecessary_def", check("unnecessary_def")?),
        ("endpoint_model", check("endpoint_model")?),
        ("max_sim_time_s", check("max_sim_time_s")?),
        ("seed", check("seed")?),
        ("link", section("link", fields::LINK, &get("link"), &defaults)?),
        ("coap", section("coap", fields::COAP, &get("coap"), &defaults)?),
        ("server", section("server", fields::SERVER, &get("server"), &defaults)?),
        ("topology", topology(&get("topology"))?),
        ("mesh_preset", check("mesh_preset")?),
        ("mesh", table("mesh", &get("mesh"))?),
        ("access_links", access_links(&get("access_links"))?),
        ("messages", table("messages", &get("messages"))?),
        ("trace", trace(&get("trace"))?),
    ];
    put(&mut out, "algorithm", Json::Str(algorithm));
    put(&mut out, "clients", Json::Num(clients.into()));
    put(&mut out, "groups", groups);
    put(&mut out, "preset", preset);
    put(&mut out, "profile", profile);
    put(&mut out, "transmission", transmission);
    put(&mut out, "buffer_bytes", buffer);
    put(&mut out, "errors", errors);
    put(&mut out, "error_clock", clock);
    put(&mut out, "error_burst_packets", burst);
    put(&mut out, "workload", workload);
    put(&mut out, "transport", transport);
    put(&mut out, "exchanges", exchanges);
    put(&mut out, "batch_min", batch_min);
    put(&mut out, "batch_max", batch_max);
    for (k, v) in rest {
        put(&mut out, k, v);
    }
    Ok(Json::Obj(out))
}

/// The client groups (`clients` becomes their total when they give counts).
fn groups(v: &Json, clients: &mut u64) -> R<Json> {
    let max = crate::config::MAX_CLIENTS as i128;
    let list: Vec<Json> = match v {
        Json::Null => Vec::new(),
        Json::Arr(a) => a.clone(),
        Json::Obj(_) | Json::Str(_) => vec![v.clone()],
        _ => return Err(ParamError::new("groups", format!("expected a list of groups, got {}", v.repr()))),
    };
    let mut out = Vec::new();
    for (i, g) in list.iter().enumerate() {
        let k = format!("groups[{i}]");
        let items: Vec<(String, Json)> = match g {
            Json::Str(s) => vec![("algorithm".into(), Json::Str(s.clone()))],
            Json::Obj(m) => m.clone(),
            _ => {
                return Err(ParamError::new(
                    &k,
                    format!("expected a table {{algorithm=..., clients=N or share=F, label=...}}, got {}", g.repr()),
                ))
            }
        };
        if let Some((bad, _)) = items.iter().find(|(x, _)| !GROUP_KEYS.contains(&x.as_str())) {
            return Err(unknown_key(&format!("{k}.{bad}"), "group key", strs(GROUP_KEYS)));
        }
        let at = |name: &str| items.iter().find(|(x, _)| x == name).map(|(_, v)| v.clone()).unwrap_or(Json::Null);
        let algorithm = match at("algorithm") {
            Json::Null => Json::Str(crate::config::DEFAULT_CC.into()),
            Json::Str(s) if !s.trim().is_empty() => Json::Str(s),
            a => {
                return Err(ParamError::new(
                    &format!("{k}.algorithm"),
                    format!("expected an algorithm spec, got {}", a.repr()),
                ))
            }
        };
        let label = match at("label") {
            Json::Null => Json::Null,
            Json::Str(s) if !s.trim().is_empty() => Json::Str(s),
            l => {
                return Err(ParamError::new(&format!("{k}.label"), format!("expected a short text, got {}", l.repr())))
            }
        };
        let (c, s) = (at("clients"), at("share"));
        if (c == Json::Null) == (s == Json::Null) {
            return Err(ParamError::new(&k, "give exactly one of clients or share"));
        }
        let mut g = vec![("algorithm".to_string(), algorithm)];
        if c != Json::Null {
            g.push(("clients".into(), int_json(int(&format!("{k}.clients"), &c, 1, max)?)));
        } else {
            g.push(("share".into(), float_json(float(&format!("{k}.share"), &s, None, Some(1.0), true)?)));
        }
        if label != Json::Null {
            g.push(("label".into(), label));
        }
        out.push(g);
    }
    if out.is_empty() {
        return Ok(Json::Arr(Vec::new()));
    }
    let by_count: Vec<bool> = out.iter().map(|g| g.iter().any(|(k, _)| k == "clients")).collect();
    if by_count.iter().any(|&b| b) && !by_count.iter().all(|&b| b) {
        return Err(ParamError::new("groups", "give every group a clients count, or every group a share"));
    }
    let num = |g: &[(String, Json)], k: &str| -> f64 {
        g.iter()
            .find(|(x, _)| x == k)
            .and_then(|(_, v)| if let Json::Num(n) = v { n.as_f64() } else { None })
            .unwrap_or(0.0)
    };
    if by_count[0] {
        let total: u64 = out.iter().map(|g| num(g, "clients") as u64).sum();
        if total as i128 > max {
            return Err(ParamError::new("groups", format!("{total} clients in all; must be <= {max}")));
        }
        *clients = total;
    } else {
        let shares: Vec<f64> = out.iter().map(|g| num(g, "share")).collect();
        let total: f64 = shares.iter().sum();
        if (total - 1.0).abs() > 1e-9 {
            return Err(ParamError::new(
                "groups",
                format!(
                    "shares add up to {}; they must add up to 1 (or give each group a clients count)",
                    json::py_g(total)
                ),
            ));
        }
        for (i, n) in split_shares(*clients, &shares).into_iter().enumerate() {
            if n == 0 {
                return Err(ParamError::new(
                    &format!("groups[{i}].share"),
                    format!("share {} of {clients} clients is no client; use more clients", json::py_float(shares[i])),
                ));
            }
        }
    }
    Ok(Json::Arr(out.into_iter().map(Json::Obj).collect()))
}

/// `total` clients split by `shares` (largest remainder, ties to the earlier group).
pub fn split_shares(total: u64, shares: &[f64]) -> Vec<u64> {
    let s: f64 = shares.iter().sum();
    let exact: Vec<f64> = shares.iter().map(|x| total as f64 * x / s).collect();
    let mut counts: Vec<u64> = exact.iter().map(|x| x.floor() as u64).collect();
    let mut order: Vec<usize> = (0..shares.len()).collect();
    order.sort_by(|&a, &b| (exact[b] - counts[b] as f64).total_cmp(&(exact[a] - counts[a] as f64)).then(a.cmp(&b)));
    let left = total.saturating_sub(counts.iter().sum());
    for &i in order.iter().take(left as usize) {
        counts[i] += 1;
    }
    counts
}

/// The shared transmission parameters.
fn transmission(v: &Json) -> R<Json> {
    let items = match v {
        Json::Null => return Ok(Json::Obj(Vec::new())),
        Json::Obj(m) => m,
        _ => {
            return Err(ParamError::new(
                "transmission",
                format!("expected a table of shared parameters, got {}", v.repr()),
            ))
        }
    };
    let shared = fields::shared();
    let mut out = Vec::new();
    for (k, x) in items {
        let key = format!("transmission.{k}");
        if !shared.contains(&k.as_str()) {
            return Err(unknown_key(&key, "shared transmission parameter", strs(&shared)));
        }
        let x = match x {
            Json::Bool(_) | Json::Str(_) => x.clone(),
            Json::Num(n) if n.is_f64() => float_json(float(&key, x, None, None, false)?),
            Json::Num(_) => x.clone(),
            _ => return Err(ParamError::new(&key, format!("expected a number or a word, got {}", x.repr()))),
        };
        out.push((k.clone(), x));
    }
    Ok(Json::Obj(out))
}

/// A link-error profile, checked by the link model's parser with its clock and burst length.
fn errors(key: &str, v: &Json, clock: &Json, burst: &Json) -> R<Json> {
    let choices = strs(&["none", "low", "medium", "high", "bernoulli:P", "ge:P,R,K,H", "ge-time:T_L,T_B,K,H"]);
    let Json::Str(s) = v else {
        return Err(ParamError::with_choices(key, format!("expected a string, got {}", v.repr()), choices));
    };
    let text = s.trim().to_lowercase();
    let clock: ErrorClock = match clock {
        Json::Str(c) => c.parse().map_err(|e: String| ParamError::new("error_clock", e))?,
        _ => ErrorClock::Time,
    };
    let burst = if let Json::Num(n) = burst { n.as_f64().unwrap_or(5.0) } else { 5.0 };
    LossModel::parse(&text, clock, burst).map_err(|e| ParamError::new(key, e))?;
    Ok(Json::Str(text))
}

/// A workload, in its normal form (`bulk:102400`, `periodic:3`).
fn workload(v: &Json) -> R<Json> {
    let choices = strs(&["continuous", "random", "bulk:BYTES", "periodic:LOAD_KBPS", "events:TB_S,SIZE_B", "none"]);
    let Json::Str(s) = v else {
        return Err(ParamError::with_choices("workload", format!("unknown value {}", v.repr()), choices));
    };
    let text = s.trim();
    let head = text.split(':').next().unwrap_or("").trim().to_lowercase();
    if head == "bulk" {
        let size = text.split_once(':').map(|(_, b)| b.trim().replace('_', ""));
        return match size.as_deref().map(str::parse::<u64>) {
            Some(Ok(b)) if b >= 1 && text.contains(':') => Ok(Json::Str(format!("bulk:{b}"))),
            _ => Err(ParamError::new(
                "workload",
                format!("expected bulk:BYTES with BYTES a positive integer, got {}", v.repr()),
            )),
        };
    }
    match WorkloadKind::parse(text) {
        Ok(k) => Ok(Json::Str(k.to_string())),
        Err(e) if matches!(head.as_str(), "periodic" | "events") => Err(ParamError::new("workload", e)),
        Err(_) => {
            let names = ["continuous", "random", "none"];
            let dym = did_you_mean(text, names);
            Err(ParamError::with_choices("workload", format!("unknown value {}{dym}", v.repr()), choices))
        }
    }
}

/// A section of simple parameters, completed with its defaults and checked.
fn section(name: &str, table: &[Field], v: &Json, defaults: &Json) -> R<Json> {
    let items = match v {
        Json::Null => Vec::new(),
        Json::Obj(m) => m.clone(),
        _ => return Err(ParamError::new(name, format!("expected a table of {name} parameters, got {}", v.repr()))),
    };
    let names: Vec<String> = table.iter().map(|f| f.name.to_string()).collect();
    if let Some((bad, _)) = items.iter().find(|(k, _)| !names.contains(k)) {
        return Err(unknown_key(&format!("{name}.{bad}"), "key", names));
    }
    let d = defaults.get(name).cloned().unwrap_or(Json::Obj(Vec::new()));
    let mut out = Vec::new();
    for f in table {
        let key = format!("{name}.{}", f.name);
        let raw = items.iter().find(|(k, _)| k == f.name).map(|(_, v)| v.clone());
        let x = raw.unwrap_or_else(|| d.get(f.name).cloned().unwrap_or(Json::Null));
        out.push((f.name.to_string(), simple(&key, f.kind, &x)?));
    }
    let out = Json::Obj(out);
    let n = |k: &str| if let Some(Json::Num(x)) = out.get(k) { x.as_f64().unwrap_or(0.0) } else { 0.0 };
    match name {
        "link" => {
            for k in ["uplink_rate_bps", "downlink_rate_bps", "mtu_bytes"] {
                if n(k) <= 0.0 {
                    return Err(ParamError::new(&format!("link.{k}"), format!("must be > 0, got {}", n(k) as u64)));
                }
            }
            if n("rest_of_path_min_ms") > n("rest_of_path_max_ms") {
                return Err(ParamError::new(
                    "link.rest_of_path_min_ms",
                    format!(
                        "{} exceeds rest_of_path_max_ms = {}",
                        json::py_float(n("rest_of_path_min_ms")),
                        json::py_float(n("rest_of_path_max_ms"))
                    ),
                ));
            }
        }
        "coap" => {
            let ip = n("ip_version") as u64;
            if ip != 4 && ip != 6 {
                return Err(ParamError::with_choices(
                    "coap.ip_version",
                    format!("unknown value {ip}"),
                    strs(&["4", "6"]),
                ));
            }
            if n("token_len") > 8.0 {
                return Err(ParamError::new("coap.token_len", format!("must be <= 8, got {}", n("token_len") as u64)));
            }
        }
        _ => {}
    }
    Ok(out)
}

/// A mesh topology (`grid:6`), or unset for the links.
fn topology(v: &Json) -> R<Json> {
    match v {
        Json::Null => Ok(Json::Null),
        Json::Str(s) if s.trim().is_empty() => Ok(Json::Null),
        Json::Str(s) => Ok(Json::Str(s.trim().into())),
        _ => Err(ParamError::new(
            "topology",
            format!("expected a mesh topology (grid:N, chain:N, ...), got {}", v.repr()),
        )),
    }
}

/// A table of parameters of another configuration (`mesh`, `messages`): checked when the run's
/// configuration is built ([`to_config`]).
fn table(name: &str, v: &Json) -> R<Json> {
    match v {
        Json::Null => Ok(Json::Obj(Vec::new())),
        Json::Obj(_) => Ok(v.clone()),
        _ => Err(ParamError::new(name, format!("expected a table of {name} parameters, got {}", v.repr()))),
    }
}

/// The extra access links: each a table with `groups` and link parameters.
fn access_links(v: &Json) -> R<Json> {
    let list = match v {
        Json::Null => return Ok(Json::Arr(Vec::new())),
        Json::Arr(a) => a,
        _ => return Err(ParamError::new("access_links", format!("expected a list of access links, got {}", v.repr()))),
    };
    for (i, a) in list.iter().enumerate() {
        if !matches!(a, Json::Obj(_)) {
            return Err(ParamError::new(
                &format!("access_links[{i}]"),
                format!("expected a table {{groups = [...], <link parameters>}}, got {}", a.repr()),
            ));
        }
    }
    Ok(v.clone())
}

/// A trace file path, or unset.
fn trace(v: &Json) -> R<Json> {
    match v {
        Json::Null => Ok(Json::Null),
        Json::Str(s) if !s.trim().is_empty() => Ok(v.clone()),
        _ => Err(ParamError::new("trace", format!("expected a file path (str or os.PathLike), got {}", v.repr()))),
    }
}

// -- the simulator's configuration ---------------------------------------------------------

fn text<'a>(p: &'a Json, k: &str) -> &'a str {
    match p.get(k) {
        Some(Json::Str(s)) => s,
        _ => "",
    }
}

fn number(p: &Json, k: &str) -> f64 {
    match p.get(k) {
        Some(Json::Num(n)) => n.as_f64().unwrap_or(0.0),
        _ => 0.0,
    }
}

fn uint(p: &Json, k: &str) -> u64 {
    match p.get(k) {
        Some(Json::Num(n)) => n.as_u64().unwrap_or(0),
        _ => 0,
    }
}

/// Each group's algorithm spec as written (its label dropped) with its clients, shares turned
/// into counts (normalised parameters).
pub fn group_counts(p: &Json) -> Vec<(String, u64)> {
    let clients = uint(p, "clients");
    let groups = match p.get("groups") {
        Some(Json::Arr(g)) if !g.is_empty() => g,
        _ => return vec![(split_label(text(p, "algorithm")).1.trim().to_string(), clients)],
    };
    let specs: Vec<String> = groups.iter().map(|g| split_label(text(g, "algorithm")).1.trim().to_string()).collect();
    if groups[0].get("clients").is_some() {
        return specs.into_iter().zip(groups.iter().map(|g| uint(g, "clients"))).collect();
    }
    let shares: Vec<f64> = groups.iter().map(|g| number(g, "share")).collect();
    specs.into_iter().zip(split_shares(clients, &shares)).collect()
}

/// A shared parameter's value as an algorithm spec writes it (`on`/`off`, `20`, `0.5`).
fn spec_value(v: &Json) -> String {
    match v {
        Json::Bool(b) => if *b { "on" } else { "off" }.into(),
        Json::Num(n) if n.is_f64() => {
            let x = n.as_f64().unwrap_or(0.0);
            if x.fract() == 0.0 && x.abs() < 1e16 {
                format!("{}", x as i64)
            } else {
                json::py_float(x)
            }
        }
        Json::Num(n) => n.to_string(),
        Json::Str(s) => s.trim().into(),
        other => other.repr(),
    }
}

/// The shared parameters every group gets: the profile's, then `transmission` (UDP only).
fn shared_transmission(p: &Json) -> R<Vec<(String, String)>> {
    let mut out: Vec<(String, String)> = Vec::new();
    let tcp = text(p, "transport") == "tcp";
    if let (false, Some(Json::Str(profile))) = (tcp, p.get("profile")) {
        for (k, v) in profile_params(profile).map_err(|e| ParamError::new("profile", e))? {
            out.push((k.into(), v));
        }
    }
    if let Some(Json::Obj(m)) = p.get("transmission") {
        for (k, v) in m {
            let v = spec_value(v);
            match out.iter_mut().find(|(x, _)| x == k) {
                Some(slot) => slot.1 = v,
                None => out.push((k.clone(), v)),
            }
        }
    }
    Ok(out)
}

/// `spec` with the preset and the shared parameters applied: what the simulator receives.
fn composed(spec: &str, preset: Option<&str>, shared: &[(String, String)]) -> R<String> {
    let (_, spec) = split_label(spec);
    let shared: Vec<(&str, String)> = shared.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
    compose_spec(spec, preset, &shared).map_err(|e| ParamError::new("algorithm", e))
}

/// `spec` with `preset` and the shared parameters `transmission` (an object) applied, as
/// every front composes a group's spec (a label is dropped).
pub fn compose(spec: &str, preset: Option<&str>, transmission: &Json) -> R<String> {
    let shared: Vec<(String, String)> = match transmission {
        Json::Obj(m) => m.iter().map(|(k, v)| (k.clone(), spec_value(v))).collect(),
        _ => Vec::new(),
    };
    composed(spec, preset, &shared)
}

/// The shared parameters every group of normalised parameters `p` gets, as spec text: the
/// profile's, then `transmission` (UDP only).
pub fn shared_values(p: &Json) -> R<Vec<(String, String)>> {
    shared_transmission(p)
}

/// Each group's algorithm spec as the simulator receives it, with its clients.
pub fn algorithm_specs(p: &Json) -> R<Vec<(String, u64)>> {
    let shared = shared_transmission(p)?;
    let preset = match p.get("preset") {
        Some(Json::Str(s)) => Some(s.as_str()),
        _ => None,
    };
    group_counts(p).into_iter().map(|(s, n)| Ok((composed(&s, preset, &shared)?, n))).collect()
}

/// The key of a group's algorithm (`algorithm`, or `groups[i].algorithm` for mixed runs).
fn algorithm_key(p: &Json, i: usize) -> String {
    match p.get("groups") {
        Some(Json::Arr(g)) if !g.is_empty() => format!("groups[{i}].algorithm"),
        _ => "algorithm".into(),
    }
}

/// Every group's algorithm fully resolved (the registry's canonical form; TCP specs by the
/// TCP model), each error under the parameter that caused it: the spec as written, the
/// `preset`, or a `transmission` parameter.
pub fn resolved_specs(p: &Json) -> R<Vec<String>> {
    if text(p, "transport") == "tcp" {
        let cfg = to_config_unchecked(p)?;
        let r = cfg.resolved().map_err(|e| param_error(p, e))?;
        return Ok(r.groups.iter().map(|g| split_label(&g.cc).1.to_string()).collect());
    }
    let specs = algorithm_specs(p)?;
    let mut out = Vec::with_capacity(specs.len());
    for (i, ((written, _), (spec, _))) in group_counts(p).iter().zip(&specs).enumerate() {
        let key = algorithm_key(p, i);
        let resolve = |s: &str| coapcc_cc::AlgorithmConfig::parse(s).map(|a| a.to_string()).map_err(|e| e.to_string());
        resolve(written).map_err(|e| ParamError::new(&key, e))?;
        match resolve(spec) {
            Ok(r) => out.push(r),
            Err(message) => {
                let preset = text(p, "preset");
                if !preset.is_empty() && message.contains("preset") && message.contains(preset) {
                    return Err(ParamError::new("preset", message));
                }
                let bad = match p.get("transmission") {
                    Some(Json::Obj(m)) => m.iter().map(|(k, _)| k.clone()).find(|k| message.contains(k.as_str())),
                    _ => None,
                };
                return Err(ParamError::new(&bad.map_or(key, |k| format!("transmission.{k}")), message));
            }
        }
    }
    Ok(out)
}

/// The link of `LinkSpec` parameters given as a table (`buffer_bytes`, `errors`,
/// `error_clock`, `error_burst_packets` and the `link` section's names); `key`: where it sits.
fn link_spec(key: &str, p: &Json, link: &Json) -> R<LinkSpec> {
    let d = LinkSpec::default();
    let f = |k: &str, dv: f64| {
        if let Some(Json::Num(n)) = link.get(k).or(p.get(k)) {
            n.as_f64().unwrap_or(dv)
        } else {
            dv
        }
    };
    let u = |k: &str, dv: u64| {
        if let Some(Json::Num(n)) = link.get(k).or(p.get(k)) {
            n.as_u64().unwrap_or(dv)
        } else {
            dv
        }
    };
    let clock = match p.get("error_clock") {
        Some(Json::Str(c)) => c.parse().map_err(|e: String| ParamError::new(&format!("{key}error_clock"), e))?,
        _ => d.error_clock,
    };
    Ok(LinkSpec {
        mtu_bytes: u("mtu_bytes", d.mtu_bytes.into()) as u32,
        buffer_bytes: u("buffer_bytes", d.buffer_bytes),
        buffer_counts_in_service: match link.get("buffer_counts_in_service").or(p.get("buffer_counts_in_service")) {
            Some(Json::Bool(b)) => *b,
            _ => d.buffer_counts_in_service,
        },
        per_packet_overhead_bytes: u("per_packet_overhead_bytes", d.per_packet_overhead_bytes.into()) as u32,
        uplink_rate_bps: u("uplink_rate_bps", d.uplink_rate_bps),
        downlink_rate_bps: u("downlink_rate_bps", d.downlink_rate_bps),
        uplink_delay_ms: f("uplink_delay_ms", d.uplink_delay_ms),
        downlink_delay_ms: f("downlink_delay_ms", d.downlink_delay_ms),
        rest_of_path_min_ms: f("rest_of_path_min_ms", d.rest_of_path_min_ms),
        rest_of_path_max_ms: f("rest_of_path_max_ms", d.rest_of_path_max_ms),
        errors: match p.get("errors") {
            Some(Json::Str(e)) => e.clone(),
            _ => d.errors.clone(),
        },
        error_clock: clock,
        burst_packets: f("error_burst_packets", d.burst_packets),
    })
}

/// The simulator's configuration of normalised parameters `p`, checked by the simulator
/// (every error keyed as a parameter).
pub fn to_config(p: &Json) -> R<SimConfig> {
    let cfg = to_config_unchecked(p)?;
    resolved_specs(p)?;
    cfg.resolved().map_err(|e| param_error(p, e))?;
    Ok(cfg)
}

/// As [`to_config`], without the simulator's final check (the configuration as given, for
/// its identity).
pub fn to_config_unchecked(p: &Json) -> R<SimConfig> {
    let mut cfg =
        SimConfig { seed: uint(p, "seed"), max_sim_time_s: number(p, "max_sim_time_s"), ..SimConfig::default() };
    cfg.groups = algorithm_specs(p)?.into_iter().map(|(cc, n)| GroupConfig { cc, clients: n as u32 }).collect();
    let w = &mut cfg.workload;
    w.kind = WorkloadKind::parse(text(p, "workload")).map_err(|e| ParamError::new("workload", e))?;
    w.exchanges = uint(p, "exchanges") as u32;
    w.batch_min = uint(p, "batch_min") as u32;
    w.batch_max = uint(p, "batch_max") as u32;
    w.start_jitter_ms = number(p, "start_jitter_ms");
    w.failed_exchanges = word(p, "failed_exchange_policy", "failed_exchange_policy")?;
    let link = p.get("link").cloned().unwrap_or(Json::Obj(Vec::new()));
    let spec = link_spec("", p, &link)?;
    cfg.link = spec.build().map_err(|e| link_error("", &e))?;
    cfg.coap = serde_json::from_value(p.get("coap").map_or(serde_json::Value::Null, Json::value))
        .map_err(|e| ParamError::new("coap", e.to_string()))?;
    cfg.server = serde_json::from_value(p.get("server").map_or(serde_json::Value::Null, Json::value))
        .map_err(|e| ParamError::new("server", e.to_string()))?;
    cfg.metrics.unnecessary_def = word(p, "unnecessary_def", "unnecessary_def")?;
    cfg.endpoint.model = word(p, "endpoint_model", "endpoint_model")?;
    cfg.transport = word(p, "transport", "transport")?;
    if let Some(Json::Str(t)) = p.get("topology") {
        let preset = match p.get("mesh_preset") {
            Some(Json::Str(s)) => s.as_str(),
            _ => "ieee802154",
        };
        let mut m =
            coapcc_mesh::MediumConfig::preset(preset, t).map_err(|e| ParamError::new("mesh_preset", e.problem))?;
        if let Some(Json::Obj(items)) = p.get("mesh") {
            for (k, v) in items {
                let text = match v {
                    Json::Str(s) => s.clone(),
                    other => other.text(),
                };
                m.set(k, &text).map_err(|e| ParamError::new(&format!("mesh.{}", e.key), e.problem))?;
            }
        }
        cfg.topology.mesh = Some(m);
    } else if !matches!(p.get("mesh"), Some(Json::Obj(m)) if m.is_empty()) && p.get("mesh").is_some() {
        return Err(ParamError::new("mesh", "applies to a mesh topology (set topology, e.g. grid:6)"));
    }
    if let Some(Json::Arr(list)) = p.get("access_links") {
        for (i, a) in list.iter().enumerate() {
            cfg.topology.access_links.push(access_link(i, a)?);
        }
    }
    if let Some(Json::Obj(items)) = p.get("messages") {
        if !items.is_empty() || cfg.workload.kind.is_messages() {
            let mut m = serde_json::to_value(MessagesConfig::default()).expect("serialises");
            for (k, v) in items {
                let slot = m.get_mut(k).ok_or_else(|| {
                    let names = serde_json::to_value(MessagesConfig::default())
                        .ok()
                        .and_then(|v| v.as_object().map(|o| o.keys().cloned().collect()))
                        .unwrap_or_default();
                    unknown_key(&format!("messages.{k}"), "key", names)
                })?;
                *slot = v.value();
            }
            let mc: MessagesConfig =
                serde_json::from_value(m).map_err(|e| ParamError::new("messages", e.to_string()))?;
            cfg.workload.messages = Some(mc);
        }
    }
    Ok(cfg)
}

/// A word of the simulator's configuration (`response_delivered`) from parameter `k`.
fn word<T: serde::de::DeserializeOwned>(p: &Json, k: &str, key: &str) -> R<T> {
    serde_json::from_value(serde_json::Value::String(text(p, k).into()))
        .map_err(|e| ParamError::new(key, e.to_string()))
}

/// One extra access link.
fn access_link(i: usize, a: &Json) -> R<AccessLinkConfig> {
    let at = format!("access_links[{i}]");
    let Json::Obj(items) = a else { return Err(ParamError::new(&at, "expected a table")) };
    let mut valid: Vec<String> = fields::LINK.iter().map(|f| f.name.to_string()).collect();
    valid.extend(["groups", "buffer_bytes", "errors", "error_clock", "error_burst_packets"].map(String::from));
    if let Some((bad, _)) = items.iter().find(|(k, _)| !valid.contains(k)) {
        return Err(unknown_key(&format!("{at}.{bad}"), "access link key", valid));
    }
    let groups = match a.get("groups") {
        Some(Json::Arr(g)) => g
            .iter()
            .enumerate()
            .map(|(j, x)| int(&format!("{at}.groups[{j}]"), x, 0, u32::MAX as i128).map(|n| n as u32))
            .collect::<R<Vec<u32>>>()?,
        _ => return Err(ParamError::new(&format!("{at}.groups"), "expected a list of group indices")),
    };
    let empty = Json::Obj(Vec::new());
    let spec = link_spec(&format!("{at}."), a, &empty)?;
    let link = spec.build().map_err(|e| link_error(&format!("{at}."), &e))?;
    Ok(AccessLinkConfig { groups, uplink: link.uplink, downlink: link.downlink })
}

/// A link model error (`errors: ...`, `burst_packets: ...`, a chain's problem) under the
/// parameter's key, `prefix` in front.
fn link_error(prefix: &str, e: &str) -> ParamError {
    let (k, m) = e.split_once(": ").unwrap_or(("link", e));
    let k = match k {
        "burst_packets" => "error_burst_packets",
        "errors" => "errors",
        _ => "link",
    };
    ParamError::new(&format!("{prefix}{k}"), m)
}

/// A simulator error under the key of the parameter that sets the field.
fn param_error(p: &Json, e: ConfigError) -> ParamError {
    let problem = e.problem().to_string();
    let field = e.key();
    let grouped = matches!(p.get("groups"), Some(Json::Arr(g)) if !g.is_empty());
    let key = if let Some(i) = field.strip_prefix("groups[").and_then(|r| r.strip_suffix("].cc")) {
        if grouped {
            format!("groups[{i}].algorithm")
        } else {
            "algorithm".into()
        }
    } else if field == "groups" {
        if grouped { "groups" } else { "clients" }.into()
    } else if let Some(tail) = field.strip_prefix("workload.messages.") {
        format!("messages.{tail}")
    } else if let Some(tail) = field.strip_prefix("workload.") {
        match tail {
            "kind" => "workload".into(),
            "failed_exchanges" => "failed_exchange_policy".into(),
            t => t.into(),
        }
    } else if field.starts_with("link.uplink") || field.starts_with("link.downlink") {
        "link".into()
    } else if let Some(tail) = field.strip_prefix("metrics.") {
        tail.into()
    } else if let Some(tail) = field.strip_prefix("topology.mesh.") {
        if tail == "topology" {
            "topology".into()
        } else {
            format!("mesh.{tail}")
        }
    } else if field == "topology.mesh" {
        "topology".into()
    } else if let Some(tail) = field.strip_prefix("topology.") {
        tail.into()
    } else {
        field
    };
    ParamError::new(&key, problem)
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
        "mesh": serde_json::to_value(coapcc_mesh::MediumConfig::default()).expect("serialises"),
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
