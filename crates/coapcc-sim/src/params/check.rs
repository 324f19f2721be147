//! The one check of a run's parameters ([`normalize`]): every value typed, checked and
//! completed with its default, in the order of the parameters, the first problem keyed.

use coapcc_link::{ErrorClock, LossModel};

use super::*;
use crate::config::WorkloadKind;

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
        let default = d.get(f.name).cloned().unwrap_or(Json::Null);
        // An optional field (added after the first datasets) is left out while it is at its
        // default, so that every earlier configuration keeps its description.
        if f.optional && raw.as_ref().map_or(true, |x| x.value() == default.value()) {
            continue;
        }
        let x = raw.unwrap_or(default);
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
