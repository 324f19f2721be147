//! # coapcc-mesh: multi-hop IEEE 802.15.4 meshes carrying CoAP
//!
//! A deterministic discrete-event simulator of the Cooja scenarios of Ancillotti & Bruno
//! (CoAP and CoCoA+ in RPL grids): motes on a shared 250 kbit/s radio medium with a
//! distance-dependent reception curve, collisions and capture, unslotted CSMA/CA with MAC
//! ACKs and retries, Contiki-sized queues, an RPL-like DODAG with storing-mode forwarding,
//! and CoAP clients that split each message into 32-byte units, each a reliable exchange
//! under any [`coapcc_cc`] algorithm.
//!
//! ```
//! use coapcc_mesh::{simulate, MeshConfig};
//! let mut cfg = MeshConfig::preset("ancillotti-cooja").unwrap();
//! cfg.topology = "grid:3".into();
//! cfg.traffic = "periodic:0.5".into();
//! cfg.duration_s = 120.0;
//! let report = simulate(&cfg).unwrap();
//! assert_eq!(report.clients.len(), 7);     // every node but the root and the sink
//! assert!(report.plr_mean < 0.2);
//! ```
//!
//! ## Map
//! - [`config`]: [`MeshConfig`], every parameter, presets, `KEY=VALUE` setting.
//! - [`topology`]: positions from generators (`grid:N`, `chain:N`, `ring:N`,
//!   `dumbbell:K,M`) or a file. [`radio`]: reception curve, power, hearing tables.
//! - [`routing`]: the DODAG and storing-mode next hops.
//! - [`reliability`]: the one CoAP piece, a Confirmable exchange on `coapcc-proto`'s
//!   reliability layer (the same lifecycle the real endpoint and the general simulator run).
//! - [`net`]: [`MeshNet`], the network as one component: radio medium, CSMA/CA MAC, per-node
//!   queues, forwarding; an event source (`push`, `peek`, `poll`) numbered from its host's
//!   counter.
//! - [`MeshSim`] (engine): the mesh study's host of a [`MeshNet`]: clients that fragment
//!   messages into units, the sink, workloads, metrics.
//! - [`report`]: [`MeshReport`]. [`cli`]: `coapcc mesh`.
//!
//! The general simulator (`coapcc-sim`, `topology.mesh`) hosts the same [`MeshNet`] as one more
//! event source of its loop ([`MediumConfig`] is its configuration section); this crate never
//! depends on the simulator. The model and its mapping to the papers are in `docs/mesh.md`.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod cli;
pub mod config;
mod engine;
pub mod net;
pub mod radio;
pub mod reliability;
pub mod report;
pub mod routing;
pub mod topology;

pub use config::{MediumConfig, MeshConfig, Traffic};
pub use engine::MeshSim;
pub use net::{Delivery, DropCause, MacRecord, MacWhat, MeshNet};
pub use report::{ClientReport, MeshReport, Summary};

/// Run one simulation (validates the configuration first).
pub fn simulate(cfg: &MeshConfig) -> Result<MeshReport, String> {
    MeshSim::new(cfg)?.run()
}
