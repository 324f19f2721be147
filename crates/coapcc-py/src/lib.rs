//! `coapcc._native`: the Rust core as seen from Python.
//!
//! Deliberately thin: every function takes and returns plain Python values (strings, ints,
//! JSON text) so the Python side owns typing and tables, and the Rust side owns the work.
//! Long calls release the GIL.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Run the Rust command line with `argv` (program name first); returns the exit code.
#[pyfunction]
fn cli(py: Python<'_>, argv: Vec<String>) -> i32 {
    py.detach(|| coapcc_cli::main(argv))
}

/// The package version.
#[pyfunction]
fn version() -> &'static str {
    coapcc_cli::VERSION
}

/// The algorithm registry as JSON (as `coapcc algorithms --json`).
#[pyfunction]
fn algorithms_json() -> String {
    coapcc_cli::registry_json().to_string()
}

/// Parse an algorithm spec `NAME[:key=value,...]` and return its canonical, fully resolved
/// form; raises ValueError with a message that lists the valid choices.
#[pyfunction]
fn resolve_algorithm(spec: &str) -> PyResult<String> {
    coapcc_cc::AlgorithmConfig::parse(spec).map(|c| c.to_string()).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Run one simulation. `config_json` is a `SimConfig` as JSON (unknown keys are errors);
/// returns the report as JSON (the same object `coapcc simulate --json` prints). With
/// `trace_path`, also writes the per-exchange trace there as JSON lines. Raises ValueError with
/// a one-line message for a configuration that cannot run. Releases the GIL.
#[pyfunction]
#[pyo3(signature = (config_json, trace_path=None))]
fn simulate_json(py: Python<'_>, config_json: &str, trace_path: Option<std::path::PathBuf>) -> PyResult<String> {
    let cfg: coapcc_sim::SimConfig = serde_json::from_str(config_json)
        .map_err(|e| PyValueError::new_err(format!("invalid simulation config: {e}")))?;
    py.detach(|| -> Result<String, String> {
        let report = match trace_path {
            None => coapcc_sim::simulate(&cfg).map_err(|e| e.to_string())?,
            Some(path) => {
                let f = std::fs::File::create(&path)
                    .map_err(|e| format!("cannot create trace file {}: {e}", path.display()))?;
                let mut sink = coapcc_sim::JsonLinesTrace::new(std::io::BufWriter::new(f));
                let r = coapcc_sim::simulate_with_trace(&cfg, &mut sink).map_err(|e| e.to_string())?;
                sink.finish().map_err(|e| format!("cannot write trace file {}: {e}", path.display()))?;
                r
            }
        };
        serde_json::to_string(&report).map_err(|e| e.to_string())
    })
    .map_err(PyValueError::new_err)
}

/// The default simulation configuration as JSON (every field, with its default).
#[pyfunction]
fn default_sim_config_json() -> String {
    serde_json::to_string(&coapcc_sim::SimConfig::default()).expect("config serialises")
}

/// The loss model (the simulator's `LossModel` as JSON) of a link-error profile
/// `none|low|medium|high|bernoulli:P|ge:P,R,K,H|ge-time:T_L,T_B,K,H`, with the clock
/// (`time` or `packet`) and mean burst length (packets) of the medium/high profiles.
/// Raises ValueError with the simulator's one-line message.
#[pyfunction]
#[pyo3(signature = (errors, error_clock="time", burst_packets=5.0))]
fn loss_model_json(errors: &str, error_clock: &str, burst_packets: f64) -> PyResult<String> {
    Ok(serde_json::to_string(&parse_loss(errors, error_clock, burst_packets)?).expect("loss model serialises"))
}

fn parse_loss(errors: &str, error_clock: &str, burst_packets: f64) -> PyResult<coapcc_sim::link::LossModel> {
    let clock: coapcc_sim::link::ErrorClock =
        serde_json::from_value(serde_json::Value::String(error_clock.trim().replace('-', "_")))
            .map_err(|_| PyValueError::new_err(format!("unknown error clock '{error_clock}'; valid: time, packet")))?;
    if !(burst_packets.is_finite() && burst_packets >= 1.0) {
        return Err(PyValueError::new_err(format!("burst length must be at least 1 packet, got {burst_packets}")));
    }
    coapcc_sim::link::LossModel::parse(errors, clock, burst_packets).map_err(PyValueError::new_err)
}

/// Parameters of [`testbed_link_json`]; every field is optional (the testbed's default).
#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
struct TestbedLink {
    buffer_bytes: Option<u64>,
    errors: Option<String>,
    error_clock: Option<String>,
    burst_packets: Option<f64>,
    uplink_rate_bps: Option<u64>,
    downlink_rate_bps: Option<u64>,
    uplink_delay_ms: Option<f64>,
    downlink_delay_ms: Option<f64>,
    rest_of_path_min_ms: Option<f64>,
    rest_of_path_max_ms: Option<f64>,
    per_packet_overhead_bytes: Option<u32>,
    buffer_counts_in_service: Option<bool>,
    mtu_bytes: Option<u32>,
}

/// The testbed's link (the simulator's `LinkConfig` as JSON: the default uplink and downlink
/// chains) with the parameters of `params_json` applied: `buffer_bytes`, `errors`,
/// `error_clock` and `burst_packets` (as in [`loss_model_json`]), `uplink_rate_bps`, `downlink_rate_bps`,
/// `uplink_delay_ms`, `downlink_delay_ms`, `rest_of_path_min_ms`, `rest_of_path_max_ms`,
/// `per_packet_overhead_bytes`, `buffer_counts_in_service`, `mtu_bytes`. The chains' shape
/// stays the simulator's: Python never builds one itself.
#[pyfunction]
fn testbed_link_json(params_json: &str) -> PyResult<String> {
    use coapcc_sim::link::StageConfig;
    let p: TestbedLink = serde_json::from_str(params_json)
        .map_err(|e| PyValueError::new_err(format!("invalid testbed link parameters: {e}")))?;
    let mut link = coapcc_sim::config::LinkConfig::default();
    if let Some(b) = p.buffer_bytes {
        link.set_buffer_bytes(b);
    }
    if let Some(e) = &p.errors {
        let model = parse_loss(e, p.error_clock.as_deref().unwrap_or("time"), p.burst_packets.unwrap_or(5.0))?;
        link.set_loss(&model);
    }
    if let Some(o) = p.per_packet_overhead_bytes {
        link.set_overhead_bytes(o);
    }
    if p.rest_of_path_min_ms.is_some() || p.rest_of_path_max_ms.is_some() {
        let (mut lo, mut hi) = (0.0, 0.0);
        for st in &link.uplink {
            if let StageConfig::Jitter(j) = st {
                (lo, hi) = (j.min_ms, j.max_ms);
            }
        }
        link.set_rest_of_path_ms(p.rest_of_path_min_ms.unwrap_or(lo), p.rest_of_path_max_ms.unwrap_or(hi));
    }
    for (chain, rate, delay) in [
        (&mut link.uplink, p.uplink_rate_bps, p.uplink_delay_ms),
        (&mut link.downlink, p.downlink_rate_bps, p.downlink_delay_ms),
    ] {
        for st in chain.iter_mut() {
            match st {
                StageConfig::Rate(r) => {
                    if let Some(bps) = rate {
                        r.bits_per_s = bps;
                    }
                    if let Some(c) = p.buffer_counts_in_service {
                        r.buffer_counts_in_service = c;
                    }
                }
                StageConfig::Delay(d) => {
                    if let Some(ms) = delay {
                        d.ms = ms;
                    }
                }
                _ => {}
            }
        }
    }
    if let Some(m) = p.mtu_bytes {
        link.mtu_bytes = m;
    }
    Ok(serde_json::to_string(&link).expect("link serialises"))
}

/// Check a simulation configuration (JSON) as the simulator would before running it, and
/// return it with every group's algorithm fully resolved (JSON). Raises ValueError with the
/// simulator's one-line message (`field: problem`).
#[pyfunction]
fn resolve_sim_config_json(config_json: &str) -> PyResult<String> {
    let cfg: coapcc_sim::SimConfig = serde_json::from_str(config_json)
        .map_err(|e| PyValueError::new_err(format!("invalid simulation config: {e}")))?;
    let r = cfg.resolved().map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(serde_json::to_string(&r).expect("config serialises"))
}

/// Limits and choices of the simulator's configuration as JSON: `max_clients`, the
/// reproduction `presets`, the named error `profiles`, the testbed link's defaults (`link`,
/// in the parameter names of [`testbed_link_json`]) and the values of every enumerated field
/// (`choices`: `workload`, `failed_exchanges`, `duplicate_mode`, `unnecessary_def`,
/// `endpoint_model`, `error_clock`).
#[pyfunction]
fn sim_limits_json() -> String {
    use coapcc_sim::link::{ErrorClock, LossModel, StageConfig};
    let presets: Vec<&str> = coapcc_cc::Preset::ALL.iter().map(|(n, _)| *n).collect();
    let profiles: Vec<&str> = ["none", "low", "medium", "high"]
        .into_iter()
        .filter(|n| LossModel::profile(n, ErrorClock::Time, 5.0).is_some())
        .collect();
    let link = coapcc_sim::config::LinkConfig::default();
    let mut d = serde_json::Map::new();
    d.insert("mtu_bytes".into(), link.mtu_bytes.into());
    for (dir, chain) in [("uplink", &link.uplink), ("downlink", &link.downlink)] {
        for st in chain {
            match st {
                StageConfig::Rate(r) => {
                    d.insert(format!("{dir}_rate_bps"), r.bits_per_s.into());
                    d.insert("buffer_bytes".into(), r.buffer_bytes.into());
                    d.insert("buffer_counts_in_service".into(), r.buffer_counts_in_service.into());
                    d.insert("per_packet_overhead_bytes".into(), r.per_packet_overhead_bytes.into());
                }
                StageConfig::Delay(x) => {
                    d.insert(format!("{dir}_delay_ms"), x.ms.into());
                }
                StageConfig::Jitter(j) => {
                    d.insert("rest_of_path_min_ms".into(), j.min_ms.into());
                    d.insert("rest_of_path_max_ms".into(), j.max_ms.into());
                }
                _ => {}
            }
        }
    }
    use coapcc_sim::config::{DuplicateMode, EndpointModel, FailedPolicy, UnnecessaryDef, WorkloadKind};
    serde_json::json!({
        "max_clients": coapcc_sim::config::MAX_CLIENTS,
        "presets": presets,
        "profiles": profiles,
        "link": d,
        "choices": {
            "workload": variants::<WorkloadKind>(),
            "failed_exchanges": variants::<FailedPolicy>(),
            "duplicate_mode": variants::<DuplicateMode>(),
            "unnecessary_def": variants::<UnnecessaryDef>(),
            "endpoint_model": variants::<EndpointModel>(),
            "error_clock": variants::<ErrorClock>(),
        },
    })
    .to_string()
}

/// The names of a unit-variant enum as serde spells them, from the enum itself (the message
/// of a failed deserialisation lists them: "unknown variant `x`, expected one of `a`, `b`").
fn variants<T: serde::de::DeserializeOwned>() -> Vec<String> {
    let err = match serde_json::from_value::<T>(serde_json::Value::String("\u{1}".into())) {
        Ok(_) => return Vec::new(),
        Err(e) => e.to_string(),
    };
    let list = err.split("expected one of").nth(1).or_else(|| err.split("expected").nth(1)).unwrap_or("");
    list.split('`').skip(1).step_by(2).map(str::to_string).collect()
}

/// The extension module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(cli, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(algorithms_json, m)?)?;
    m.add_function(wrap_pyfunction!(resolve_algorithm, m)?)?;
    m.add_function(wrap_pyfunction!(simulate_json, m)?)?;
    m.add_function(wrap_pyfunction!(default_sim_config_json, m)?)?;
    m.add_function(wrap_pyfunction!(loss_model_json, m)?)?;
    m.add_function(wrap_pyfunction!(testbed_link_json, m)?)?;
    m.add_function(wrap_pyfunction!(resolve_sim_config_json, m)?)?;
    m.add_function(wrap_pyfunction!(sim_limits_json, m)?)?;
    Ok(())
}
