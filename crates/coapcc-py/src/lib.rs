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

/// Run one mesh simulation (`coapcc-mesh`). `config_json` is a `MeshConfig` as JSON (unknown
/// keys are errors, missing keys take their defaults); returns the report as JSON (the object
/// `coapcc mesh --json` prints). With `trace_path`, writes one JSON line per finished exchange
/// there. Raises ValueError with a one-line message. Releases the GIL.
#[pyfunction]
#[pyo3(signature = (config_json, trace_path=None))]
fn mesh_json(py: Python<'_>, config_json: &str, trace_path: Option<std::path::PathBuf>) -> PyResult<String> {
    let cfg: coapcc_mesh::MeshConfig =
        serde_json::from_str(config_json).map_err(|e| PyValueError::new_err(format!("invalid mesh config: {e}")))?;
    py.detach(|| -> Result<String, String> {
        let mut sim = coapcc_mesh::MeshSim::new(&cfg)?;
        if let Some(path) = trace_path {
            let f = std::fs::File::create(&path)
                .map_err(|e| format!("cannot create trace file {}: {e}", path.display()))?;
            sim.set_trace(Box::new(std::io::BufWriter::new(f)));
        }
        serde_json::to_string(&sim.run()?).map_err(|e| e.to_string())
    })
    .map_err(PyValueError::new_err)
}

/// Check a mesh configuration without running it (parameters, algorithm, topology, DODAG):
/// returns None or raises ValueError with a one-line message. For sweep planners.
#[pyfunction]
fn mesh_check_json(config_json: &str) -> PyResult<()> {
    let cfg: coapcc_mesh::MeshConfig =
        serde_json::from_str(config_json).map_err(|e| PyValueError::new_err(format!("invalid mesh config: {e}")))?;
    coapcc_mesh::MeshSim::new(&cfg).map(|_| ()).map_err(PyValueError::new_err)
}

/// The mesh configuration of a preset (`ancillotti-cooja`, `makarem2021`) as JSON.
#[pyfunction]
fn mesh_config_json(preset: &str) -> PyResult<String> {
    let cfg = coapcc_mesh::MeshConfig::preset(preset).map_err(PyValueError::new_err)?;
    Ok(serde_json::to_string(&cfg).expect("config serialises"))
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
    m.add_function(wrap_pyfunction!(mesh_json, m)?)?;
    m.add_function(wrap_pyfunction!(mesh_config_json, m)?)?;
    m.add_function(wrap_pyfunction!(mesh_check_json, m)?)?;
    Ok(())
}
