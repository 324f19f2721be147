//! `coapcc simulate`'s command line: one meaning per name, shared transmission parameters set
//! once for every group, group labels, the summary's side-by-side table, and the refusal of
//! impossible or malformed simulations (clean one-line errors, never a panic or a hang).

use clap::Parser;
use coapcc_cc::AlgorithmConfig;
use coapcc_sim::cli::{self, SimulateArgs};
use coapcc_sim::SimConfig;
use proptest::prelude::*;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    a: SimulateArgs,
}

fn parse(args: &[&str]) -> anyhow::Result<SimulateArgs> {
    Ok(Cli::try_parse_from(std::iter::once("simulate").chain(args.iter().copied()))?.a)
}

fn run(args: &[&str]) -> anyhow::Result<String> {
    let mut out = Vec::new();
    cli::run(&parse(args)?, &mut out)?;
    Ok(String::from_utf8(out).unwrap())
}

fn config(args: &[&str]) -> SimConfig {
    serde_json::from_str(&run(&[args, &["--print-config"]].concat()).unwrap()).unwrap()
}

/// The resolved canonical spec of every group.
fn specs(args: &[&str]) -> Vec<String> {
    config(args).groups.into_iter().map(|g| g.cc).collect()
}

fn shared(spec: &str, name: &str) -> String {
    AlgorithmConfig::parse(spec).unwrap().shared_value(name).unwrap().to_string()
}

fn err(args: &[&str]) -> String {
    let e = format!("{:#}", run(args).expect_err("should be refused"));
    assert!(!e.contains('\n'), "{args:?}: multi-line error {e}");
    e
}

#[test]
fn no_cc_means_default_with_rfc7252_parameters() {
    let s = specs(&[]);
    assert_eq!(s, vec![AlgorithmConfig::parse("default").unwrap().to_string()]);
    assert_eq!(shared(&s[0], "max_retransmit"), "4");
    assert_eq!(specs(&[]), specs(&["--cc", "default"]));
    assert_ne!(specs(&[]), specs(&["--cc", "default:preset=helsinki2018"]));
}

#[test]
fn shared_parameters_apply_to_every_group_after_the_preset_before_own_items() {
    // The profile's MAX_RETRANSMIT 20 for every group, each keeping its other defaults.
    let s = specs(&["--cc", "default", "--cc", "cocoa", "--cc", "fasor", "--profile", "helsinki2018"]);
    for (spec, alg) in s.iter().zip(["default", "cocoa", "fasor"]) {
        assert_eq!(shared(spec, "max_retransmit"), "20", "{spec}");
        assert_eq!(shared(spec, "ack_timeout"), "2", "{spec}");
        // Not the preset: its other settings (e.g. Default CoAP's libcoap dither) stay the algorithm's own.
        assert_eq!(shared(spec, "dither"), shared(alg, "dither"), "{spec}");
    }
    // Order: preset, profile, flags, then the group's own key=value.
    let s = specs(&[
        "--cc",
        "default-fb1:preset=rfc7252",
        "--cc",
        "cocoa:max_retransmit=6",
        "--profile",
        "helsinki2018",
        "--ack-timeout",
        "3",
    ]);
    assert_eq!((shared(&s[0], "max_retransmit"), shared(&s[0], "ack_timeout")), ("20".into(), "3".into()));
    assert_eq!((shared(&s[1], "max_retransmit"), shared(&s[1], "ack_timeout")), ("6".into(), "3".into()));
    // The flag wins over the profile; the run-wide preset is the same as writing it in the spec.
    let s = specs(&["--cc", "default", "--profile", "helsinki2018", "--max-retransmit", "7"]);
    assert_eq!(shared(&s[0], "max_retransmit"), "7");
    assert_eq!(specs(&["--cc", "cocoa", "--preset", "helsinki2018"]), specs(&["--cc", "cocoa:preset=helsinki2018"]));
    // Every shared parameter by its own name, through each algorithm's own key (CoCoA's `cap`).
    let s = specs(&[
        "--cc",
        "default",
        "--cc",
        "cocoa",
        "--ack-random-factor",
        "1.25",
        "--dither",
        "off",
        "--wait-after-last",
        "off",
        "--backoff-cap",
        "60",
    ]);
    for spec in &s {
        assert_eq!(shared(spec, "ack_random_factor"), "1.25");
        assert_eq!(shared(spec, "dither"), "off");
        assert_eq!(shared(spec, "wait_after_last"), "off");
        assert_eq!(shared(spec, "backoff_cap"), "60");
    }
    assert!(s[1].contains("cap=60"), "{}", s[1]);
    // Without any of these flags, explicit specs are passed through untouched.
    let c = config(&["--cc", "default:preset=helsinki2018"]);
    assert_eq!(c.groups[0].cc, AlgorithmConfig::parse("default:preset=helsinki2018").unwrap().to_string());
}

