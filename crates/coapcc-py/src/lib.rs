//! `coapcc._native`: the Rust core as seen from Python.
//!
//! Deliberately thin: every function takes and returns plain Python values (strings, ints,
//! JSON text) so the Python side owns typing and tables, and the Rust side owns the work.
//! Long calls release the GIL.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

mod canonical;
mod custom;

pyo3::create_exception!(
    _native,
    ConfigError,
    PyValueError,
    "A configuration that cannot run: `key` is the dotted key at fault, `problem` what is wrong \
     (the message is `key: problem`)."
);

/// A [`ConfigError`] (Python) for `key` and `problem`.
pub(crate) fn keyed_error(key: &str, problem: &str) -> PyErr {
    Python::attach(|py| {
        let err = ConfigError::new_err(format!("{key}: {problem}"));
        let v = err.value(py);
        let _ = v.setattr("key", key);
        let _ = v.setattr("problem", problem);
        err
    })
}

/// The simulator's configuration error, keyed.
pub(crate) fn sim_error(e: &coapcc_sim::ConfigError) -> PyErr {
    keyed_error(&e.key(), e.problem())
}

/// A parameter error, keyed, with its valid values (`choices`, or None).
fn param_error(e: coapcc_sim::params::ParamError) -> PyErr {
    let err = keyed_error(&e.key, &e.problem);
    Python::attach(|py| {
        let _ = err.value(py).setattr("choices", e.choices);
    });
    err
}

/// Parameters as JSON text (keys in order).
fn params(json: &str) -> PyResult<coapcc_sim::params::Json> {
    coapcc_sim::params::Json::parse(json).map_err(|e| PyValueError::new_err(format!("invalid parameters: {e}")))
}

/// The schema of a run's parameters (`coapcc.SimConfig`'s fields): every parameter with its
/// kind, default, range, valid values and meaning, its sections', the shared transmission
/// parameters, the workloads, the mesh's and the message workload's defaults (JSON).
#[pyfunction]
fn sim_params_schema_json() -> String {
    coapcc_sim::params::schema().to_string()
}

/// Check a run's parameters (JSON; dotted keys and shared parameters at the top level
/// allowed) and return them typed and completed, in order (JSON); raises `ConfigError` with
/// the key at fault and the valid values.
#[pyfunction]
fn sim_params_normalize(json: &str) -> PyResult<String> {
    coapcc_sim::params::normalize(&params(json)?).map(|p| p.text()).map_err(param_error)
}

/// Normalised parameters (JSON) -> each group's spec as written and its clients (JSON list).
#[pyfunction]
fn sim_params_group_counts(json: &str) -> PyResult<String> {
    Ok(serde_json::to_string(&coapcc_sim::params::group_counts(&params(json)?)).expect("serialises"))
}

/// Normalised parameters (JSON) -> the shared parameters every group gets (JSON object of
/// spec texts).
#[pyfunction]
fn sim_params_shared(json: &str) -> PyResult<String> {
    let v = coapcc_sim::params::shared_values(&params(json)?).map_err(param_error)?;
    use coapcc_sim::params::Json;
    Ok(Json::Obj(v.into_iter().map(|(k, s)| (k, Json::Str(s))).collect()).text())
}

/// Normalised parameters (JSON) -> each group's spec as the simulator receives it and its
/// clients (JSON list).
#[pyfunction]
fn sim_params_algorithm_specs(json: &str) -> PyResult<String> {
    let v = coapcc_sim::params::algorithm_specs(&params(json)?).map_err(param_error)?;
    Ok(serde_json::to_string(&v).expect("serialises"))
}

/// Normalised parameters (JSON) -> every group's algorithm fully resolved (JSON list).
#[pyfunction]
fn sim_params_resolved_specs(json: &str) -> PyResult<String> {
    let v = coapcc_sim::params::resolved_specs(&params(json)?).map_err(param_error)?;
    Ok(serde_json::to_string(&v).expect("serialises"))
}

/// Normalised parameters (JSON) -> the simulator's configuration (JSON, as `simulate_json`
/// takes it); with `check`, checked as the simulator checks it before a run.
#[pyfunction]
fn sim_params_config_json(json: &str, check: bool) -> PyResult<String> {
    let p = params(json)?;
    let cfg = if check { coapcc_sim::params::to_config(&p) } else { coapcc_sim::params::to_config_unchecked(&p) };
    Ok(serde_json::to_string(&cfg.map_err(param_error)?).expect("serialises"))
}

