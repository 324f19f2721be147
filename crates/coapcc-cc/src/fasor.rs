//! PLACEHOLDER: replaced by the real implementation (compile shim only, not registered as done).
use core::fmt;
use crate::api::*;
use crate::common::Common;
use crate::params::{KvWriter, ParamInfo, Params, Preset, SetError};
use crate::rng::Entropy;
use crate::time::Instant;

/// Placeholder configuration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FasorConfig { /// RFC 7252 parameters.
 pub common: Common }
impl FasorConfig {
    /// Placeholder.
    pub fn new(token: bool) -> Self { let _ = token; FasorConfig { common: Common::default() } }
    /// Placeholder.
    pub fn build(&self) -> Fasor { Fasor { cfg: *self } }
}
impl Params for FasorConfig {
    fn set(&mut self, key: &str, value: &str) -> Result<(), SetError> { self.common.set(key, value) }
    fn write(&self, w: &mut dyn fmt::Write) -> fmt::Result { self.common.write(&mut KvWriter::new(w)) }
    fn apply_preset(&mut self, _p: Preset) -> Result<(), ()> { Err(()) }
    fn info(&self) -> &'static [ParamInfo] { &[] }
}
/// Placeholder.
#[derive(Clone, Debug)]
pub struct Fasor { cfg: FasorConfig }
impl CongestionControl for Fasor {
    fn name(&self) -> &'static str { "fasor" }
    fn max_retransmit(&self) -> u32 { self.cfg.common.max_retransmit }
    fn reset(&mut self, _now: Instant) {}
    fn start_exchange(&mut self, now: Instant, _f: u32, _r: &mut dyn Entropy) -> Exchange { Exchange::new(now, 2.0, 2.0) }
    fn on_timeout(&mut self, _now: Instant, ex: &mut Exchange) -> TimeoutAction { self.cfg.common.retransmit(ex, |e| 2.0 * e.timer) }
    fn on_ack(&mut self, _now: Instant, _ex: &Exchange, _a: &AckInfo) {}
    fn on_give_up(&mut self, _now: Instant, _ex: &Exchange, _r: GiveUpReason) {}
    fn snapshot(&self) -> Snapshot { Snapshot::default() }
}
