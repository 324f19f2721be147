//! Workloads: what the clients do.
//!
//! - [`FlowPlan`] (testbed spec §2): a closed-loop flow, a small per-client state machine
//!   asked two questions: how the flow starts, and what comes after an exchange ended
//!   (success or failure). The answer says when the next exchange starts and whether the
//!   congestion-control state is reset first (continuous, random batches, one bulk transfer).
//! - [`messages::Messages`]: the open-loop message workload (periodic monitoring, global
//!   events): messages arrive on their own schedule and are cut into units, each one
//!   exchange.
//!
//! Both are pure state machines; the engine hosts them (`engine::workload`).

use coapcc_cc::{Entropy, SplitMix64};

use crate::config::{FailedPolicy, WorkloadConfig, WorkloadKind};

pub mod messages;

/// The next step of a client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// The flow is finished.
    Done,
    /// Nothing to send until the workload's next arrival (open-loop workloads).
    Idle,
    /// Start another exchange `delay_ns` from now, after `reset()` if `reset`.
    Exchange {
        /// Wait before the next exchange (0 for back-to-back workloads).
        delay_ns: u64,
        /// Call `reset()` on the algorithm first (a new short-lived client).
        reset: bool,
    },
}

/// Uniform integer in `[lo, hi]` (multiply-high; bias < 2^-60 for small spans).
pub fn uniform_u64(rng: &mut SplitMix64, lo: u64, hi: u64) -> u64 {
    let span = (hi - lo) as u128 + 1;
    lo + ((rng.next_u64() as u128 * span) >> 64) as u64
}

/// The flow kinds a [`FlowPlan`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FlowKind {
    /// Back to back (continuous, and the one exchange of a bulk transfer).
    Continuous,
    /// Random batches.
    Random,
}

/// One client's position in its closed-loop flow.
#[derive(Clone, Debug)]
pub struct FlowPlan {
    kind: FlowKind,
    policy: FailedPolicy,
    batch_min: u32,
    batch_max: u32,
    /// Exchanges still to do (successes, or attempts with `FailedPolicy::Count`).
    remaining: u32,
    /// Random workload: exchanges left in the current batch.
    batch_left: u32,
    rng: SplitMix64,
}

impl FlowPlan {
    /// A flow of `cfg.exchanges` exchanges drawing batch sizes from `rng` (a bulk transfer
    /// is one exchange; the open-loop kinds have no flow plan: one exchange, continuous).
    pub fn new(cfg: &WorkloadConfig, rng: SplitMix64) -> Self {
        FlowPlan {
            kind: if cfg.kind == WorkloadKind::Random { FlowKind::Random } else { FlowKind::Continuous },
            policy: cfg.failed_exchanges,
            batch_min: cfg.batch_min,
            batch_max: cfg.batch_max,
            remaining: if matches!(cfg.kind, WorkloadKind::Continuous | WorkloadKind::Random) {
                cfg.exchanges
            } else {
                1
            },
            batch_left: 0,
            rng,
        }
    }

    fn new_batch(&mut self) {
        let b = uniform_u64(&mut self.rng, self.batch_min as u64, self.batch_max as u64) as u32;
        self.batch_left = b.min(self.remaining);
    }

    /// The flow starts: the first exchange, with `reset` for the random workload's first
    /// batch (spec §11: `reset()` at flow start and at every batch boundary).
    pub fn start(&mut self) -> Next {
        match self.kind {
            FlowKind::Continuous => Next::Exchange { delay_ns: 0, reset: false },
            FlowKind::Random => {
                self.new_batch();
                Next::Exchange { delay_ns: 0, reset: true }
            }
        }
    }

    /// An exchange ended (`success` = its response arrived).
    pub fn after(&mut self, success: bool) -> Next {
        if success || self.policy == FailedPolicy::Count {
            self.remaining -= 1;
            self.batch_left = self.batch_left.saturating_sub(1);
        }
        if self.remaining == 0 {
            return Next::Done;
        }
        match self.kind {
            FlowKind::Continuous => Next::Exchange { delay_ns: 0, reset: false },
            FlowKind::Random => {
                if self.batch_left == 0 {
                    self.new_batch();
                    Next::Exchange { delay_ns: 0, reset: true }
                } else {
                    Next::Exchange { delay_ns: 0, reset: false }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_batches_cover_the_flow_exactly() {
        let cfg = WorkloadConfig { kind: WorkloadKind::Random, ..WorkloadConfig::default() };
        for seed in 0..200 {
            let mut p = FlowPlan::new(&cfg, SplitMix64::new(seed));
            let mut resets = 0;
            let mut batch = 0;
            let mut batches = vec![];
            let mut next = p.start();
            let mut done = 0;
            loop {
                match next {
                    Next::Done | Next::Idle => break,
                    Next::Exchange { reset, .. } => {
                        if reset {
                            resets += 1;
                            if batch > 0 {
                                batches.push(batch);
                            }
                            batch = 0;
                        }
                        batch += 1;
                        done += 1;
                        next = p.after(true);
                    }
                }
            }
            batches.push(batch);
            assert_eq!(done, 50);
            assert_eq!(resets, batches.len());
            assert!(batches.iter().all(|b| (1..=10).contains(b)), "{batches:?}");
            assert_eq!(batches.iter().sum::<u32>(), 50);
        }
    }

    #[test]
    fn failures_are_replaced_or_counted() {
        let cfg = WorkloadConfig { exchanges: 2, ..WorkloadConfig::default() };
        let mut p = FlowPlan::new(&cfg, SplitMix64::new(1));
        p.start();
        assert!(matches!(p.after(false), Next::Exchange { .. }));
        assert!(matches!(p.after(true), Next::Exchange { .. }));
        assert_eq!(p.after(true), Next::Done);
        let cfg = WorkloadConfig { exchanges: 2, failed_exchanges: FailedPolicy::Count, ..WorkloadConfig::default() };
        let mut p = FlowPlan::new(&cfg, SplitMix64::new(1));
        p.start();
        assert!(matches!(p.after(false), Next::Exchange { .. }));
        assert_eq!(p.after(true), Next::Done);
    }

    #[test]
    fn uniform_bounds() {
        let mut r = SplitMix64::new(3);
        let mut seen = [false; 10];
        for _ in 0..10_000 {
            let v = uniform_u64(&mut r, 1, 10);
            seen[v as usize - 1] = true;
        }
        assert!(seen.iter().all(|s| *s));
    }
}
