//! # coapcc-tcp: a sans-IO TCP model for CoAP over TCP
//!
//! A TCP endpoint as the Helsinki CoAP-over-TCP study configured Linux: three-way handshake
//! with SYN retries, MSS from the MTU, an initial window, cumulative ACKs with delayed ACKs,
//! the RFC 6298 RTO with Linux's bounds, Karn's rule and backoff, no SACK and no timestamps,
//! Limited Transmit and PRR, and two congestion controls behind one trait: New Reno
//! (RFC 5681 + RFC 6582) and BBR v1 (Linux `tcp_bbr.c`).
//!
//! Nothing here reads a clock, a socket or a global random generator: `now` is passed in,
//! randomness comes from a seed given at construction. Payload bytes are not carried, only
//! lengths; the application counts bytes.
//!
//! ## Map
//! - [`conn`]: the endpoint ([`Connection`]); [`recv`]: the receiving half and delayed ACKs;
//!   [`rtt`]: the retransmission timer; [`segment`]: segments.
//! - [`cc`]: the [`cc::TcpCongestionControl`] trait, [`cc::NewReno`], [`cc::Bbr`].
//! - [`config`]: named parameters, the `helsinki2018` preset, the text form
//!   `newreno[:key=value,...]` / `bbr[:key=value,...]`.
//! - [`app`]: the CoAP-over-TCP exchange (CSMs, requests, one-message responses) as byte
//!   counts, with sizes from the RFC 8323 encoding.
//! - [`stats`]: counters and trace records; [`pipe`]: two endpoints on the two directions of a
//!   `coapcc-link` link (the simulator's link model) with a scripted drop rule, for tests,
//!   benchmarks and examples.
//!
//! ## Example
//! ```
//! use coapcc_tcp::{pipe::{Pipe, PipeConfig}, TcpCcConfig};
//! let cfg = TcpCcConfig::parse("newreno:preset=helsinki2018").unwrap();
//! let mut p = Pipe::new(&cfg, PipeConfig::testbed(), 1).unwrap();
//! let r = p.transfer(102_408).unwrap();
//! assert_eq!(r.server.retransmitted_segments, 0);
//! assert!(r.fct_s > 31.6);
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod app;
pub mod cc;
pub mod config;
pub mod conn;
pub mod pipe;
mod rate;
pub mod recv;
pub mod rtt;
pub mod segment;
pub mod stats;

pub use cc::{BbrMode, CaState};
pub use config::{Preset, TcpBase, TcpCcConfig, TcpConfig};
pub use conn::{Connection, State};
pub use segment::Segment;
pub use stats::{Counters, TraceEvent, TraceRecord};
