//! # coapcc-net: real CoAP over UDP
//!
//! The tokio edge of the sans-IO [`coapcc_proto::endpoint::Endpoint`]: [`driver::UdpDriver`]
//! owns a `tokio::net::UdpSocket` and an endpoint and is the only code that reads a clock.
//! On top of it:
//!
//! - [`server`]: `coapcc server`, a test server with the [`resources`] `/hello`, `/large`,
//!   `/echo`, `/slow` and `/.well-known/core` ([`run_server`], [`server_main`], [`ServerArgs`]);
//! - [`client`]: `coapcc client`, N requests to one URI with any congestion-control algorithm,
//!   one JSON line per exchange ([`run_client`], [`client_main`], [`ClientArgs`]);
//! - [`log`]: the JSON-lines format; [`uri`]: `coap://` URIs;
//! - CoAP over TCP (RFC 8323): [`tcp_session`] (framing, CSM, signalling), [`tcp_server`]
//!   (`coapcc server --tcp`), [`tcp_client`] (`coapcc client coap+tcp://...`); see `docs/tcp.md`.
//!
//! See `docs/endpoints.md` and `docs/interop.md`.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod args;
pub mod client;
pub mod driver;
pub mod limits;
pub mod log;
pub mod resources;
pub mod server;
pub mod tcp_client;
mod tcp_conn;
pub mod tcp_server;
pub mod tcp_session;
pub mod uri;

pub use client::{client_main, run_client, ClientArgs, ClientSummary, Method};
pub use server::{run_server, server_main, Server, ServerArgs};