#[test]
fn labels_reach_the_json_groups_and_the_summary() {
    let args = ["--cc", "fasor=fasor:preset=helsinki2018", "--cc", "default", "--clients", "2", "--exchanges", "3"];
    let j: serde_json::Value = serde_json::from_str(&run(&[&args[..], &["--json"]].concat()).unwrap()).unwrap();
    let g = &j["groups"];
    assert_eq!(g[0]["label"], "fasor");
    assert!(g[1].get("label").is_none(), "no label, no key: {}", g[1]);
    let canonical = AlgorithmConfig::parse("fasor:preset=helsinki2018").unwrap().to_string();
    assert_eq!(g[0]["cc"], canonical.as_str());
    // The configuration keeps the label (it re-runs with it).
    assert_eq!(j["config"]["groups"][0]["cc"], format!("fasor={canonical}").as_str());
    let s = run(&args).unwrap();
    assert!(s.contains("group 0 fasor (1 client):"), "{s}");
    assert!(s.starts_with("seed 1: 2 clients,"), "{s}");
    // The side-by-side table: MAX_RETRANSMIT 20 against 4 is marked.
    let row = s.lines().find(|l| l.starts_with("max_retransmit")).unwrap();
    assert!(row.contains("20") && row.contains('4') && row.ends_with("<- differs"), "{row}");
    let row = s.lines().find(|l| l.starts_with("ack_timeout")).unwrap();
    assert!(!row.contains("differs"), "{row}");
    // Same parameters everywhere: nothing differs.
    let s = run(&["--cc", "default", "--cc", "default-fb1", "--profile", "helsinki2018", "--exchanges", "2"]).unwrap();
    assert!(s.lines().any(|l| l.starts_with("shared parameters")), "{s}");
    assert!(!s.contains("differs"), "{s}");
    for bad in ["=fasor", " =default"] {
        assert!(err(&["--cc", bad]).contains("label"), "{bad}");
    }
}

#[test]
fn the_summary_says_one_client_not_one_clients() {
    let s = run(&["--exchanges", "2"]).unwrap();
    assert!(s.starts_with("seed 1: 1 client, "), "{s}");
    assert!(s.contains("(1 client)"), "{s}");
    assert!(!s.contains("1 clients") && !s.contains(" 1 events"), "{s}");
    assert!(s.contains("0 retransmissions") && s.contains("0 failed exchanges"), "{s}");
}

