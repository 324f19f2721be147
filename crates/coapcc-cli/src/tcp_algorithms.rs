//! `coapcc algorithms newreno|bbr`: the TCP congestion controls of CoAP over TCP
//! (`coapcc simulate --transport tcp`), every parameter with Linux's default beside the value
//! of each reproduction preset that defines TCP settings (`helsinki2018`).

use std::io::Write;

use coapcc_tcp::config::{BBR_INFO, NEWRENO_INFO, TCP_INFO, TCP_PRESETS};
use coapcc_tcp::{Preset, TcpCcConfig};
use serde_json::{json, Value};

/// The TCP congestion controls: (name, summary, source).
const TCP_ALGORITHMS: &[(&str, &str, &str)] = &[
    (
        "newreno",
        "TCP New Reno: slow start, congestion avoidance, fast retransmit and NewReno recovery, for CoAP over TCP (--transport tcp)",
        "RFC 5681, RFC 6582, RFC 6298; Linux tcp_input.c, tcp_timer.c, tcp_cong.c",
    ),
    (
        "bbr",
        "TCP BBR v1: bottleneck bandwidth and RTprop model, pacing, ProbeBW gain cycle, ProbeRTT, for CoAP over TCP (--transport tcp)",
        "Linux tcp_bbr.c (kernels 4.9-5.x); Cardwell et al., ACM Queue 2016",
    ),
];

/// The TCP configuration a name means, or `None` for a name that is not a TCP controller.
pub fn lookup(name: &str) -> Option<TcpCcConfig> {
    TCP_ALGORITHMS.iter().any(|(n, ..)| n.eq_ignore_ascii_case(name.trim())).then(|| TcpCcConfig::parse(name).ok())?
}

/// Every `key=value` of a canonical spec.
fn values(cfg: &TcpCcConfig) -> Vec<(String, String)> {
    let text = cfg.to_string();
    let (_, rest) = text.split_once(':').unwrap_or((&text, ""));
    rest.split(',').filter_map(|kv| kv.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// The reproduction presets that define TCP settings, with the configuration each gives.
fn presets(cfg: &TcpCcConfig) -> Vec<(&'static str, TcpCcConfig)> {
    TCP_PRESETS.iter().filter_map(|n| Preset::parse(n).and_then(|p| cfg.with_preset(p).ok()).map(|c| (*n, c))).collect()
}

/// One TCP controller as JSON: its Linux-default spec, each preset's spec, and every
/// parameter with its default and preset values.
pub fn tcp_json(cfg: &TcpCcConfig) -> Value {
    let (name, summary, source) = TCP_ALGORITHMS.iter().find(|(n, ..)| *n == cfg.name()).copied().unwrap_or_default();
    let linux = values(cfg);
    let pre = presets(cfg);
    let pre_values: Vec<(&str, Vec<(String, String)>)> = pre.iter().map(|(n, c)| (*n, values(c))).collect();
    let own = match cfg.name() {
        "bbr" => BBR_INFO,
        _ => NEWRENO_INFO,
    };
    let params: Vec<Value> = own
        .iter()
        .chain(TCP_INFO)
        .map(|p| {
            let get = |vals: &[(String, String)]| vals.iter().find(|(k, _)| k == p.key).map(|(_, v)| v.clone());
            let by_preset: serde_json::Map<String, Value> =
                pre_values.iter().map(|(n, v)| (n.to_string(), json!(get(v)))).collect();
            json!({"key": p.key, "aliases": p.aliases, "default": get(&linux), "presets": by_preset,
                   "values": p.values, "doc": p.doc, "shared": TCP_INFO.iter().any(|q| q.key == p.key)})
        })
        .collect();
    json!({
        "name": name,
        "transport": "tcp",
        "summary": summary,
        "source": source,
        "default_spec": cfg.to_string(),
        "presets": pre.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        "preset_specs": pre.iter().map(|(n, c)| (n.to_string(), json!(c.to_string()))).collect::<serde_json::Map<String, Value>>(),
        "params": params,
    })
}

/// Print one TCP controller: its parameters with Linux's defaults and each preset's values.
pub fn print(cfg: &TcpCcConfig, out: &mut dyn Write) -> anyhow::Result<()> {
    let j = tcp_json(cfg);
    let presets: Vec<String> =
        j["presets"].as_array().into_iter().flatten().filter_map(|v| v.as_str().map(String::from)).collect();
    writeln!(out, "{:<18} {}", cfg.name(), j["summary"].as_str().unwrap_or(""))?;
    writeln!(out, "{:<18} source: {}", "", j["source"].as_str().unwrap_or(""))?;
    writeln!(
        out,
        "{:<18} a name alone runs Linux's defaults (canonical spec: {}:preset=linux,...); presets: {}",
        "",
        cfg.name(),
        presets.join(", ")
    )?;
    let mut head = format!("{:<18}   {:<18}   {:<10}", "", "parameter", "linux");
    for p in &presets {
        head.push_str(&format!(" {p:<13}"));
    }
    writeln!(out, "{head} values and meaning")?;
    for p in j["params"].as_array().into_iter().flatten() {
        let d = p["default"].as_str().unwrap_or("-");
        let mut line = format!("{:<18}   {:<18} = {:<10}", "", p["key"].as_str().unwrap_or(""), d);
        for n in &presets {
            let v = p["presets"][n.as_str()].as_str().unwrap_or("-");
            let mark = if v == d { " " } else { "*" };
            line.push_str(&format!(" {v:<12}{mark}"));
        }
        writeln!(out, "{line} [{}] {}", p["values"].as_str().unwrap_or(""), p["doc"].as_str().unwrap_or(""))?;
    }
    writeln!(out, "{:<18}   (* the preset changes Linux's value)", "")?;
    Ok(())
}

/// The TCP section of `coapcc algorithms` without a name.
pub fn print_all(out: &mut dyn Write) -> anyhow::Result<()> {
    writeln!(out, "\nTCP congestion controls (coapcc simulate --transport tcp --cc NAME[:key=value,...]):\n")?;
    for (name, ..) in TCP_ALGORITHMS {
        let cfg = TcpCcConfig::parse(name).expect("a TCP controller");
        print(&cfg, out)?;
        writeln!(out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newreno_shows_the_helsinki2018_values_beside_linux() {
        let cfg = lookup("newreno").unwrap();
        let j = tcp_json(&cfg);
        let iw = j["params"].as_array().unwrap().iter().find(|p| p["key"] == "iw").unwrap();
        assert_eq!(iw["default"], "10");
        assert_eq!(iw["presets"]["helsinki2018"], "4");
        let rto = j["params"].as_array().unwrap().iter().find(|p| p["key"] == "init_rto").unwrap();
        assert_eq!((rto["default"].as_str(), rto["presets"]["helsinki2018"].as_str()), (Some("1"), Some("2")));
        assert!(j["default_spec"].as_str().unwrap().starts_with("newreno:preset=linux,"));
        assert!(j["preset_specs"]["helsinki2018"].as_str().unwrap().starts_with("newreno:preset=helsinki2018,"));
        let mut text = Vec::new();
        print(&cfg, &mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        let line = text.lines().find(|l| l.trim_start().starts_with("iw ")).unwrap();
        assert!(line.contains("= 10") && line.contains("4           *"), "{line}");
        assert!(lookup("cocoa").is_none() && lookup("bbr").is_some());
    }
}
