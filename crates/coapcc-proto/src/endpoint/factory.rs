//! Open algorithms: a congestion control written outside `coapcc-cc` runs in the real
//! endpoint and in the simulator through a [`ControllerFactory`].
//!
//! The registry ([`AlgorithmConfig`]) stays the fast path: a registry algorithm is one
//! variant of the [`Algorithm`] enum, dispatched statically, and [`Controller`] keeps it that
//! way; anything else is a boxed [`CongestionControl`] behind one dynamic call per event.
//!
//! ```
//! use std::sync::Arc;
//! use core::time::Duration;
//! use coapcc_cc::{AckInfo, CongestionControl, Entropy, Exchange, GiveUpReason, Instant, Snapshot, TimeoutAction};
//! use coapcc_proto::endpoint::{ControllerFactory, Endpoint, EndpointConfig, Request};
//!
//! /// A fixed 3 s timer, never backed off, three retransmissions.
//! struct FixedRto;
//! impl CongestionControl for FixedRto {
//!     fn name(&self) -> &'static str { "fixed-rto" }
//!     fn max_retransmit(&self) -> u32 { 3 }
//!     fn reset(&mut self, _now: Instant) {}
//!     fn start_exchange(&mut self, now: Instant, _in_flight: u32, _rng: &mut dyn Entropy) -> Exchange {
//!         Exchange::begin(now, Duration::from_secs(3), Duration::from_secs(3))
//!     }
//!     fn on_timeout(&mut self, _now: Instant, ex: &mut Exchange) -> TimeoutAction {
//!         if ex.retransmissions() >= 3 { return TimeoutAction::GiveUp; }
//!         ex.record_retransmission(Duration::from_secs(3));
//!         TimeoutAction::Retransmit(Duration::from_secs(3))
//!     }
//!     fn on_ack(&mut self, _now: Instant, _ex: &Exchange, _ack: &AckInfo) {}
//!     fn on_give_up(&mut self, _now: Instant, _ex: &Exchange, _why: GiveUpReason) {}
//!     fn snapshot(&self) -> Snapshot { Snapshot { rto: Duration::from_secs(3), ..Snapshot::default() } }
//! }
//! struct Fixed;
//! impl ControllerFactory for Fixed {
//!     fn build(&self) -> Box<dyn CongestionControl + Send> { Box::new(FixedRto) }
//!     fn describe(&self) -> String { "fixed-rto".into() }
//! }
//!
//! let mut client = Endpoint::<u8>::with_seed(EndpointConfig::default(), 1).with_controller(Arc::new(Fixed));
//! let now = Instant::ZERO;
//! client.request(now, 2, Request::get("/hello"));
//! client.poll_transmit(now).unwrap();
//! assert_eq!(client.poll_timeout(), Some(now + Duration::from_secs(3)));
//! ```

use std::boxed::Box;
use std::string::{String, ToString};

use coapcc_cc::{
    AckInfo, Algorithm, AlgorithmConfig, CongestionControl, Entropy, Exchange, GiveUpReason, Instant, Snapshot,
    TimeoutAction,
};

/// Makes one fresh congestion-control instance per destination (per client in the
/// simulator). Implemented by [`AlgorithmConfig`] (the registry) and by anything a user
/// writes.
pub trait ControllerFactory: Send + Sync {
    /// A fresh instance.
    fn build(&self) -> Box<dyn CongestionControl + Send>;
    /// A one-line description (the canonical text for registry algorithms), for reports.
    fn describe(&self) -> String;
    /// The registry configuration when this factory is one, so that callers can dispatch
    /// statically ([`Controller::Registry`]). Default: `None`.
    fn registry(&self) -> Option<&AlgorithmConfig> {
        None
    }
}

impl ControllerFactory for AlgorithmConfig {
    fn build(&self) -> Box<dyn CongestionControl + Send> {
        Box::new(AlgorithmConfig::build(self))
    }
    fn describe(&self) -> String {
        self.to_string()
    }
    fn registry(&self) -> Option<&AlgorithmConfig> {
        Some(self)
    }
}

/// One congestion-control instance: a registry algorithm (static dispatch) or one built by
/// an external [`ControllerFactory`] (one dynamic call per event).
// The registry variant is stored inline on purpose: no indirection on the hot path.
#[allow(clippy::large_enum_variant)]
pub enum Controller {
    /// A registry algorithm.
    Registry(Algorithm),
    /// An algorithm from outside the registry.
    Custom(Box<dyn CongestionControl + Send>),
}

impl Controller {
    /// A fresh instance from `factory` (a registry one when the factory is the registry).
    pub fn from_factory(factory: &dyn ControllerFactory) -> Controller {
        match factory.registry() {
            Some(a) => Controller::Registry(a.build()),
            None => Controller::Custom(factory.build()),
        }
    }
}

impl From<Algorithm> for Controller {
    fn from(a: Algorithm) -> Self {
        Controller::Registry(a)
    }
}

impl core::fmt::Debug for Controller {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Controller::Registry(a) => f.debug_tuple("Registry").field(&a.name()).finish(),
            Controller::Custom(c) => f.debug_tuple("Custom").field(&c.name()).finish(),
        }
    }
}

macro_rules! delegate {
    ($self:ident, $c:ident => $e:expr) => {
        match $self {
            Controller::Registry($c) => $e,
            Controller::Custom($c) => $e,
        }
    };
}

impl CongestionControl for Controller {
    fn name(&self) -> &'static str {
        delegate!(self, c => c.name())
    }
    fn max_retransmit(&self) -> u32 {
        delegate!(self, c => c.max_retransmit())
    }
    fn reset(&mut self, now: Instant) {
        delegate!(self, c => c.reset(now))
    }
    fn start_exchange(&mut self, now: Instant, in_flight: u32, rng: &mut dyn Entropy) -> Exchange {
        delegate!(self, c => c.start_exchange(now, in_flight, rng))
    }
    fn on_timeout(&mut self, now: Instant, ex: &mut Exchange) -> TimeoutAction {
        delegate!(self, c => c.on_timeout(now, ex))
    }
    fn on_ack(&mut self, now: Instant, ex: &Exchange, ack: &AckInfo) {
        delegate!(self, c => c.on_ack(now, ex, ack))
    }
    fn on_give_up(&mut self, now: Instant, ex: &Exchange, reason: GiveUpReason) {
        delegate!(self, c => c.on_give_up(now, ex, reason))
    }
    fn uses_copy_id(&self) -> bool {
        delegate!(self, c => c.uses_copy_id())
    }
    fn earliest_start(&self, now: Instant) -> Instant {
        delegate!(self, c => c.earliest_start(now))
    }
    fn snapshot(&self) -> Snapshot {
        delegate!(self, c => c.snapshot())
    }
}

/// A factory from a closure, for quick experiments: `FnFactory::new("fixed-rto", || Box::new(FixedRto))`.
pub struct FnFactory<F> {
    name: String,
    make: F,
}

impl<F: Fn() -> Box<dyn CongestionControl + Send> + Send + Sync> FnFactory<F> {
    /// A factory described as `name` that calls `make` for each instance.
    pub fn new(name: impl ToString, make: F) -> Self {
        FnFactory { name: name.to_string(), make }
    }
}

impl<F: Fn() -> Box<dyn CongestionControl + Send> + Send + Sync> ControllerFactory for FnFactory<F> {
    fn build(&self) -> Box<dyn CongestionControl + Send> {
        (self.make)()
    }
    fn describe(&self) -> String {
        self.name.clone()
    }
}
