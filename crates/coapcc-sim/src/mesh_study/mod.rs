//! The mesh study (`coapcc mesh`): the Cooja scenarios of Ancillotti & Bruno on the general
//! engine. Every node but the DODAG root and the sink hosts a CoAP client; the message
//! workload ([`crate::messages`]: periodic monitoring or global events, messages cut into
//! 32-byte units, the no-caching rule) drives them; each unit is one Confirmable exchange
//! under any `coapcc_cc` algorithm; the sink answers every copy; the network is
//! [`coapcc_mesh::MeshNet`] (radio medium, CSMA/CA MAC, queues, forwarding), one event source
//! of the engine's loop. The configuration is a [`MeshConfig`], the report a [`MeshReport`]
//! (PLR per client, loss causes, RTO and RTT distributions, early retransmissions, hops).
//!
//! ```
//! use coapcc_mesh::MeshConfig;
//! use coapcc_sim::mesh_study::simulate;
//! let mut cfg = MeshConfig::preset("ancillotti-cooja").unwrap();
//! cfg.topology = "grid:3".into();
//! cfg.traffic = "periodic:0.5".into();
//! cfg.duration_s = 120.0;
//! let report = simulate(&cfg).unwrap();
//! assert_eq!(report.clients.len(), 7);     // every node but the root and the sink
//! assert!(report.plr_mean < 0.2);
//! ```

use std::io::Write;

use coapcc_mesh::radio::Medium;
use coapcc_mesh::routing::Dodag;
use coapcc_mesh::{MacRecord, MeshConfig, MeshReport};

use crate::engine::StudyRun;

pub mod cli;

/// A mesh study run, ready to run (validated, network and DODAG built, the workload's first
/// arrivals scheduled).
pub struct MeshStudy {
    run: StudyRun,
}

impl MeshStudy {
    /// Validate `cfg`, build the topology, medium tables, DODAG, clients and workload.
    pub fn new(cfg: &MeshConfig) -> Result<MeshStudy, String> {
        Ok(MeshStudy { run: StudyRun::new(cfg)? })
    }

    /// Record every MAC event (see [`MeshStudy::run_with_log`]).
    pub fn enable_mac_log(&mut self) {
        self.run.enable_mac_log();
    }

    /// The MAC events recorded so far.
    pub fn mac_log(&self) -> &[MacRecord] {
        self.run.mac_log()
    }

    /// Write one JSON line per finished exchange (unit) to `out`.
    pub fn set_trace(&mut self, out: Box<dyn Write>) {
        self.run.set_trace(out);
    }

    /// With duty cycling, the first wake-up of `node` at or after `t_ns`; `None` when radios
    /// are always on.
    pub fn wake_up_after(&self, node: usize, t_ns: u64) -> Option<u64> {
        self.run.wake_up_after(node, t_ns)
    }

    /// The DODAG.
    pub fn dodag(&self) -> &Dodag {
        self.run.dodag()
    }

    /// The radio tables.
    pub fn medium(&self) -> &Medium {
        self.run.medium()
    }

    /// Inject a bare frame of `psdu` bytes at node `src` for its neighbour `to` at time
    /// `at_ns` (no CoAP, no routing): for MAC tests.
    pub fn inject(&mut self, at_ns: u64, src: usize, to: usize, psdu: u32) {
        self.run.inject(at_ns, src, to, psdu);
    }

    /// Run to the configured duration and report.
    pub fn run(self) -> Result<MeshReport, String> {
        Ok(self.run.run(false)?.0)
    }

    /// Run to the configured duration and report, returning the MAC log too (empty unless
    /// [`MeshStudy::enable_mac_log`] was called).
    pub fn run_with_log(self) -> Result<(MeshReport, Vec<MacRecord>), String> {
        self.run.run(true)
    }
}

/// Run one mesh study (validates the configuration first).
pub fn simulate(cfg: &MeshConfig) -> Result<MeshReport, String> {
    MeshStudy::new(cfg)?.run()
}
