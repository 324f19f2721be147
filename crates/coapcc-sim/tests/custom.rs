//! Algorithms written outside the registry run in the simulator (both endpoint models)
//! through a `ControllerFactory`.

use std::sync::Arc;
use std::time::Duration;

use coapcc_cc::{
    AckInfo, AlgorithmConfig, CongestionControl, Entropy, Exchange, GiveUpReason, Instant, Snapshot, TimeoutAction,
};
use coapcc_sim::{
    simulate, simulate_custom, ControllerFactory, CustomAlgorithms, EndpointModel, FnFactory, GroupConfig, SimConfig,
    SimReport,
};

/// The worked example of `docs/custom-algorithms.md`: RFC 7252's dithered initial timer
/// (2-3 s), but the timer doubles only on every second timeout (2 s, 2 s, 4 s, 4 s, 8 s ...),
/// four retransmissions.
struct DoubleEverySecond;

impl CongestionControl for DoubleEverySecond {
    fn name(&self) -> &'static str {
        "double-every-second"
    }
    fn max_retransmit(&self) -> u32 {
        4
    }
    fn reset(&mut self, _now: Instant) {}
    fn start_exchange(&mut self, now: Instant, _in_flight: u32, rng: &mut dyn Entropy) -> Exchange {
        let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        Exchange::begin(now, Duration::from_secs_f64(2.0 + u), Duration::from_secs(2))
    }
    fn on_timeout(&mut self, _now: Instant, ex: &mut Exchange) -> TimeoutAction {
        let n = ex.retransmissions();
        if n >= 4 {
            return TimeoutAction::GiveUp;
        }
        let t = if n % 2 == 1 { 2 * ex.timer() } else { ex.timer() };
        ex.record_retransmission(t);
        TimeoutAction::Retransmit(t)
    }
    fn on_ack(&mut self, _now: Instant, _ex: &Exchange, _ack: &AckInfo) {}
    fn on_give_up(&mut self, _now: Instant, _ex: &Exchange, _why: GiveUpReason) {}
    fn snapshot(&self) -> Snapshot {
        Snapshot { rto: Duration::from_secs(2), ..Snapshot::default() }
    }
}

/// A fixed timer, never backed off.
struct FixedRto(Duration);

impl CongestionControl for FixedRto {
    fn name(&self) -> &'static str {
        "fixed-rto"
    }
    fn max_retransmit(&self) -> u32 {
        4
    }
    fn reset(&mut self, _now: Instant) {}
    fn start_exchange(&mut self, now: Instant, _in_flight: u32, _rng: &mut dyn Entropy) -> Exchange {
        Exchange::begin(now, self.0, self.0)
    }
    fn on_timeout(&mut self, _now: Instant, ex: &mut Exchange) -> TimeoutAction {
        if ex.retransmissions() >= 4 {
            return TimeoutAction::GiveUp;
        }
        ex.record_retransmission(self.0);
        TimeoutAction::Retransmit(self.0)
    }
    fn on_ack(&mut self, _now: Instant, _ex: &Exchange, _ack: &AckInfo) {}
    fn on_give_up(&mut self, _now: Instant, _ex: &Exchange, _why: GiveUpReason) {}
    fn snapshot(&self) -> Snapshot {
        Snapshot { rto: self.0, ..Snapshot::default() }
    }
}

/// A registry algorithm hidden behind `dyn` (not announced as the registry): the dynamic
/// path must give exactly the registry's results.
struct Opaque(AlgorithmConfig);

impl ControllerFactory for Opaque {
    fn build(&self) -> Box<dyn CongestionControl + Send> {
        Box::new(self.0.build())
    }
    fn describe(&self) -> String {
        format!("opaque {}", self.0)
    }
}

/// The results: everything but the wall time and the algorithm's name as configured.
fn without_wall_and_config(r: &SimReport) -> serde_json::Value {
    let mut v = r.outcome_json();
    let o = v.as_object_mut().unwrap();
    for g in o["groups"].as_array_mut().unwrap() {
        g.as_object_mut().unwrap().remove("cc");
    }
    v
}

fn scenario(groups: &[(&str, u32)], model: EndpointModel) -> SimConfig {
    let mut c = SimConfig {
        seed: 3,
        groups: groups.iter().map(|(cc, n)| GroupConfig { cc: (*cc).into(), clients: *n }).collect(),
        ..SimConfig::default()
    };
    c.workload.exchanges = 10;
    c.link.set_buffer_bytes(1_000);
    c.endpoint.model = model;
    c
}

