//! A population large enough for the engine to load client state ahead (from 4 096 clients)
//! and congested enough that late duplicates reach exchange records after their exchange
//! ended (the records fold away only once no packet can reach them): the compact model's
//! results must equal the full model's, which keeps every record and loads nothing ahead.

use coapcc_sim::{simulate, EndpointModel, GroupConfig, SimConfig};

#[test]
fn a_large_congested_population_matches_the_full_model() {
    let mut cfg = SimConfig {
        seed: 7,
        groups: vec![GroupConfig { cc: "default:preset=helsinki2018".into(), clients: 4_200 }],
        ..SimConfig::default()
    };
    cfg.workload.exchanges = 2;
    cfg.link.set_buffer_bytes(1_410_000);
    let compact = simulate(&cfg).expect("valid scenario");
    cfg.endpoint.model = EndpointModel::Full;
    let full = simulate(&cfg).expect("valid scenario");
    assert_eq!(compact.outcome_json(), full.outcome_json());
    // The scenario does what it is for: retransmissions, some of them unnecessary.
    let g = &compact.groups[0];
    assert!(g.retransmissions > 1_000, "{} retransmissions", g.retransmissions);
    assert!(g.unnecessary_retransmissions > 0);
    assert_eq!(g.finished_flows, 4_200);
}
