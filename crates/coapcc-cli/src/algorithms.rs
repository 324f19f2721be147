//! `coapcc algorithms`: the registry, its parameters and defaults.

use std::io::Write;

use coapcc_cc::{ParamInfo, Preset, ALGORITHMS, COMMON_INFO};
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

fn param_json(p: &ParamInfo) -> Value {
    json!({"key": p.key, "aliases": p.aliases, "default": p.default, "values": p.values, "doc": p.doc})
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
                    "params": cfg.params().iter().map(param_json).collect::<Vec<_>>(),
                    "common_params": COMMON_INFO.iter().map(param_json).collect::<Vec<_>>(),
                    "all_presets": presets,
                })
            })
            .collect(),
    )
}

/// Run `coapcc algorithms`.
pub fn run(args: &AlgorithmsArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let selected: Vec<_> = match &args.name {
        Some(n) => match coapcc_cc::lookup(n) {
            Some(a) => vec![a],
            None => {
                let names: Vec<_> = ALGORITHMS.iter().map(|a| a.name).collect();
                anyhow::bail!("unknown algorithm '{n}'; valid algorithms: {}", names.join(", "))
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
        "\nPresets (key preset=NAME, applied before the other keys): {}",
        Preset::ALL.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
    )?;
    Ok(())
}
