//! Differential test: the compact endpoint model and the real endpoints (`full`) give the
//! same results, bit for bit, for EVERY registry algorithm, on a fresh random seed per run.
//!
//! The seed is printed; replay a failure with
//!
//! ```text
//! COAPCC_DIFF_SEED=<seed> cargo test -p coapcc-sim --test differential -- --nocapture
//! ```

use std::hash::{BuildHasher, Hasher};

use coapcc_cc::ALGORITHMS;
use coapcc_sim::link::{ErrorClock, LossModel};
use coapcc_sim::trace::VecTrace;
use coapcc_sim::{simulate_with_trace, DuplicateMode, EndpointModel, GroupConfig, SimConfig, WorkloadKind};

/// The seed of this run: `COAPCC_DIFF_SEED`, or fresh from the OS's randomness.
fn seed() -> u64 {
    match std::env::var("COAPCC_DIFF_SEED") {
        Ok(s) => s.trim().parse().unwrap_or_else(|_| panic!("COAPCC_DIFF_SEED={s:?} is not a u64")),
        Err(_) => {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u64(std::process::id() as u64);
            h.finish()
        }
    }
}

fn results(r: &coapcc_sim::SimReport) -> serde_json::Value {
    r.outcome_json()
}

#[test]
fn compact_and_full_agree_for_every_algorithm() {
    let seed = seed();
    eprintln!("differential test seed: {seed} (replay: COAPCC_DIFF_SEED={seed})");
    // Scenario knobs drawn from the seed too, so that runs explore different corners.
    let mut k = coapcc_cc::SplitMix64::new(seed);
    use coapcc_cc::Entropy;
    let mut pick = |n: u64| k.next_u64() % n;
    let workload = if pick(2) == 0 { WorkloadKind::Continuous } else { WorkloadKind::Random };
    let buffer = [800u64, 2_500, 1_410_000][pick(3) as usize];
    let errors = ["none", "low", "medium", "high"][pick(4) as usize];
    let clock = if pick(2) == 0 { ErrorClock::Time } else { ErrorClock::Packet };
    let dup = if pick(2) == 0 { DuplicateMode::AnswerEachCopy } else { DuplicateMode::ReplayCached };
    let clients = 5 + pick(20) as u32;
    let what = format!(
        "seed {seed}: {workload:?}, buffer {buffer}, errors {errors} ({clock:?}), {dup:?}, {clients} clients \
         (replay: COAPCC_DIFF_SEED={seed})"
    );
    eprintln!("{what}");
    for alg in ALGORITHMS {
        let mut c =
            SimConfig { seed, groups: vec![GroupConfig { cc: alg.name.into(), clients }], ..SimConfig::default() };
        c.workload.kind = workload;
        c.workload.exchanges = 8;
        c.link.set_buffer_bytes(buffer);
        c.link.set_loss(&LossModel::profile(errors, clock, 5.0).unwrap());
        c.server.duplicate_mode = dup;
        let mut out = Vec::new();
        for model in [EndpointModel::Compact, EndpointModel::Full] {
            c.endpoint.model = model;
            let mut t = VecTrace::default();
            let r = simulate_with_trace(&c, &mut t).unwrap_or_else(|e| panic!("{}: {e}", alg.name));
            out.push((results(&r), t.records));
        }
        assert_eq!(out[0].0, out[1].0, "{}: reports differ; {what}", alg.name);
        assert_eq!(out[0].1, out[1].1, "{}: traces differ; {what}", alg.name);
    }
}
