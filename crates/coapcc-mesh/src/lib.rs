//! # coapcc-mesh: multi-hop IEEE 802.15.4 meshes carrying CoAP
//!
//! The network component of the Cooja scenarios of Ancillotti & Bruno (CoAP and CoCoA+ in RPL
//! grids): motes on a shared 250 kbit/s radio medium with a distance-dependent reception
//! curve, collisions and capture, unslotted CSMA/CA with MAC ACKs and retries, Contiki-sized
//! queues, an RPL-like DODAG with storing-mode forwarding ([`MeshNet`]), and its configuration
//! ([`MeshNetConfig`]) and counters ([`report`]).
//!
//! This crate has no event loop of its own and no CoAP: the general simulator (`coapcc-sim`)
//! hosts [`MeshNet`] as one event source of its engine (`topology.mesh`: any workload over
//! the mesh, among them the message workload of the Cooja study, `coapcc mesh`).
//!
//! ```
//! use coapcc_mesh::{MeshNetConfig, MeshNet};
//! let cfg = MeshNetConfig::preset("ancillotti-cooja", "grid:3").unwrap();
//! let mut net: MeshNet<u32> = MeshNet::new(&cfg, 1).unwrap();
//! let (mut seq, sink) = (0, net.sink() as u16);
//! net.push(0, &mut seq, 8, sink, 60, 7); // a 60-byte frame from the far corner to the sink
//! let mut delivered = None;
//! // The network never goes idle (RPL's Trickle timers): run until the frame is delivered.
//! while delivered.is_none() && net.peek().is_some_and(|(t, _)| t < 10_000_000_000) {
//!     if let Some(d) = net.poll(&mut seq) {
//!         delivered = Some((d.node, d.payload));
//!     }
//! }
//! assert_eq!(delivered, Some((sink, 7)));
//! ```
//!
//! ## Map
//! - [`config`]: [`MeshNetConfig`], every parameter, presets, `KEY=VALUE` setting, keyed
//!   errors ([`MeshNetError`]); its sections in [`config::layers`].
//! - [`topology`]: positions from generators (`grid:N`, `chain:N`, `ring:N`,
//!   `dumbbell:K,M`) or a file. [`radio`]: reception curve, power, hearing tables.
//! - [`routing`]: the DODAG and storing-mode next hops.
//! - [`net`]: [`MeshNet`], the network as one component: radio medium, CSMA/CA MAC, per-node
//!   queues, forwarding; an event source (`push`, `peek`, `poll`) numbered from its host's
//!   counter.
//! - [`report`]: the network's counters (MAC events, drops by cause, packet accounting).
//!
//! This crate never depends on the simulator. The model and its mapping to the papers are in
//! `docs/mesh.md`.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod config;
pub mod contiki;
pub mod mote;
pub mod mrm;
pub mod net;
pub mod radio;
pub mod report;
pub mod routing;
pub mod rpl;
pub mod topology;

pub use config::{MeshNetConfig, MeshNetError};
pub use net::{Delivery, DropCause, MacRecord, MacWhat, MeshNet};
