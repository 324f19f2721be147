//! # coapcc-link: the constrained-link model
//!
//! One direction of a link is a chain of FIFO elements (testbed spec §1.5). This crate knows
//! nothing about the simulator, the emulator or a command line: a direction is a pure,
//! clock-injected object. [`LinkPath::transmit`] takes `(now, packet size)` and returns the
//! packet's fate and its times; [`Link`] wraps it with the payloads it holds until their
//! delivery time (`push` / `poll` / `next_wakeup`), which is what the real-time emulator
//! (`coapcc-emu`) drives from a monotonic clock and what the simulator (`coapcc-sim`) drives
//! from its virtual clock.
//!
//! # Elements
//!
//! | Element | Effect on a packet entering at `t` |
//! |---|---|
//! | [`StageConfig::Rate`] | byte-limited tail-drop FIFO + serialiser: dropped iff `queued_bytes + size > buffer_bytes`, else leaves at `max(t, busy_until) + size·8/rate` (exact, see [`RateStage`]) |
//! | [`StageConfig::Delay`] | `t + delay` |
//! | [`StageConfig::Loss`] | dropped with the [`LossModel`]'s probability (after the rate stage: a lost packet used capacity) |
//! | [`StageConfig::Jitter`] | `max(t + U[min, max], previous output)`: no reordering unless `allow_reordering` |
//!
//! A rate stage may carry a [`RateSchedule`]: its rate and a link-error probability then
//! follow a piecewise-constant schedule or trace ([`schedule`]), exactly in integer time.
//!
//! The testbed's chains ([`testbed_uplink`], [`testbed_downlink`]):
//! uplink = rate 60 kbit/s + buffer → 200 ms → loss → rest-of-path U[10, 20] ms;
//! downlink = rest-of-path U[10, 20] ms → rate 30 kbit/s + buffer → 400 ms → loss.
//!
//! Configuration: [`LinkConfig`] (both chains and the MTU, the `link` object of a simulator
//! configuration), [`LinkSpec`] (the testbed link from a handful of typed parameters),
//! [`LinkOverrides`] (the link flags of `coapcc simulate` / `coapcc emulate`, without clap;
//! [`link_args!`] declares the clap struct in a command-line crate) and [`schema`] (the
//! profiles, formulas and defaults as data, for the Python front end).
//!
//! # Why the whole path is computed at push time, exactly
//!
//! Every element is FIFO and monotone: packets entering in non-decreasing time order leave
//! in the same order at non-decreasing times (the rate stage serves in order; the jitter
//! element takes the max with the previous output). So when packets are pushed in time order,
//! every element — including a rate stage placed *after* the rest-of-path element, as on the
//! downlink — sees its arrivals in order, and its state at a packet's arrival (backlog,
//! occupancy, error-chain state) depends only on packets pushed earlier. Computing the whole
//! path at push time is therefore exact, and a packet costs one delivery event.
//! `allow_reordering` breaks monotonicity, so it is only accepted on an element followed by
//! nothing but delays.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod args;
mod chain;
mod config;
mod counters;
mod delay;
mod link;
mod loss;
mod path;
mod rate;
#[cfg(test)]
mod reference;
pub mod schedule;
pub mod schema;
mod testbed;

pub use chain::{validate_chain, StageConfig};
pub use config::{parse_min_max_ms, LinkConfig, LinkOverrides, LinkSpec, DEFAULT_BUFFER_BYTES, DEFAULT_BURST_PACKETS};
pub use counters::{LinkCounters, Outcome, Transit};
pub use delay::{DelayConfig, JitterConfig, JitterFifo};
pub use link::Link;
pub use loss::{
    preset_fit, profile_burst_mean_s, ErrorClock, LossModel, LossStage, Profile, ProfileFit, ProfileKind,
    HELSINKI2018_HIGH_BURST_PACKETS, HELSINKI2018_HIGH_BURST_S, HELSINKI2018_MEDIUM_BURST_PACKETS,
    HELSINKI2018_MEDIUM_BURST_S, PRESET_FITS, PROFILES, PROFILE_BURST_MEAN_S,
};
pub use path::LinkPath;
pub use rate::{RateConfig, RateOutcome, RateStage, RateStats};
pub use schedule::{RatePoint, RateSchedule};
pub use testbed::{testbed_downlink, testbed_uplink, TESTBED_MTU};

/// Random stream of uplink element `i`: `SplitMix64::stream(seed, STREAM_UPLINK + i)`
/// (the simulator and the emulator use the same streams, so a seed means the same link).
pub const STREAM_UPLINK: u64 = 0x100;
/// Random stream base of the downlink's elements.
pub const STREAM_DOWNLINK: u64 = 0x200;

/// Time in integer nanoseconds since the link's epoch (time 0 of the loss processes).
pub type Nanos = u64;

/// Milliseconds (finite, non-negative) to integer nanoseconds, rounded.
pub fn ms_to_ns(ms: f64) -> Nanos {
    (ms * 1e6).round() as Nanos
}
