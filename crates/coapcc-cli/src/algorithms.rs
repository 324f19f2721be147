//! `coapcc algorithms`: the registry, its parameters and defaults.

use std::io::Write;

use coapcc_cc::{AlgorithmConfig, ParamInfo, Preset, ALGORITHMS, COMMON_INFO, SHARED_PARAMS};
use serde_json::{json, Value};

/// Arguments of `coapcc algorithms`.
#[derive(clap::Args, Debug)]
pub struct AlgorithmsArgs {
    /// Only this algorithm (registry name).
    pub name: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// One parameter; `shared` is the shared transmission parameter it implements for `cfg`.
fn param_json(p: &ParamInfo, cfg: &AlgorithmConfig) -> Value {
    let shared = SHARED_PARAMS.iter().map(|s| s.name).find(|s| cfg.shared_param(s).is_ok_and(|q| q.key == p.key));
    json!({"key": p.key, "aliases": p.aliases, "default": p.default, "values": p.values, "doc": p.doc, "shared": shared})
}

/// Shared transmission parameter -> the algorithm's own key for it.
fn shared_keys(cfg: &AlgorithmConfig) -> Vec<(&'static str, Option<&'static str>)> {
    SHARED_PARAMS.iter().map(|s| (s.name, cfg.shared_param(s.name).ok().map(|p| p.key))).collect()
}

/// Everything `coapcc algorithms --json` prints: one object per algorithm.
pub fn registry_json() -> Value {
    let presets: Vec<&str> = Preset::ALL.iter().map(|(n, _)| *n).collect();
    Value::Array(
        ALGORITHMS
            .iter()
            .map(|a| {
                let cfg = a.default_config();
                let applicable: Vec<&str> =
                    Preset::ALL.iter().filter(|(_, p)| cfg.clone().apply_preset(*p).is_ok()).map(|(n, _)| *n).collect();
                json!({
                    "name": a.name,
                    "summary": a.summary,
                    "source": a.source,
                    "default_spec": cfg.to_string(),
                    "presets": applicable,
                    "params": cfg.params().iter().map(|p| param_json(p, &cfg)).collect::<Vec<_>>(),
                    "common_params": COMMON_INFO.iter().map(|p| param_json(p, &cfg)).collect::<Vec<_>>(),
                    "all_presets": presets,
                    "shared": shared_keys(&cfg).into_iter().map(|(s, k)| (s.to_string(), json!(k))).collect::<serde_json::Map<String, Value>>(),
                })
            })
            .collect(),
    )
}

/// Run `coapcc algorithms`.
pub fn run(args: &AlgorithmsArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    if let Some(cfg) = args.name.as_deref().and_then(crate::tcp_algorithms::lookup) {
        if args.json {
            writeln!(out, "{}", serde_json::to_string_pretty(&[crate::tcp_algorithms::tcp_json(&cfg)])?)?;
        } else {
            crate::tcp_algorithms::print(&cfg, out)?;
        }
        return Ok(());
    }
    let selected: Vec<_> = match &args.name {
        Some(n) => match coapcc_cc::lookup(n) {
            Some(a) => vec![a],
            None => {
                let names: Vec<_> = ALGORITHMS.iter().map(|a| a.name).chain(["newreno", "bbr"]).collect();
                let hint = coapcc_cc::names::hint(n, names.iter().copied());
                anyhow::bail!("unknown algorithm '{n}'{hint}; valid algorithms: {}", names.join(", "))
            }
        },
        None => ALGORITHMS.iter().collect(),
    };
    if args.json {
        let all = registry_json();
        let items: Vec<Value> =
            all.as_array().unwrap().iter().filter(|v| selected.iter().any(|a| v["name"] == a.name)).cloned().collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&items)?)?;
        return Ok(());
    }
    writeln!(out, "Algorithms (use as NAME[:key=value,...], e.g. cocoa:vbf=per-exchange,aging=on)\n")?;
    for a in &selected {
        let cfg = a.default_config();
        writeln!(out, "{:<18} {}", a.name, a.summary)?;
        writeln!(out, "{:<18} source: {}", "", a.source)?;
        let presets: Vec<&str> =
            Preset::ALL.iter().filter(|(_, p)| cfg.clone().apply_preset(*p).is_ok()).map(|(n, _)| *n).collect();
        if !presets.is_empty() {
            writeln!(out, "{:<18} presets: {}", "", presets.join(", "))?;
        }
        let renamed: Vec<String> = shared_keys(&cfg)
            .into_iter()
            .filter_map(|(s, k)| match k {
                Some(k) if k != s => Some(format!("{s} = {k}")),
                Some(_) => None,
                None => Some(format!("{s}: none")),
            })
            .collect();
        if !renamed.is_empty() {
            writeln!(out, "{:<18} shared: {}", "", renamed.join(", "))?;
        }
        for p in cfg.params() {
            writeln!(out, "{:<18}   {:<22} = {:<14} [{}] {}", "", p.key, p.default, p.values, p.doc)?;
        }
        writeln!(out)?;
    }
    writeln!(out, "Parameters common to every algorithm:")?;
    for p in COMMON_INFO {
        writeln!(out, "  {:<22} = {:<14} [{}] {}", p.key, p.default, p.values, p.doc)?;
    }
    writeln!(
        out,
        "\nShared transmission parameters (one name for every algorithm; \"shared:\" above gives an algorithm's own key):"
    )?;
    for s in SHARED_PARAMS {
        writeln!(out, "  {:<22} {}", s.name, s.doc)?;
    }
    writeln!(
        out,
        "\nPresets (key preset=NAME, applied before the other keys): {}",
        Preset::ALL.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
    )?;
    writeln!(
        out,
        "A name alone means the specification's defaults (RFC 7252 transmission parameters); a preset sets its \
         testbed's shared parameters for every algorithm, plus what its publication used for the algorithms it ran."
    )?;
    if args.name.is_none() {
        crate::tcp_algorithms::print_all(out)?;
    }
    Ok(())
}