/// A spec with a preset and shared parameters (JSON object) applied.
#[pyfunction]
#[pyo3(signature = (spec, preset, transmission_json))]
fn compose_spec(spec: &str, preset: Option<&str>, transmission_json: &str) -> PyResult<String> {
    coapcc_sim::params::compose(spec, preset, &params(transmission_json)?).map_err(param_error)
}

/// `LABEL=SPEC` -> `(LABEL, SPEC)`; a spec without a label -> `(None, spec)`.
#[pyfunction]
fn split_label(spec: &str) -> (Option<String>, String) {
    let (l, s) = coapcc_sim::config::split_label(spec);
    (l.map(String::from), s.to_string())
}

/// Run the Rust command line with `argv` (program name first); returns the exit code.
#[pyfunction]
fn cli(py: Python<'_>, argv: Vec<String>) -> i32 {
    py.detach(|| coapcc_cli::main(argv))
}

/// The Rust command line's subcommands as a JSON list of `[name, help]` pairs.
#[pyfunction]
fn rust_commands_json() -> String {
    serde_json::to_string(&coapcc_cli::subcommands()).expect("strings serialise")
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
/// `trace_path`, also writes the per-exchange trace there as JSON lines (with `queue`, also
/// every change of each link direction's bottleneck queue, records of kind `queue`). Raises
/// ValueError with a one-line message for a configuration that cannot run. Releases the GIL.
#[pyfunction]
#[pyo3(signature = (config_json, trace_path=None, queue=false))]
fn simulate_json(
    py: Python<'_>,
    config_json: &str,
    trace_path: Option<std::path::PathBuf>,
    queue: bool,
) -> PyResult<String> {
    let cfg: coapcc_sim::SimConfig = serde_json::from_str(config_json)
        .map_err(|e| PyValueError::new_err(format!("invalid simulation config: {e}")))?;
    py.detach(|| -> Result<String, String> {
        let report = match trace_path {
            None => coapcc_sim::simulate(&cfg).map_err(|e| e.to_string())?,
            Some(path) => {
                let f = std::fs::File::create(&path)
                    .map_err(|e| format!("cannot create trace file {}: {e}", path.display()))?;
                let mut sink = coapcc_sim::JsonLinesTrace::new(std::io::BufWriter::new(f)).with_queue(queue);
                let r = coapcc_sim::simulate_with_trace(&cfg, &mut sink).map_err(|e| e.to_string())?;
                sink.finish().map_err(|e| format!("cannot write trace file {}: {e}", path.display()))?;
                r
            }
        };
        serde_json::to_string(&report).map_err(|e| e.to_string())
    })
    .map_err(PyValueError::new_err)
}

/// Run one simulation and return its report in columnar form, for callers that make tables
/// (sweeps): a dict with the report's scalars (`useful_fraction`, `sim_time_s`, `wall_s`,
/// `events`, `truncated`), `retransmissions_per_exchange` (a list), `links` (`downlink` and
/// `uplink`: dicts of counters), `flows` (a dict of per-flow columns, plain lists named as the
/// fields of a flow in `simulate_json`'s report, in client order; `None` where the JSON has
/// `null`) and `config_json`, the resolved configuration as canonical JSON text (exactly
/// Python's `json.dumps(config, sort_keys=True, separators=(",", ":"))` of the report's
/// `config`). The per-group metrics are not included (use [`simulate_json`]). Non-finite
/// floats are `None`, as in the JSON report. Raises ValueError as `simulate_json` does.
/// Releases the GIL while simulating.
///
/// With `packed=True`, numeric flow columns are `bytes` instead of lists: the values
/// little-endian, of the type `flow_types[name]` names (`"u4"`, `"u8"` or `"f8"`; a float
/// column has NaN where the list has `None`); `flow_types` lists the packed columns. An
/// integer column with a missing value stays a list. For callers that store columns as they
/// are (numpy: `np.frombuffer(b, "<" + flow_types[name])`).
#[pyfunction]
#[pyo3(signature = (config_json, packed=false))]
fn simulate_columns<'py>(
    py: Python<'py>,
    config_json: &str,
    packed: bool,
) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    use coapcc_sim::report::{FlowColumn, Scalar};
    use pyo3::types::PyDict;
    let cfg: coapcc_sim::SimConfig = serde_json::from_str(config_json)
        .map_err(|e| PyValueError::new_err(format!("invalid simulation config: {e}")))?;
    let (report, config) = py
        .detach(|| -> Result<_, String> {
            let report = coapcc_sim::simulate(&cfg).map_err(|e| e.to_string())?;
            let value = serde_json::to_value(&report.config).map_err(|e| e.to_string())?;
            let mut config = String::with_capacity(4096);
            canonical::write(&value, &mut config);
            Ok((report, config))
        })
        .map_err(PyValueError::new_err)?;
    let fin = |x: f64| x.is_finite().then_some(x);
    let opt = |v: Vec<Option<f64>>| v.into_iter().map(|x| x.and_then(fin)).collect::<Vec<_>>();
    let d = PyDict::new(py);
    d.set_item("config_json", config)?;
    let flows = PyDict::new(py);
    let types = PyDict::new(py);
    for (name, col) in report.flow_columns() {
        if packed {
            let bytes: Option<(&str, Vec<u8>)> = match &col {
                FlowColumn::U32(v) => Some(("u4", v.iter().flat_map(|x| x.to_le_bytes()).collect())),
                FlowColumn::U64(v) => Some(("u8", v.iter().flat_map(|x| x.to_le_bytes()).collect())),
                FlowColumn::OptU64(v) if v.iter().all(Option::is_some) => {
                    Some(("u8", v.iter().flat_map(|x| x.unwrap_or(0).to_le_bytes()).collect()))
                }
                FlowColumn::OptF64(v) => {
                    Some(("f8", v.iter().flat_map(|x| x.and_then(fin).unwrap_or(f64::NAN).to_le_bytes()).collect()))
                }
                _ => None,
            };
            if let Some((ty, b)) = bytes {
                flows.set_item(name, pyo3::types::PyBytes::new(py, &b))?;
                types.set_item(name, ty)?;
                continue;
            }
        }
        match col {
            FlowColumn::U32(v) => flows.set_item(name, v)?,
            FlowColumn::U64(v) => flows.set_item(name, v)?,
            FlowColumn::OptU64(v) => flows.set_item(name, v)?,
            FlowColumn::OptF64(v) => flows.set_item(name, opt(v))?,
            FlowColumn::Str(v) => flows.set_item(name, v)?,
        }
    }
    d.set_item("flows", flows)?;
    if packed {
        d.set_item("flow_types", types)?;
    }
    d.set_item("retransmissions_per_exchange", &report.retransmissions_per_exchange)?;
    let links = PyDict::new(py);
    for (dir, link) in [("downlink", &report.links.downlink), ("uplink", &report.links.uplink)] {
        let l = PyDict::new(py);
        for (name, v) in link.fields() {
            match v {
                Scalar::U64(x) => l.set_item(name, x)?,
                Scalar::F64(x) => l.set_item(name, fin(x))?,
            }
        }
        links.set_item(dir, l)?;
    }
    d.set_item("links", links)?;
    d.set_item("useful_fraction", fin(report.useful_fraction))?;
    d.set_item("sim_time_s", fin(report.sim_time_s))?;
    d.set_item("wall_s", fin(report.wall_s))?;
    d.set_item("events", report.events)?;
    d.set_item("truncated", report.truncated)?;
    Ok(d)
}

