//! Congestion controls written in Python, run by the simulator through
//! [`coapcc_sim::ControllerFactory`].
//!
//! A Python class with these members (one instance per client, built with no arguments):
//!
//! | member | required | called |
//! |---|---|---|
//! | `max_retransmit` (int attribute) | yes | read once per instance |
//! | `start_exchange(now, in_flight, random) -> float` | yes | a new exchange starts; returns the first timer (s). `random` is uniform in [0, 1), from the client's own dither stream |
//! | `on_timeout(now, retransmissions, timer) -> float or None` | yes | the timer of copy `retransmissions` expired and fewer than `max_retransmit` retransmissions were sent: the next timer (s), or `None` to give up |
//! | `on_ack(now, rtt, retransmissions, copy, copy_rtt)` | no | first ACK; `copy`/`copy_rtt` are `None` unless `uses_copy_id` |
//! | `on_give_up(now, reason)` | no | `reason` is `"timeout"` or `"reset"` |
//! | `reset(now)` | no | flow start (random workload: each batch) |
//! | `rto() -> float` | no | the RTO reported in traces (default: the last first timer) |
//! | `uses_copy_id` (bool attribute) | no | default `False` |
//! | `name` (str attribute) | no | the name in reports (default: the class name) |
//!
//! Times are float seconds. A Python exception inside a callback is kept, the run finishes
//! without calling Python again (exchanges then get a 10^6 s timer and never retransmit) and
//! the exception is raised when the simulation returns.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use coapcc_cc::{AckInfo, CongestionControl, Entropy, Exchange, GiveUpReason, Instant, Snapshot, TimeoutAction};
use coapcc_sim::{ControllerFactory, CustomAlgorithms};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// The first Python error of a run.
type ErrorSlot = Arc<Mutex<Option<PyErr>>>;

/// The longest timer a Python algorithm may return, and the fallback after an error.
const MAX_TIMER_S: f64 = 1e6;

fn seconds(t: Instant) -> f64 {
    t.as_nanos() as f64 * 1e-9
}

/// Interned names: a report holds `&'static str` names; each distinct name leaks once.
fn intern(name: &str) -> &'static str {
    static NAMES: OnceLock<Mutex<BTreeMap<String, &'static str>>> = OnceLock::new();
    let mut m = NAMES.get_or_init(Default::default).lock().expect("names lock");
    if let Some(s) = m.get(name) {
        return s;
    }
    let s: &'static str = Box::leak(name.to_string().into_boxed_str());
    m.insert(name.to_string(), s);
    s
}

struct PyFactory {
    class: Py<PyAny>,
    name: &'static str,
    errors: ErrorSlot,
}

impl ControllerFactory for PyFactory {
    fn build(&self) -> Box<dyn CongestionControl + Send> {
        Box::new(Python::attach(|py| PyCc::new(py, &self.class, self.name, self.errors.clone())))
    }
    fn describe(&self) -> String {
        format!("python:{}", self.name)
    }
}

/// One instance of the Python class.
struct PyCc {
    obj: Option<Py<PyAny>>,
    name: &'static str,
    max_retransmit: u32,
    copy_id: bool,
    has: [bool; 4], // on_ack, on_give_up, reset, rto
    last_t0: f64,
    errors: ErrorSlot,
}

impl PyCc {
    fn new(py: Python<'_>, class: &Py<PyAny>, name: &'static str, errors: ErrorSlot) -> PyCc {
        let mut cc = PyCc { obj: None, name, max_retransmit: 0, copy_id: false, has: [false; 4], last_t0: 0.0, errors };
        let made = (|| -> PyResult<()> {
            let obj = class.bind(py).call0()?;
            cc.max_retransmit = obj
                .getattr("max_retransmit")
                .map_err(|_| {
                    PyTypeError::new_err(format!("{name}: a custom algorithm needs a max_retransmit attribute"))
                })?
                .extract()?;
            for m in ["start_exchange", "on_timeout"] {
                if !obj.hasattr(m)? {
                    return Err(PyTypeError::new_err(format!("{name}: a custom algorithm needs a {m} method")));
                }
            }
            cc.copy_id = match obj.getattr("uses_copy_id") {
                Ok(v) => v.is_truthy()?,
                Err(_) => false,
            };
            for (i, m) in ["on_ack", "on_give_up", "reset", "rto"].into_iter().enumerate() {
                cc.has[i] = obj.hasattr(m)?;
            }
            cc.obj = Some(obj.unbind());
            Ok(())
        })();
        if let Err(e) = made {
            cc.fail(e);
        }
        cc
    }

    /// Keep the first error; stop calling Python.
    fn fail(&mut self, e: PyErr) {
        self.obj = None;
        let mut slot = self.errors.lock().expect("error slot");
        if slot.is_none() {
            *slot = Some(e);
        }
    }

    /// Call `method` with `args` if the instance is healthy; `None` after an error.
    fn call<'py, A: pyo3::call::PyCallArgs<'py>>(
        &mut self,
        py: Python<'py>,
        method: &str,
        args: A,
    ) -> Option<Bound<'py, PyAny>> {
        let obj = self.obj.as_ref()?.bind(py).clone();
        match obj.call_method1(method, args) {
            Ok(v) => Some(v),
            Err(e) => {
                self.fail(e);
                None
            }
        }
    }

    /// A timer returned by Python, checked.
    fn timer(&mut self, what: &str, v: &Bound<'_, PyAny>) -> Option<Duration> {
        match v.extract::<f64>() {
            Ok(t) if t.is_finite() && t > 0.0 && t <= MAX_TIMER_S => Some(Duration::from_secs_f64(t)),
            Ok(t) => {
                self.fail(PyValueError::new_err(format!(
                    "{}.{what} returned {t}: a timer must be a finite number of seconds in (0, {MAX_TIMER_S}]",
                    self.name
                )));
                None
            }
            Err(e) => {
                self.fail(e);
                None
            }
        }
    }
}

