use super::summary::default_bound;
use super::*;

#[test]
fn the_summary_tells_the_default_bound_from_a_given_one() {
    let mut c =
        SimConfig { groups: vec![GroupConfig { cc: "default".into(), clients: 100_000 }], ..SimConfig::default() };
    let scaled = c.resolved().unwrap();
    assert!(scaled.max_sim_time_s > crate::config::DEFAULT_MAX_SIM_TIME_S);
    assert!(default_bound(&scaled));
    c.groups[0].clients = 10;
    assert!(default_bound(&c.resolved().unwrap()));
    c.max_sim_time_s = 50.0;
    assert!(!default_bound(&c.resolved().unwrap()));
}

#[test]
fn clients_split() {
    assert_eq!(parse_clients("5", 2).unwrap(), vec![3, 2]);
    assert_eq!(parse_clients("4,6", 2).unwrap(), vec![4, 6]);
    assert_eq!(parse_clients("7", 1).unwrap(), vec![7]);
    assert!(parse_clients("1,2,3", 2).is_err());
    assert!(parse_clients("x", 1).is_err());
}

#[test]
fn progress_lines_are_rate_limited() {
    let p = crate::Progress { events: 5, sim_time_s: 1.5, finished: 2, flows: 10 };
    let mut pr = ProgressPrinter::default();
    assert!(pr.line(0.0, &p).is_none() && pr.line(2.9, &p).is_none());
    let l = pr.line(3.0, &p).unwrap();
    assert!(l.contains("2/10 flows finished") && l.contains("5 events"), "{l}");
    // Called a thousand times a second for an hour: a bounded number of lines.
    let lines = (0..3_600_000).filter(|i| pr.line(*i as f64 / 1000.0, &p).is_some()).count();
    assert!((55..=70).contains(&lines), "{lines}");
}

#[test]
fn enums_parse_with_dashes() {
    assert_eq!(parse_enum::<DuplicateMode>("replay-cached").unwrap(), DuplicateMode::ReplayCached);
    assert_eq!(parse_workload("random").unwrap(), WorkloadKind::Random);
    assert_eq!(parse_workload("periodic:3").unwrap(), WorkloadKind::Periodic { load_kbps: 3.0 });
    assert_eq!(parse_enum::<EndpointModel>("full").unwrap(), EndpointModel::Full);
    let e = parse_workload("bursty").unwrap_err();
    assert!(e.contains("continuous") && !e.contains('\n'), "{e}");
}