/// The default simulation configuration as JSON (every field, with its default).
#[pyfunction]
fn default_sim_config_json() -> String {
    serde_json::to_string(&coapcc_sim::SimConfig::default()).expect("config serialises")
}

/// The link model's schema as JSON: named error profiles with their derived parameters and
/// loss models, the profile formulas, the error-model forms, the testbed defaults
/// (`spec_defaults`, the fields `link_config_json` takes) and the default chains.
#[pyfunction]
fn link_schema_json() -> String {
    coapcc_link::schema::link_schema_json()
}

/// The simulator's `link` object (JSON) for the testbed link described by `spec_json` (a
/// `LinkSpec`: `buffer_bytes`, `errors`, `error_clock`, `burst_packets`, rates, delays, ...;
/// missing fields take their defaults). Raises ValueError with a one-line message for an
/// unknown field or an invalid value (e.g. an unknown error model).
#[pyfunction]
fn link_config_json(spec_json: &str) -> PyResult<String> {
    coapcc_link::schema::link_config_json(spec_json).map_err(PyValueError::new_err)
}

/// The loss model (JSON) that an error-model text (`none|low|medium|high|bernoulli:P|
/// ge:P,R,K,H|ge-time:T_L,T_B,K,H`) resolves to with `error_clock` (`time` or `packet`) and
/// `burst_packets`; raises ValueError with a one-line message when it is invalid.
#[pyfunction]
#[pyo3(signature = (errors, error_clock="time", burst_packets=5.0))]
fn loss_model_json(errors: &str, error_clock: &str, burst_packets: f64) -> PyResult<String> {
    coapcc_link::schema::loss_model_json(errors, error_clock, burst_packets).map_err(PyValueError::new_err)
}

