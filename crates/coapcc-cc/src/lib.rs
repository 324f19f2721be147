//! # coapcc-cc: CoAP congestion control, sans-IO
//!
//! Every CoAP-over-UDP retransmission-timer and congestion-control algorithm of the
//! published literature (RFC 7252, the CoCoA drafts, CoCoA+, FASOR, pCoCoA, Californium,
//! Makarem's thesis; see the `docs/algorithms*.md` pages), behind one interface,
//! [`CongestionControl`]. The crate is `#![no_std]`, has no dependencies and never allocates:
//! time ([`Instant`]) and randomness ([`Entropy`]) are passed in, so the same objects run in
//! the simulator, in real endpoints and on a microcontroller.
//!
//! ## Map
//! - [`api`]: the trait, the per-exchange [`Exchange`] record, ACK info and snapshots.
//! - [`registry`]: names, the textual form `NAME[:key=value,...]`, the [`Algorithm`] enum.
//! - [`params`]: named parameters and reproduction presets; [`common`]: RFC 7252 parameters
//!   and dithering; [`estimator`]: the parameterised RFC 6298 estimator.
//! - [`shared`]: the transmission parameters every algorithm shares, set once for any
//!   algorithm ([`AlgorithmConfig::set_shared`], [`TransmissionOverrides`]) and listed side by
//!   side ([`AlgorithmConfig::shared_values`]); the rule "a name alone means its
//!   specification's defaults, a preset is explicit, overrides apply last".
//! - One module per family: [`default`], [`cocoa`] (CoCoA, CoCoA-S, CoCoA FullBackoff,
//!   CoCoA+, Californium's CoCoA), [`fasor`], [`pcocoa`], [`californium`] (BasicRto,
//!   LinuxRto, PeakhopperRto), [`makarem`] (Makarem's thesis RTO, CoCoA-4-state, and the
//!   rate-based IDC-CoAP and MBC-CoAP, paced through [`CongestionControl::earliest_start`]),
//!   [`bdp`] (BDP-CoAP: BBR-derived pacing over CoCoA+'s RTO estimation).
//!
//! ## Example
//! ```
//! use coapcc_cc::{AlgorithmConfig, CongestionControl, AckInfo, Instant, SplitMix64, TimeoutAction};
//! let cfg = AlgorithmConfig::parse("cocoa:vbf=per-exchange,aging=on").unwrap();
//! let mut cc = cfg.build();
//! let mut rng = SplitMix64::new(7);
//! let t = Instant::ZERO;
//! let mut ex = cc.start_exchange(t, 0, &mut rng);          // send; arm ex.timer()
//! let t = t + ex.timer();                                   // the timer expires
//! match cc.on_timeout(t, &mut ex) {
//!     TimeoutAction::Retransmit(next) => assert!(next > ex.timer() / 2),
//!     TimeoutAction::GiveUp => unreachable!(),
//! }
//! let t = t + core::time::Duration::from_millis(700);       // the ACK arrives
//! cc.on_ack(t, &ex, &AckInfo::new(&ex, t));
//! assert!(cc.snapshot().weak.is_some());
//! ```
#![no_std]
#![deny(missing_docs)]
#![forbid(unsafe_code)]

#[cfg(feature = "std")]
extern crate std;

pub mod api;
pub mod bdp;
pub mod californium;
pub mod cocoa;
pub mod common;
pub mod default;
pub mod estimator;
pub mod fasor;
pub mod makarem;
pub mod names;
mod num;
pub mod params;
pub mod pcocoa;
pub mod registry;
pub mod rng;
pub mod shared;
pub mod time;

pub use api::{
    AckInfo, CongestionControl, CopyAck, EstimatorSnapshot, Exchange, GiveUpReason, Snapshot, TimeoutAction,
};
pub use common::COMMON_INFO;
pub use params::{ParamInfo, Preset};
pub use registry::{lookup, Algorithm, AlgorithmConfig, AlgorithmInfo, SpecError, ALGORITHMS};
pub use rng::{Entropy, SplitMix64};
pub use shared::{ParamValue, SharedError, SharedInfo, TransmissionOverrides, SHARED_PARAMS};
pub use time::Instant;