#[test]
fn impossible_or_malformed_simulations_are_refused() {
    // Empty key=value items.
    for cc in ["default:,", "default: , ", "default:max_retransmit=4,", "default:,max_retransmit=4"] {
        assert!(err(&["--cc", cc]).contains("empty key=value item"), "{cc}");
    }
    // A timer below the floor.
    let e = err(&["--cc", "default:ack_timeout=1e-9"]);
    assert!(e.contains("ack_timeout") && e.contains(">= 0.001"), "{e}");
    let e = err(&["--ack-timeout", "1e-9"]);
    assert!(e.contains("ack_timeout") && e.contains(">= 0.001"), "{e}");
    // Memory: a million real endpoints.
    let e = err(&["--endpoint", "full", "--clients", "1000000"]);
    assert!(e.contains("MB of memory") && e.contains("compact"), "{e}");
    // Bad flags.
    assert!(err(&["--profile", "helsinky"]).contains("unknown profile 'helsinky'"));
    assert!(err(&["--preset", "x"]).contains("unknown preset 'x'"));
    assert!(err(&["--max-retransmit", "4,dither=off"]).contains("--max-retransmit"));
    assert!(err(&["--max-retransmit=-1"]).contains("max_retransmit"));
    assert!(err(&["--max-events", "0"]).contains("max_events: must be >= 1"));
    // Bounds worded as Python words them.
    for (args, needle) in [
        (&["--exchanges", "0"][..], "workload.exchanges: must be >= 1, got 0"),
        (&["--start-jitter-ms=-1"][..], "workload.start_jitter_ms: must be >= 0, got -1"),
        (&["--start-jitter-ms", "NaN"][..], "workload.start_jitter_ms: must be finite, got NaN"),
        (&["--server-delay-ms=-0.5"][..], "server.processing_delay_ms: must be >= 0, got -0.5"),
        (&["--max-sim-time-s", "0"][..], "max_sim_time_s: must be > 0, got 0"),
        (&["--max-sim-time-s", "inf"][..], "max_sim_time_s: must be finite, got inf"),
    ] {
        let e = err(args);
        assert!(e.contains(needle), "{args:?}: {e}");
    }
    // Config files: an object, with at least one group.
    let dir = std::env::temp_dir().join(format!("coapcc-cli-flags-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("c.json");
    let p = path.to_str().unwrap();
    for (text, needle) in [
        (r#"[1, [], {}]"#, "must be a JSON object"),
        (r#""seed""#, "must be a JSON object"),
        (r#"{"groups": []}"#, "at least one client group"),
    ] {
        std::fs::write(&path, text).unwrap();
        let e = err(&["--config", p]);
        assert!(e.contains(needle), "{text}: {e}");
    }
    // An empty group list is fine when --cc gives the groups.
    std::fs::write(&path, r#"{"groups": [], "workload": {"exchanges": 2}}"#).unwrap();
    run(&["--config", p, "--cc", "cocoa"]).unwrap();
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_event_budget_stops_endless_runs_with_a_clear_error() {
    // 2 ms timers on a 600 ms path: every exchange fails and is replaced, forever.
    let e = err(&["--cc", "default:ack_timeout=0.002", "--max-events", "100000"]);
    assert!(e.contains("budget of 100000 events") && e.contains("--max-events"), "{e}");
    // The default budget scales with the work.
    let c = config(&["--clients", "10", "--exchanges", "20"]);
    assert_eq!(c.max_events, None);
    assert_eq!(
        c.event_budget(),
        coapcc_sim::config::DEFAULT_EVENTS_BASE + coapcc_sim::config::DEFAULT_EVENTS_PER_EXCHANGE * 200
    );
    // A budget large enough changes nothing in the results.
    let strip = |s: String| {
        let mut v: serde_json::Value = serde_json::from_str(&s).unwrap();
        v["wall_s"] = 0.into();
        v["config"].as_object_mut().unwrap().remove("max_events");
        v
    };
    let base = ["--clients", "20", "--buffer", "2500", "--exchanges", "5", "--json"];
    let a = strip(run(&base).unwrap());
    let b = strip(run(&[&base[..], &["--max-events", "1000000"]].concat()).unwrap());
    assert_eq!(a, b);
    let events = a["events"].as_u64().unwrap();
    let e = err(&[&base[..], &["--max-events", &(events - 1).to_string()]].concat());
    assert!(e.contains(&format!("budget of {} events", events - 1)), "{e}");
    run(&[&base[..], &["--max-events", &events.to_string()]].concat()).unwrap();
}

const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "0.5",
    "1e-9",
    "1e-300",
    "1e300",
    "1e308",
    "-0",
    "NaN",
    "nan",
    "inf",
    "-inf",
    "",
    " ",
    "18446744073709551615",
    "18446744073709551616",
    "4294967295",
    "4294967296",
    "99999999999",
    "abc",
    "1,2",
    "=",
    ",",
    ":",
    "0x10",
];

fn number() -> impl Strategy<Value = String> {
    prop::sample::select(NUMBERS).prop_map(str::to_string)
}

fn specs_strategy() -> impl Strategy<Value = String> {
    prop::sample::select(
        &[
            "default",
            "cocoa",
            "fasor=fasor:preset=helsinki2018",
            "default:,",
            "",
            "=",
            ":",
            "default:ack_timeout=",
            "default:max_retransmit=1e300",
            "default:ack_random_factor=NaN",
            "default:ack_timeout=-1",
            "linux-rto:preset=helsinki2018",
            "default:preset=nope",
            "x=y=z",
        ][..],
    )
    .prop_map(str::to_string)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Extreme values on every numeric flag: a clean one-line error or a run that ends,
    /// never a panic.
    #[test]
    fn extreme_arguments_give_errors_or_bounded_runs(
        flags in prop::collection::vec((0usize..16, number()), 0..5),
        cc in prop::option::of(specs_strategy()),
    ) {
        const NAMES: [&str; 16] = [
            "--clients", "--exchanges", "--buffer", "--seed", "--start-jitter-ms", "--server-delay-ms",
            "--max-sim-time-s", "--token-len", "--payload-bytes", "--ack-timeout", "--ack-random-factor",
            "--max-retransmit", "--backoff-cap", "--max-events", "--ip-version", "--burst-packets",
        ];
        let mut args: Vec<String> = Vec::new();
        if let Some(cc) = cc {
            args.extend(["--cc".to_string(), cc]);
        }
        for (i, v) in flags {
            args.push(format!("{}={v}", NAMES[i]));
        }
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let Ok(a) = parse(&argv) else { return Ok(()) }; // clap's own error: fine
        match cli::build_config(&a) {
            Err(e) => prop_assert!(!format!("{e:#}").contains('\n'), "{args:?}: {e:#}"),
            Ok(mut cfg) => {
                // Bound the run's size so the property stays quick; the checks above ran on
                // the full values.
                if cfg.total_clients() > 200 || cfg.workload.exchanges > 200 {
                    return Ok(());
                }
                cfg.max_events = Some(cfg.event_budget().min(200_000));
                match coapcc_sim::simulate(&cfg) {
                    Ok(r) => prop_assert!(r.events <= 200_000),
                    Err(e) => prop_assert!(!e.to_string().contains('\n'), "{args:?}: {e}"),
                }
            }
        }
    }
}

#[test]
fn the_default_time_bound_scales_with_the_work() {
    // Small populations keep the documented 100 000 s.
    assert_eq!(config(&["--clients", "400", "--buffer", "1410000"]).max_sim_time_s, 100_000.0);
    // 100 000 clients x 50 exchanges of 94-byte responses on 30 kbit/s need 1.25e6 s of
    // serialisation alone: the bound grows to 20 times that instead of truncating the run.
    let big = config(&["--clients", "100000"]);
    assert!(
        (big.max_sim_time_s - 20.0 * 100_000.0 * 50.0 * 94.0 * 8.0 / 30_000.0).abs() < 1.0,
        "{}",
        big.max_sim_time_s
    );
    // An explicit bound is the user's.
    assert_eq!(config(&["--clients", "100000", "--max-sim-time-s", "50"]).max_sim_time_s, 50.0);
    // The summary says which bound ended the run.
    let s = run(&["--exchanges", "3"]).unwrap();
    assert!(s.trim_end().ends_with("ended: every flow finished"), "{s}");
    let s = run(&["--exchanges", "50", "--max-sim-time-s", "5"]).unwrap();
    assert!(s.contains("TRUNCATED: the run reached max_sim_time_s (5 s)"), "{s}");
    assert!(s.trim_end().ends_with("ended: max_sim_time_s reached"), "{s}");
    assert!(s.contains("the bound given; raise --max-sim-time-s"), "{s}");
}

/// A population that needs more than the old fixed 100 000 s finishes instead of being
/// truncated: 25 clients x 50 exchanges behind 375 000 bytes of link-layer overhead per packet
/// (100 s per response on the 30 kbit/s downlink) need 125 000 s of downlink serialisation; a
/// 5 000 s ACK_TIMEOUT keeps the copies single.
#[test]
fn a_population_needing_more_than_100000_s_finishes() {
    let args = ["--clients", "25", "--overhead-bytes", "375000", "--buffer", "20000000", "--ack-timeout", "5000"];
    let c = config(&args);
    assert!(c.max_sim_time_s > 2_000_000.0, "{}", c.max_sim_time_s);
    let s = run(&args).unwrap();
    assert!(!s.contains("TRUNCATED") && s.trim_end().ends_with("ended: every flow finished"), "{s}");
    assert!(s.contains("finished 25/25") && s.contains(" 0 retransmissions"), "{s}");
    let sim: f64 = s.split("simulated ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    assert!(sim > 100_000.0, "{sim}");
    // With the old fixed bound the same run is cut short.
    let s = run(&[&args[..], &["--max-sim-time-s", "99999"]].concat()).unwrap();
    assert!(s.contains("TRUNCATED"), "{s}");
}

#[test]
fn the_preset_applies_to_every_transport_or_is_refused() {
    use coapcc_tcp::{Preset, TcpCcConfig};
    let h18 = |name: &str| TcpCcConfig::parse(name).unwrap().with_preset(Preset::Helsinki2018).unwrap().to_string();
    // UDP, with the compact and the full endpoint model: the preset's values.
    let udp = specs(&["--cc", "cocoa", "--preset", "helsinki2018"]);
    assert_eq!(udp, specs(&["--cc", "cocoa:preset=helsinki2018"]));
    assert_eq!(shared(&udp[0], "max_retransmit"), "20");
    assert_eq!(udp, specs(&["--cc", "cocoa", "--preset", "helsinki2018", "--endpoint", "full"]));
    // The mesh: the same algorithms, the same preset.
    assert_eq!(udp, specs(&["--cc", "cocoa", "--preset", "helsinki2018", "--mesh", "grid:3"]));
    // TCP: the preset reaches newreno and bbr (it used to be dropped: Linux's IW 10 and 1 s
    // initial RTO ran instead), for every group, and a spec's own preset still wins.
    let tcp = specs(&["--transport", "tcp", "--cc", "newreno", "--cc", "bbr", "--preset", "helsinki2018"]);
    assert_eq!(tcp, vec![h18("newreno"), h18("bbr")]);
    assert!(tcp[0].starts_with("newreno:preset=helsinki2018,") && tcp[0].contains(",iw=4,"), "{}", tcp[0]);
    let own = specs(&["--transport", "tcp", "--cc", "newreno:preset=linux,iw=2", "--preset", "helsinki2018"]);
    assert!(own[0].starts_with("newreno:preset=linux,") && own[0].contains(",iw=2,"), "{}", own[0]);
    // A bare name runs Linux's defaults and says so.
    let bare = specs(&["--transport", "tcp", "--cc", "bbr"]);
    assert!(bare[0].starts_with("bbr:preset=linux,") && bare[0].contains(",iw=10,init_rto=1,"), "{}", bare[0]);
    // Refused with a message: a preset without TCP settings, and UDP transmission parameters.
    let e = err(&["--transport", "tcp", "--cc", "newreno", "--preset", "rfc7252"]);
    assert!(e.contains("preset 'rfc7252' defines no settings for newreno"), "{e}");
    let e = err(&["--transport", "tcp", "--cc", "newreno", "--profile", "helsinki2018"]);
    assert!(e.contains("ack_timeout is a CoAP-over-UDP transmission parameter"), "{e}");
    let e = err(&["--transport", "tcp", "--cc", "bbr", "--max-retransmit", "3"]);
    assert!(e.contains("TCP congestion control"), "{e}");
}