/// Makarem's RTT-scenario study: `request_json` is a `coapcc_studies::RttStudyRequest`
/// (`cc`, `scenarios`, `seed`, `len`, `trace`, ...); returns a JSON list of rows (scenario, cc,
/// spurious, rmse_ms, transmissions, ...). Raises ValueError on bad input. Releases the GIL.
#[pyfunction]
fn rtt_scenarios_json(py: Python<'_>, request_json: &str) -> PyResult<String> {
    py.detach(|| coapcc_studies::rtt_scenarios_json(request_json)).map_err(PyValueError::new_err)
}

/// Per-message RTO and RTT of one scenario through one algorithm (messages `first` to
/// `first + count`), as a JSON list, for RTO-vs-RTT plots.
#[pyfunction]
fn rtt_trace_json(py: Python<'_>, request_json: &str, first: usize, count: usize) -> PyResult<String> {
    py.detach(|| coapcc_studies::rtt_trace_json(request_json, first, count)).map_err(PyValueError::new_err)
}

/// One residual-bandwidth run (Makarem, chapter 6): `request_json` is a
/// `coapcc_studies::ResBwRequest`; returns the report as JSON (goodput_pps, overhead,
/// app_loss_ratio, transmissions, delivered, ...). Releases the GIL.
#[pyfunction]
fn resbw_json(py: Python<'_>, request_json: &str) -> PyResult<String> {
    py.detach(|| coapcc_studies::resbw_json(request_json)).map_err(PyValueError::new_err)
}

