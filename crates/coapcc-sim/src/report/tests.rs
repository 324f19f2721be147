use super::*;

#[test]
fn percentiles_interpolate_linearly() {
    let v = [1.0, 2.0, 3.0, 4.0];
    assert_eq!(percentile_sorted(&v, 0.5), 2.5);
    assert_eq!(percentile_sorted(&v, 0.0), 1.0);
    assert_eq!(percentile_sorted(&v, 1.0), 4.0);
    assert!((percentile_sorted(&v, 0.1) - 1.3).abs() < 1e-12);
    let s = Summary::of(&[5.0, 1.0, 3.0]).unwrap();
    assert_eq!((s.min, s.median, s.max), (1.0, 3.0, 5.0));
    assert!(Summary::of(&[]).is_none());
}
/// The keys of `json` (one serialised object, no nesting) in their order.
fn keys_in_order(json: &str) -> Vec<String> {
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    let mut keys: Vec<(usize, String)> =
        v.as_object().unwrap().keys().map(|k| (json.find(&format!("\"{k}\":")).unwrap(), k.clone())).collect();
    keys.sort();
    keys.into_iter().map(|(_, k)| k).collect()
}

fn flow(client: u32, tcp: bool) -> FlowReport {
    let mut f = FlowReport::udp();
    f.client = client;
    f.cc = "cocoa";
    f.fct_s = if client == 0 { None } else { Some(1.5) };
    f.transmissions = 7 + client as u64;
    if tcp {
        f.setup_s = Some(if client == 0 { None } else { Some(0.25) });
        f.segments_sent = Some(3);
        f.retransmitted_segments = Some(1);
        f.rto_expiries = Some(0);
        f.fast_retransmits = Some(2);
        f.bytes_delivered = Some(999);
        f.first_rto_s = Some(if client == 0 { None } else { Some(13.5) });
        f.rto_episode_s = Some(None);
        f.rto_resend_s = Some(if client == 0 { None } else { Some(4.5) });
        f.new_after_first_dupack = Some(4);
        f.recovery_retransmits = Some(5);
        f.recovery_rounds = Some(6);
    }
    f
}

#[test]
fn columns_have_the_json_names_order_and_values() {
    let link = LinkReport::new(LinkCounters::default(), 10, 5, 10, 3);
    let names: Vec<&str> = link.fields().iter().map(|(n, _)| *n).collect();
    assert_eq!(names, keys_in_order(&serde_json::to_string(&link).unwrap()));
    for tcp in [false, true] {
        let flows = vec![flow(0, tcp), flow(1, tcp)];
        let report = SimReport {
            config: SimConfig::default(),
            flows: flows.clone(),
            retransmissions_per_exchange: vec![],
            links: LinksReport { downlink: link.clone(), uplink: link.clone() },
            access_links: vec![],
            mesh: None,
            messages: None,
            useful_fraction: 0.0,
            sim_time_s: 0.0,
            wall_s: 0.0,
            events: 0,
            truncated: false,
            groups: vec![],
        };
        let cols = report.flow_columns();
        let names: Vec<&str> = cols.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, keys_in_order(&serde_json::to_string(&flows[1]).unwrap()), "tcp {tcp}");
        // Every column's values are the JSON's, flow by flow.
        let json: Vec<serde_json::Value> = flows.iter().map(|f| serde_json::to_value(f).unwrap()).collect();
        for (name, col) in &cols {
            assert_eq!(col.len(), 2);
            let got: Vec<serde_json::Value> = match col {
                FlowColumn::U32(v) => v.iter().map(|x| (*x).into()).collect(),
                FlowColumn::U64(v) => v.iter().map(|x| (*x).into()).collect(),
                FlowColumn::OptU64(v) => v.iter().map(|x| serde_json::to_value(x).unwrap()).collect(),
                FlowColumn::OptF64(v) => v.iter().map(|x| serde_json::to_value(x).unwrap()).collect(),
                FlowColumn::Str(v) => v.iter().map(|x| (*x).into()).collect(),
            };
            let want: Vec<serde_json::Value> = json.iter().map(|f| f[name].clone()).collect();
            assert_eq!(got, want, "{name}");
        }
    }
}
