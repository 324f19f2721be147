//! Time-varying links in the simulator: a rate/loss schedule on a rate stage works with every
//! workload, changes nothing when it repeats the constant rate, and conserves packets.

use coapcc_sim::cli::{self, SimulateArgs};
use coapcc_sim::link::{RatePoint, RateSchedule, StageConfig};
use coapcc_sim::{simulate, SimConfig, WorkloadKind};

fn with_downlink_schedule(mut cfg: SimConfig, points: Vec<RatePoint>) -> SimConfig {
    cfg.link.set_schedule(false, RateSchedule { points }).unwrap();
    cfg
}

fn strip(r: &coapcc_sim::SimReport) -> serde_json::Value {
    r.outcome_json()
}

#[test]
fn a_schedule_repeating_the_constant_rate_changes_nothing() {
    for kind in [WorkloadKind::Continuous, WorkloadKind::Random] {
        let mut base = SimConfig::default();
        base.groups[0].clients = 10;
        base.workload.kind = kind;
        base.workload.exchanges = 10;
        base.link.set_buffer_bytes(2500);
        let pts = vec![
            RatePoint { at_s: 0.0, bits_per_s: 30_000, loss: 0.0 },
            RatePoint { at_s: 3.25, bits_per_s: 30_000, loss: 0.0 },
            RatePoint { at_s: 17.0, bits_per_s: 30_000, loss: 0.0 },
        ];
        let a = simulate(&base).unwrap();
        let b = simulate(&with_downlink_schedule(base.clone(), pts)).unwrap();
        let (mut sa, mut sb) = (strip(&a), strip(&b));
        // busy_s may differ by rounding (≤ 1 ps per segment); everything else is equal.
        for s in [&mut sa, &mut sb] {
            for d in ["downlink", "uplink"] {
                let l = s["links"][d].as_object_mut().unwrap();
                l.remove("busy_s");
                l.remove("busy_fraction");
            }
        }
        assert_eq!(sa, sb, "{kind:?}");
        assert!((a.links.downlink.busy_s - b.links.downlink.busy_s).abs() < 1e-9);
    }
}

#[test]
fn slower_stretches_take_longer_and_conserve_packets() {
    let mut base = SimConfig::default();
    base.groups[0].clients = 5;
    base.workload.exchanges = 20;
    let fct = |cfg: &SimConfig| {
        let r = simulate(cfg).unwrap();
        for l in [&r.links.downlink, &r.links.uplink] {
            assert_eq!(l.offered_packets, l.delivered_packets + l.buffer_drop_packets + l.error_loss_packets);
            assert_eq!(l.offered_bytes, l.delivered_bytes + l.buffer_drop_bytes + l.error_loss_bytes);
        }
        (r.groups[0].fct_s.as_ref().unwrap().median, r)
    };
    let (f0, _) = fct(&base);
    let slow = |from: f64, to: f64, loss: f64| {
        with_downlink_schedule(
            base.clone(),
            vec![
                RatePoint { at_s: from, bits_per_s: 10_000, loss },
                RatePoint { at_s: to, bits_per_s: 30_000, loss: 0.0 },
            ],
        )
    };
    let (f1, _) = fct(&slow(5.0, 15.0, 0.0));
    let (f2, _) = fct(&slow(0.0, 1000.0, 0.0));
    assert!(f0 < f1 && f1 < f2, "{f0} {f1} {f2}");
    let (_, r) = fct(&slow(5.0, 15.0, 0.2));
    assert!(r.links.downlink.error_loss_packets > 0);
    assert!(r.groups[0].retransmissions > 0);
    // Deterministic.
    assert_eq!(strip(&r), strip(&simulate(&slow(5.0, 15.0, 0.2)).unwrap()));
}

#[test]
fn cli_flag_reads_a_trace_file_and_inlines_it() {
    use clap::Parser;
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        a: SimulateArgs,
    }
    let dir = std::env::temp_dir().join(format!("coapcc-sim-sched-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("down.trace");
    std::fs::write(&f, "# time_s rate_bps loss\n0 30000\n5 10000 0.1\n15 30000\n").unwrap();
    let run = |args: &[&str]| {
        let cli = Cli::try_parse_from(std::iter::once("simulate").chain(args.iter().copied())).unwrap();
        let mut out = Vec::new();
        cli::run(&cli.a, &mut out).map(|_| String::from_utf8(out).unwrap())
    };
    let p = run(&["--print-config", "--downlink-schedule", f.to_str().unwrap(), "--buffer", "2500"]).unwrap();
    let cfg: SimConfig = serde_json::from_str(&p).unwrap();
    match &cfg.link.downlink[1] {
        StageConfig::Rate(r) => {
            assert_eq!(r.buffer_bytes, 2500);
            assert_eq!(r.schedule.as_ref().unwrap().points[1], RatePoint { at_s: 5.0, bits_per_s: 10_000, loss: 0.1 });
        }
        o => panic!("{o:?}"),
    }
    // The printed configuration runs by itself (the trace is inline now).
    assert!(simulate(&cfg).is_ok());
    let j = run(&["--json", "--uplink-schedule", "0 60000; 2 20000", "--clients", "2", "--exchanges", "3"]).unwrap();
    assert!(j.contains(r#""bits_per_s":20000"#));
    for bad in [&["--downlink-schedule", "/nonexistent/x.trace"][..], &["--uplink-schedule", "0 1000; 1 0"]] {
        let e = format!("{:#}", run(bad).unwrap_err());
        assert!(e.contains("schedule") && !e.contains('\n'), "{e}");
    }
    std::fs::remove_dir_all(&dir).ok();
}