/// The testbed's link (the simulator's `LinkConfig` as JSON) with the parameters of
/// `params_json` applied (the fields of `coapcc_link::LinkSpec`: `buffer_bytes`, `errors`,
/// `error_clock`, `burst_packets`, rates, delays, rest of path, overhead, MTU; missing fields
/// take the testbed's defaults). The same as [`link_config_json`]; Python never builds a
/// chain itself.
#[pyfunction]
fn testbed_link_json(params_json: &str) -> PyResult<String> {
    coapcc_link::schema::link_config_json(params_json).map_err(PyValueError::new_err)
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
            // The closed-loop flows named plainly (`bulk` carries a size, `{"bulk": BYTES}`; the
            // message workloads run over a mesh, `coapcc.mesh`).
            "workload": variants::<WorkloadKind>()
                .into_iter()
                .filter(|v| WorkloadKind::parse(v).is_ok_and(|k| !k.is_messages()))
                .collect::<Vec<_>>(),
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

/// Run one `coapcc mesh` simulation (`coapcc_sim::mesh_command`: the simulator with a mesh
/// topology and the message workload). `config_json` is a `MeshRun` as JSON (unknown keys are
/// errors, missing keys take their defaults); returns the report as JSON (the object `coapcc
/// mesh --json` prints). With `trace_path`, writes one JSON line per finished unit there.
/// Raises ValueError with a one-line message `key: problem`. Releases the GIL.
#[pyfunction]
#[pyo3(signature = (config_json, trace_path=None))]
fn mesh_json(py: Python<'_>, config_json: &str, trace_path: Option<std::path::PathBuf>) -> PyResult<String> {
    let cfg: coapcc_sim::mesh_command::MeshRun =
        serde_json::from_str(config_json).map_err(|e| PyValueError::new_err(format!("invalid mesh config: {e}")))?;
    py.detach(|| -> PyResult<String> {
        let report = match trace_path {
            None => coapcc_sim::mesh_command::simulate(&cfg, None).map_err(|e| sim_error(&e))?,
            Some(path) => {
                let f = std::fs::File::create(&path)
                    .map_err(|e| PyValueError::new_err(format!("cannot create trace file {}: {e}", path.display())))?;
                let mut sink = coapcc_sim::JsonLinesTrace::new(std::io::BufWriter::new(f));
                let r = coapcc_sim::mesh_command::simulate(&cfg, Some(&mut sink)).map_err(|e| sim_error(&e))?;
                sink.finish()
                    .map_err(|e| PyValueError::new_err(format!("cannot write trace file {}: {e}", path.display())))?;
                r
            }
        };
        serde_json::to_string(&report).map_err(|e| PyValueError::new_err(e.to_string()))
    })
}

/// Check a mesh configuration without running it (parameters, algorithm, topology, DODAG):
/// returns None or raises `ConfigError` (a ValueError) with the key at fault. For sweep
/// planners.
#[pyfunction]
fn mesh_check_json(config_json: &str) -> PyResult<()> {
    let cfg: coapcc_sim::mesh_command::MeshRun =
        serde_json::from_str(config_json).map_err(|e| PyValueError::new_err(format!("invalid mesh config: {e}")))?;
    cfg.to_sim().map(|_| ()).map_err(|e| sim_error(&e))
}

/// A mesh configuration (`MeshRun`, JSON) as the parameters of one simulation (what
/// `coapcc.SimConfig` holds, JSON): the same run through `coapcc.simulate`.
#[pyfunction]
fn mesh_sim_params_json(config_json: &str) -> PyResult<String> {
    let cfg: coapcc_sim::mesh_command::MeshRun =
        serde_json::from_str(config_json).map_err(|e| PyValueError::new_err(format!("invalid mesh config: {e}")))?;
    cfg.to_params().map(|p| p.text()).map_err(|e| sim_error(&e))
}

/// The mesh configuration of a preset (`ancillotti-cooja`, `makarem2021`) as JSON, with
/// `options_json` (an object of dotted keys: `{"mac.queue_packets": 4}`) applied in order;
/// raises `ConfigError` with the key at fault (`preset` for an unknown one).
#[pyfunction]
#[pyo3(signature = (preset, options_json=None))]
fn mesh_config_json(preset: &str, options_json: Option<&str>) -> PyResult<String> {
    let mut cfg = coapcc_sim::mesh_command::MeshRun::preset(preset).map_err(|e| keyed_error(&e.key, &e.problem))?;
    if let Some(text) = options_json {
        let coapcc_sim::params::Json::Obj(items) = params(text)? else {
            return Err(PyValueError::new_err("mesh options: expected an object"));
        };
        for (k, v) in items {
            cfg.set(&k, &v.text()).map_err(|e| keyed_error(&e.key, &e.problem))?;
        }
    }
    Ok(serde_json::to_string(&cfg).expect("config serialises"))
}

/// The extension module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ConfigError", m.py().get_type::<ConfigError>())?;
    m.add_function(wrap_pyfunction!(sim_params_schema_json, m)?)?;
    m.add_function(wrap_pyfunction!(sim_params_normalize, m)?)?;
    m.add_function(wrap_pyfunction!(sim_params_group_counts, m)?)?;
    m.add_function(wrap_pyfunction!(sim_params_shared, m)?)?;
    m.add_function(wrap_pyfunction!(sim_params_algorithm_specs, m)?)?;
    m.add_function(wrap_pyfunction!(sim_params_resolved_specs, m)?)?;
    m.add_function(wrap_pyfunction!(sim_params_config_json, m)?)?;
    m.add_function(wrap_pyfunction!(compose_spec, m)?)?;
    m.add_function(wrap_pyfunction!(split_label, m)?)?;
    m.add_function(wrap_pyfunction!(cli, m)?)?;
    m.add_function(wrap_pyfunction!(rust_commands_json, m)?)?;
    m.add_function(wrap_pyfunction!(rtt_scenarios_json, m)?)?;
    m.add_function(wrap_pyfunction!(rtt_trace_json, m)?)?;
    m.add_function(wrap_pyfunction!(resbw_json, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(algorithms_json, m)?)?;
    m.add_function(wrap_pyfunction!(resolve_algorithm, m)?)?;
    m.add_function(wrap_pyfunction!(simulate_json, m)?)?;
    m.add_function(wrap_pyfunction!(simulate_columns, m)?)?;
    m.add_function(wrap_pyfunction!(default_sim_config_json, m)?)?;
    m.add_function(wrap_pyfunction!(link_schema_json, m)?)?;
    m.add_function(wrap_pyfunction!(link_config_json, m)?)?;
    m.add_function(wrap_pyfunction!(loss_model_json, m)?)?;
    m.add_function(wrap_pyfunction!(testbed_link_json, m)?)?;
    m.add_function(wrap_pyfunction!(resolve_sim_config_json, m)?)?;
    m.add_function(wrap_pyfunction!(sim_limits_json, m)?)?;
    m.add_function(wrap_pyfunction!(custom::simulate_custom_json, m)?)?;
    m.add_function(wrap_pyfunction!(mesh_json, m)?)?;
    m.add_function(wrap_pyfunction!(mesh_config_json, m)?)?;
    m.add_function(wrap_pyfunction!(mesh_check_json, m)?)?;
    m.add_function(wrap_pyfunction!(mesh_sim_params_json, m)?)?;
    Ok(())
}
