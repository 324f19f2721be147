//! The topology is data: groups behind their own access links.

use coapcc_sim::link::StageConfig;
use coapcc_sim::{simulate, AccessLinkConfig, EndpointModel, GroupConfig, SimConfig, TopologyConfig};

fn two_groups() -> SimConfig {
    let mut c = SimConfig {
        seed: 9,
        groups: vec![
            GroupConfig { cc: "cocoa".into(), clients: 10 },
            GroupConfig { cc: "default".into(), clients: 10 },
        ],
        ..SimConfig::default()
    };
    c.workload.exchanges = 10;
    c.link.set_buffer_bytes(1_000);
    c
}

/// Group 1 behind an access link whose downlink is `bps` bit/s (otherwise the testbed's).
fn with_access_link(mut c: SimConfig, bps: u64) -> SimConfig {
    let mut down = c.link.downlink.clone();
    for st in &mut down {
        if let StageConfig::Rate(r) = st {
            r.bits_per_s = bps;
        }
    }
    c.topology = TopologyConfig {
        access_links: vec![AccessLinkConfig { groups: vec![1], uplink: c.link.uplink.clone(), downlink: down }],
        ..Default::default()
    };
    c
}

#[test]
fn a_group_on_its_own_access_link_is_isolated() {
    // Group 0 behind `link` alone with group 1 elsewhere behaves exactly as group 0 alone:
    // same flows, same counters on its link (its random streams and queue are its own).
    let split = simulate(&with_access_link(two_groups(), 30_000)).unwrap();
    let mut alone = two_groups();
    alone.groups.truncate(1);
    let alone = simulate(&alone).unwrap();
    let j = |v: &dyn erased::Ser| v.json();
    assert_eq!(j(&split.flows[..10].to_vec()), j(&alone.flows));
    assert_eq!(j(&split.groups[0]), j(&alone.groups[0]));
    for (a, b) in [(&split.links.uplink, &alone.links.uplink), (&split.links.downlink, &alone.links.downlink)] {
        assert_eq!(
            (a.offered_packets, a.delivered_packets, a.buffer_drop_packets, a.serialised_bytes),
            (b.offered_packets, b.delivered_packets, b.buffer_drop_packets, b.serialised_bytes)
        );
    }
    // The access link carries group 1's traffic, reported separately.
    assert_eq!(split.access_links.len(), 1);
    assert_eq!(split.access_links[0].groups, vec![1]);
    let tx1: u64 = split.flows[10..].iter().map(|f| f.transmissions).sum();
    assert_eq!(split.access_links[0].links.uplink.offered_packets, tx1);
}

#[test]
fn the_access_link_s_own_rate_governs_its_groups() {
    let fast = simulate(&with_access_link(two_groups(), 30_000)).unwrap();
    let slow = simulate(&with_access_link(two_groups(), 3_000)).unwrap();
    let med = |r: &coapcc_sim::SimReport, g: usize| r.groups[g].fct_s.unwrap().median;
    assert!(med(&slow, 1) > 2.0 * med(&fast, 1), "{} vs {}", med(&slow, 1), med(&fast, 1));
    assert_eq!(med(&slow, 0), med(&fast, 0));
}

#[test]
fn both_endpoint_models_agree_on_a_topology() {
    let mut c = with_access_link(two_groups(), 10_000);
    let compact = simulate(&c).unwrap();
    c.endpoint.model = EndpointModel::Full;
    let full = simulate(&c).unwrap();
    assert_eq!(compact.outcome_json(), full.outcome_json());
}

#[test]
fn topology_configuration() {
    // The default is the dumbbell and is left out of the serialised form.
    assert!(!serde_json::to_string(&SimConfig::default()).unwrap().contains("topology"));
    let c = with_access_link(two_groups(), 10_000);
    let j = serde_json::to_string(&c).unwrap();
    assert_eq!(serde_json::from_str::<SimConfig>(&j).unwrap(), c);
    let mut bad = c.clone();
    bad.topology.access_links[0].groups = vec![5];
    assert!(bad.validate().unwrap_err().to_string().contains("group 5 does not exist"));
    let mut twice = c.clone();
    twice.topology.access_links.push(twice.topology.access_links[0].clone());
    assert!(twice.validate().unwrap_err().to_string().contains("already placed"));
    let mut zero = c;
    for st in &mut zero.topology.access_links[0].uplink {
        if let StageConfig::Rate(r) = st {
            r.bits_per_s = 0;
        }
    }
    let e = zero.validate().unwrap_err().to_string();
    assert!(e.contains("topology.access_links[0].uplink"), "{e}");
}

mod erased {
    /// JSON text of any serialisable value (for compact equality messages).
    pub trait Ser {
        fn json(&self) -> String;
    }
    impl<T: serde::Serialize> Ser for T {
        fn json(&self) -> String {
            serde_json::to_string(self).unwrap()
        }
    }
}

/// CoAP over TCP: group 1's connections cross their own access link.
fn tcp_two_groups() -> SimConfig {
    let mut c = two_groups();
    c.transport = coapcc_sim::Transport::Tcp;
    c.groups[0].cc = "newreno".into();
    c.groups[1].cc = "bbr".into();
    c.groups[0].clients = 3;
    c.groups[1].clients = 2;
    c.workload.kind = coapcc_sim::WorkloadKind::Bulk(20_000);
    c.workload.exchanges = 1;
    c.link.set_buffer_bytes(10_000);
    c
}

#[test]
fn tcp_connections_on_their_own_access_link() {
    // As over UDP: group 0 behind the testbed link with group 1 elsewhere behaves exactly as
    // group 0 alone, and group 1's segments are all on its access link.
    let split = simulate(&with_access_link(tcp_two_groups(), 60_000)).unwrap();
    let mut alone = tcp_two_groups();
    alone.groups.truncate(1);
    let alone = simulate(&alone).unwrap();
    let j = |v: &dyn erased::Ser| v.json();
    assert_eq!(j(&split.flows[..3].to_vec()), j(&alone.flows));
    for (a, b) in [(&split.links.uplink, &alone.links.uplink), (&split.links.downlink, &alone.links.downlink)] {
        assert_eq!(
            (a.offered_packets, a.delivered_packets, a.buffer_drop_packets, a.serialised_bytes),
            (b.offered_packets, b.delivered_packets, b.buffer_drop_packets, b.serialised_bytes)
        );
    }
    assert!(split.flows.iter().all(|f| f.fct_s.is_some()), "every connection finishes");
    let own = &split.access_links[0].links;
    assert!(own.downlink.delivered_packets > 0 && own.uplink.delivered_packets > 0);
    // The access link's downlink (60 kbit/s, twice the testbed's) is what group 1's transfers
    // see: same bytes, less time than behind the testbed's 30 kbit/s.
    let mut behind = tcp_two_groups();
    behind.groups.remove(0);
    let behind = simulate(&behind).unwrap();
    let fct = |fs: &[coapcc_sim::FlowReport]| fs.iter().map(|f| f.fct_s.unwrap()).fold(0.0, f64::max);
    assert!(fct(&split.flows[3..]) < fct(&behind.flows), "{} vs {}", fct(&split.flows[3..]), fct(&behind.flows));
    // The access links are checked as over UDP.
    let mut bad = with_access_link(tcp_two_groups(), 60_000);
    bad.topology.access_links[0].groups = vec![7];
    let e = simulate(&bad).unwrap_err().to_string();
    assert!(e.contains("topology.access_links[0].groups") && e.contains("group 7 does not exist"), "{e}");
}