impl CongestionControl for PyCc {
    fn name(&self) -> &'static str {
        self.name
    }
    fn max_retransmit(&self) -> u32 {
        self.max_retransmit
    }
    fn reset(&mut self, now: Instant) {
        if self.has[2] {
            Python::attach(|py| self.call(py, "reset", (seconds(now),)).map(|_| ()));
        }
    }
    fn start_exchange(&mut self, now: Instant, in_flight: u32, rng: &mut dyn Entropy) -> Exchange {
        let u = (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
        let t = Python::attach(|py| {
            let v = self.call(py, "start_exchange", (seconds(now), in_flight, u))?;
            self.timer("start_exchange", &v)
        })
        .unwrap_or(Duration::from_secs_f64(MAX_TIMER_S));
        self.last_t0 = t.as_secs_f64();
        Exchange::begin(now, t, t)
    }
    fn on_timeout(&mut self, now: Instant, ex: &mut Exchange) -> TimeoutAction {
        let n = ex.retransmissions();
        if n >= self.max_retransmit || self.obj.is_none() {
            return TimeoutAction::GiveUp;
        }
        let timer = ex.timer().as_secs_f64();
        let next = Python::attach(|py| {
            let v = self.call(py, "on_timeout", (seconds(now), n, timer))?;
            if v.is_none() {
                return None;
            }
            self.timer("on_timeout", &v)
        });
        match next {
            Some(t) => {
                ex.record_retransmission(t);
                TimeoutAction::Retransmit(t)
            }
            None => TimeoutAction::GiveUp,
        }
    }
    fn on_ack(&mut self, now: Instant, _ex: &Exchange, ack: &AckInfo) {
        if !self.has[0] {
            return;
        }
        let copy = ack.copy.map(|c| (c.ordinal, c.rtt.as_secs_f64()));
        Python::attach(|py| {
            self.call(
                py,
                "on_ack",
                (seconds(now), ack.rtt.as_secs_f64(), ack.retransmissions, copy.map(|c| c.0), copy.map(|c| c.1)),
            )
            .map(|_| ())
        });
    }
    fn on_give_up(&mut self, now: Instant, _ex: &Exchange, reason: GiveUpReason) {
        if !self.has[1] {
            return;
        }
        let why = match reason {
            GiveUpReason::Timeout => "timeout",
            GiveUpReason::Reset => "reset",
        };
        Python::attach(|py| self.call(py, "on_give_up", (seconds(now), why)).map(|_| ()));
    }
    fn uses_copy_id(&self) -> bool {
        self.copy_id
    }
    fn snapshot(&self) -> Snapshot {
        let rto = if self.has[3] {
            Python::attach(|py| {
                let obj = self.obj.as_ref()?.bind(py).clone();
                obj.call_method0("rto").ok()?.extract::<f64>().ok()
            })
        } else {
            None
        };
        let rto = rto.unwrap_or(self.last_t0);
        let rto = if rto.is_finite() && rto >= 0.0 { rto.min(MAX_TIMER_S) } else { 0.0 };
        Snapshot { rto: Duration::from_secs_f64(rto), ..Snapshot::default() }
    }
}

/// Run one simulation where groups may name algorithms written in Python.
///
/// `algorithms` maps a name (used as a group's `cc` in `config_json`) to a class with the
/// callbacks of this module's table. Returns the report as JSON, like `simulate_json`.
/// Holds the GIL (the callbacks are Python). Raises the first exception a callback raised,
/// or ValueError for a configuration that cannot run.
#[pyfunction]
#[pyo3(signature = (config_json, algorithms, trace_path=None))]
pub(crate) fn simulate_custom_json(
    py: Python<'_>,
    config_json: &str,
    algorithms: &Bound<'_, PyDict>,
    trace_path: Option<std::path::PathBuf>,
) -> PyResult<String> {
    let cfg: coapcc_sim::SimConfig = serde_json::from_str(config_json)
        .map_err(|e| PyValueError::new_err(format!("invalid simulation config: {e}")))?;
    let errors: ErrorSlot = Arc::new(Mutex::new(None));
    let mut custom = CustomAlgorithms::new();
    for (k, class) in algorithms.iter() {
        let name: String = k.extract()?;
        if !class.is_callable() {
            return Err(PyTypeError::new_err(format!("custom algorithm {name:?}: expected a class")));
        }
        let shown: String =
            class.getattr("name").ok().and_then(|n| n.extract::<String>().ok()).unwrap_or_else(|| name.clone());
        let f = PyFactory { class: class.unbind(), name: intern(&shown), errors: errors.clone() };
        custom.add(&name, Arc::new(f)).map_err(PyValueError::new_err)?;
    }
    let _ = py;
    let report = match trace_path {
        None => coapcc_sim::simulate_custom(&cfg, &custom, None),
        Some(path) => {
            let f = std::fs::File::create(&path)
                .map_err(|e| PyValueError::new_err(format!("cannot create trace file {}: {e}", path.display())))?;
            let mut sink = coapcc_sim::JsonLinesTrace::new(std::io::BufWriter::new(f));
            let r = coapcc_sim::simulate_custom(&cfg, &custom, Some(&mut sink));
            sink.finish()
                .map_err(|e| PyValueError::new_err(format!("cannot write trace file {}: {e}", path.display())))?;
            r
        }
    };
    if let Some(e) = errors.lock().expect("error slot").take() {
        return Err(e);
    }
    let report = report.map_err(|e| PyValueError::new_err(e.to_string()))?;
    serde_json::to_string(&report).map_err(|e| PyValueError::new_err(e.to_string()))
}
