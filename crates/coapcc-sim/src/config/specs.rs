//! Algorithm specifications: composing a group's spec with the run-wide preset and shared
//! transmission parameters ([`compose_spec`]), a testbed profile's parameters
//! ([`profile_params`]), labels ([`split_label`]).

use coapcc_cc::AlgorithmConfig;

/// The spec a group runs with run-wide settings applied, as every front composes it:
/// `[LABEL=]NAME:preset=P,<shared>,<the spec's own items>`. A preset written in `spec` wins
/// over `preset`; the spec's own items win over the `shared` transmission parameters (they
/// come last). A shared parameter is written with the algorithm's own key for it
/// ([`coapcc_cc::SHARED_PARAMS`]: CoCoA's `cap` for `backoff_cap`), as given for a name outside
/// the registry (validation reports an unknown one). The preset applies to every algorithm of
/// every transport: a TCP congestion control (`newreno`, `bbr`) takes it too (the TCP
/// configuration refuses a preset that defines nothing for TCP), while a shared CoAP
/// transmission parameter is refused for it with a message. The algorithm is checked when the
/// spec is resolved; an empty `key=value` item is an error here.
pub fn compose_spec(spec: &str, preset: Option<&str>, shared: &[(&str, String)]) -> Result<String, String> {
    let (label, spec) = split_label(spec);
    let (name, params) = spec.split_once(':').unwrap_or((spec, ""));
    if !params.trim().is_empty() && params.split(',').any(|p| p.trim().is_empty()) {
        return Err(format!("'{spec}' has an empty key=value item"));
    }
    let own: Vec<&str> = params.split(',').map(str::trim).filter(|p| !p.is_empty()).collect();
    let is_preset = |p: &str| p.split_once('=').is_some_and(|(k, _)| k.trim().eq_ignore_ascii_case("preset"));
    let mut parts: Vec<String> = own.iter().filter(|p| is_preset(p)).map(|p| p.to_string()).collect();
    if parts.is_empty() {
        parts.extend(preset.map(|p| format!("preset={p}")));
    }
    let base = AlgorithmConfig::parse(name.trim()).ok();
    for (k, v) in shared {
        let key = match &base {
            Some(b) => b.shared_param(k).map_err(|e| e.to_string())?.key,
            None if coapcc_tcp::TcpCcConfig::parse(name.trim()).is_ok() => {
                return Err(format!(
                    "{k} is a CoAP-over-UDP transmission parameter; {} is a TCP congestion control, which has none",
                    name.trim()
                ));
            }
            None => k,
        };
        parts.push(format!("{key}={v}"));
    }
    parts.extend(own.iter().filter(|p| !is_preset(p)).map(|p| p.to_string()));
    let label = label.map_or(String::new(), |l| format!("{l}="));
    let params = if parts.is_empty() { String::new() } else { format!(":{}", parts.join(",")) };
    Ok(format!("{label}{}{params}", name.trim()))
}

/// The shared transmission parameters of testbed profile `name` (a reproduction preset):
/// its ACK_TIMEOUT, ACK_RANDOM_FACTOR and MAX_RETRANSMIT, as Python's `profile_params`.
pub fn profile_params(name: &str) -> Result<Vec<(&'static str, String)>, String> {
    let valid = || coapcc_cc::Preset::ALL.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ");
    if coapcc_cc::Preset::parse(name).is_none() {
        return Err(format!("unknown profile '{name}'; valid: {}", valid()));
    }
    let cfg = AlgorithmConfig::parse(&format!("default:preset={}", name.trim())).map_err(|e| e.to_string())?;
    Ok(["ack_timeout", "ack_random_factor", "max_retransmit"]
        .into_iter()
        .filter_map(|k| cfg.shared_value(k).map(|v| (k, v.to_string())))
        .collect())
}

/// `LABEL=SPEC` -> `(Some(LABEL), SPEC)`; a spec without a label -> `(None, spec)`. A label is
/// the part before an `=` that comes before any `:` (as in Python's `split_label`).
pub fn split_label(spec: &str) -> (Option<&str>, &str) {
    let head = spec.split(':').next().unwrap_or(spec);
    match head.find('=') {
        Some(i) => (Some(spec[..i].trim()), spec[i + 1..].trim()),
        None => (None, spec),
    }
}
