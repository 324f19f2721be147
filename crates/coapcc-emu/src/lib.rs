//! # coapcc-emu: a real-time emulator of the Helsinki constrained-link testbed
//!
//! Linux's netem is not available on every kernel, and the simulator's link model should be
//! the one thing both the simulator and real endpoints cross. This crate builds two network
//! namespaces (client side and server side) joined by a userspace forwarder: one TUN device
//! in each namespace, and one thread per direction that moves every IP packet through a
//! [`coapcc_link::Link`] (rate + byte-limited tail-drop buffer, propagation delay,
//! Gilbert–Elliott/Bernoulli loss, rest-of-path jitter, MTU) driven by the monotonic clock.
//! Any IP traffic crosses it: CoAP over UDP, kernel TCP, ICMP.
//!
//! ```no_run
//! use coapcc_emu::{Emulator, EmulatorConfig, Side};
//! let emu = Emulator::start(&EmulatorConfig::default()).unwrap(); // needs root
//! let status = emu.shell(Side::Client, "ping -c 1 $COAPCC_EMU_SERVER_ADDR").status().unwrap();
//! let report = emu.stop().unwrap();
//! println!("{} packets up", report.uplink.counters.offered_packets);
//! # let _ = status;
//! ```
//!
//! ## Map
//! - [`emulator`]: [`Emulator`], [`EmulatorConfig`], the report types.
//! - [`forward`]: the per-direction forwarder thread, packet classification, lateness.
//! - [`netns`]: namespace lifecycle and stale cleanup. [`cli`]: `coapcc emulate`.
//! - [`probe`]: stand-in endpoints (CoAP-like client/server, UDP ping, bulk UDP and TCP)
//!   used by the tests and the validation harness.
//!
//! Design, usage and limits: `docs/emulator.md`; agreement with the simulator:
//! `docs/validation.md`.
#![deny(missing_docs)]

pub mod bpf;
pub mod cli;
pub mod emulator;
pub mod forward;
pub mod netns;
pub mod probe;
pub mod sys;

pub use cli::{emulate_main, EmulateArgs};
pub use emulator::{
    DirectionReport, EmuReport, Emulator, EmulatorConfig, FlowReport, Side, TcpProfile, TcpSettings, CLIENT_ADDR,
    CLIENT_ADDR6, IFNAME, SERVER_ADDR, SERVER_ADDR6, TESTBED_ROUTE_ATTRS, TESTBED_SYSCTLS,
};
