//! The simulator's configuration of a run's (normalised) parameters ([`to_config`]): the
//! groups' composed and resolved algorithm specs, the link from the link model, the mesh, the
//! extra access links, the message workload; the simulator's own errors keyed back to the
//! parameters.

use coapcc_link::LinkSpec;

use super::*;
use crate::config::{
    compose_spec, profile_params, split_label, AccessLinkConfig, GroupConfig, SimConfig, WorkloadKind,
};

pub(super) fn text<'a>(p: &'a Json, k: &str) -> &'a str {
    match p.get(k) {
        Some(Json::Str(s)) => s,
        _ => "",
    }
}

pub(super) fn number(p: &Json, k: &str) -> f64 {
    match p.get(k) {
        Some(Json::Num(n)) => n.as_f64().unwrap_or(0.0),
        _ => 0.0,
    }
}

pub(super) fn uint(p: &Json, k: &str) -> u64 {
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
/// `preset` is the run's reproduction preset, whose fitted error profiles `errors` names
/// (`helsinki2018`: `medium`, `high`).
fn link_spec(key: &str, p: &Json, link: &Json, preset: Option<&str>) -> R<LinkSpec> {
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
        preset: preset.map(|s| s.trim().to_string()),
    })
}

/// The run's reproduction preset (`preset`), if set.
fn run_preset(p: &Json) -> Option<&str> {
    match p.get("preset") {
        Some(Json::Str(s)) if !s.trim().is_empty() => Some(s.as_str()),
        _ => None,
    }
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
    let spec = link_spec("", p, &link, run_preset(p))?;
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
            coapcc_mesh::MeshNetConfig::preset(preset, t).map_err(|e| ParamError::new("mesh_preset", e.problem))?;
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
            cfg.topology.access_links.push(access_link(i, a, run_preset(p))?);
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
fn access_link(i: usize, a: &Json, preset: Option<&str>) -> R<AccessLinkConfig> {
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
    let spec = link_spec(&format!("{at}."), a, &empty, preset)?;
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