#[test]
fn the_dynamic_path_matches_the_registry() {
    for spec in ["default:preset=helsinki2018", "cocoa", "fasor-token", "pcocoa", "default-fb2"] {
        for model in [EndpointModel::Compact, EndpointModel::Full] {
            let mut custom = CustomAlgorithms::new();
            custom.add("opaque", Arc::new(Opaque(AlgorithmConfig::parse(spec).unwrap()))).unwrap();
            let reference = simulate(&scenario(&[(spec, 12)], model)).unwrap();
            let via_dyn = simulate_custom(&scenario(&[("opaque", 12)], model), &custom, None).unwrap();
            assert_eq!(without_wall_and_config(&reference), without_wall_and_config(&via_dyn), "{spec} {model:?}");
            assert_eq!(via_dyn.config.groups[0].cc, "opaque");
            // Mixed with a registry group.
            let mixed = simulate_custom(&scenario(&[("opaque", 6), (spec, 6)], model), &custom, None).unwrap();
            let both = simulate(&scenario(&[(spec, 6), (spec, 6)], model)).unwrap();
            assert_eq!(mixed.flows.len(), 12);
            assert_eq!(
                serde_json::to_value(&mixed.flows).unwrap(),
                serde_json::to_value(&both.flows).unwrap(),
                "{spec} {model:?} mixed"
            );
        }
    }
}

#[test]
fn a_fixed_timer_below_the_rtt_retransmits_each_exchange_once() {
    // RTT ≈ 4.3 s (2 s of rest of path each way), timer 3 s: copy 1 goes out at 3 s, the
    // response to copy 0 arrives before its timer (6 s): exactly one retransmission each.
    let mut custom = CustomAlgorithms::new();
    custom.add("fixed3", Arc::new(FnFactory::new("fixed 3 s", || Box::new(FixedRto(Duration::from_secs(3)))))).unwrap();
    let mut reports = Vec::new();
    for model in [EndpointModel::Compact, EndpointModel::Full] {
        let mut c = scenario(&[("fixed3", 1)], model);
        c.link.set_buffer_bytes(1_410_000);
        c.link.set_rest_of_path_ms(2_000.0, 2_000.0);
        let r = simulate_custom(&c, &custom, None).unwrap();
        assert_eq!(r.flows[0].cc, "fixed-rto");
        assert_eq!(r.flows[0].completed_exchanges, 10);
        assert_eq!(r.flows[0].retransmissions, 10, "{model:?}");
        assert_eq!(r.flows[0].unnecessary_retransmissions, 10, "{model:?}");
        reports.push(without_wall_and_config(&r));
    }
    assert_eq!(reports[0], reports[1], "compact and full models agree");
}

#[test]
fn double_every_second_timeout_backs_off_in_steps() {
    // Everything lost: each exchange sends 5 copies, armed with T0, T0, 2·T0, 2·T0, 4·T0
    // (the timer doubles on every second timeout), and gives up.
    let mut custom = CustomAlgorithms::new();
    custom.add("des", Arc::new(FnFactory::new("double every second", || Box::new(DoubleEverySecond)))).unwrap();
    let mut c = scenario(&[("des", 1)], EndpointModel::Compact);
    c.workload.exchanges = 3;
    c.workload.failed_exchanges = coapcc_sim::FailedPolicy::Count;
    c.link.set_loss(&coapcc_sim::link::LossModel::Bernoulli { p: 1.0 });
    let mut t = coapcc_sim::trace::VecTrace::default();
    let r = simulate_custom(&c, &custom, Some(&mut t)).unwrap();
    assert_eq!(r.flows[0].failed_exchanges, 3);
    assert_eq!(t.records.len(), 3);
    for rec in &t.records {
        let timers: Vec<f64> =
            rec["transmissions"].as_array().unwrap().iter().map(|x| x["timer_s"].as_f64().unwrap()).collect();
        assert_eq!(timers.len(), 5, "{rec}");
        let t0 = timers[0];
        assert!((2.0..3.0).contains(&t0));
        let expect = [t0, t0, 2.0 * t0, 2.0 * t0, 4.0 * t0];
        for (got, want) in timers.iter().zip(expect) {
            assert!((got - want).abs() < 1e-6, "{timers:?}");
        }
    }
}

#[test]
fn custom_names_are_checked() {
    let mut custom = CustomAlgorithms::new();
    let f =
        || Arc::new(FnFactory::new("x", || Box::new(FixedRto(Duration::from_secs(1))))) as Arc<dyn ControllerFactory>;
    assert!(custom.add("cocoa", f()).unwrap_err().contains("registry"));
    assert!(custom.add("a:b", f()).is_err());
    assert!(custom.add("", f()).is_err());
    custom.add("mine", f()).unwrap();
    // A name nobody registered is an algorithm error, as before.
    let e = simulate_custom(&scenario(&[("theirs", 1)], EndpointModel::Compact), &custom, None).unwrap_err();
    assert!(e.to_string().contains("theirs"), "{e}");
    // Without the registration, the plain entry point does not know the name.
    assert!(simulate(&scenario(&[("mine", 1)], EndpointModel::Compact)).is_err());
}
