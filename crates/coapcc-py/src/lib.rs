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
    coapcc_cc::AlgorithmConfig::parse(spec)
        .map(|c| c.to_string())
        .map_err(|e| PyValueError::new_err(e.to_string()))
}

/// The extension module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(cli, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(algorithms_json, m)?)?;
    m.add_function(wrap_pyfunction!(resolve_algorithm, m)?)?;
    Ok(())
}
