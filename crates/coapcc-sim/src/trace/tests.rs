use super::*;
use coapcc_cc::Entropy;
use coapcc_link::{DelayConfig, LinkPath, Nanos, RateConfig, StageConfig};

fn chain(bps: u64, buffer: u64, in_service: bool, overhead: u32) -> Vec<StageConfig> {
    vec![
        StageConfig::Rate(RateConfig {
            bits_per_s: bps,
            buffer_bytes: buffer,
            buffer_counts_in_service: in_service,
            per_packet_overhead_bytes: overhead,
            schedule: None,
        }),
        StageConfig::Delay(DelayConfig { ms: 400.0 }),
    ]
}

/// (event, time ns, bytes, packets) of every record.
fn events(v: &VecTrace) -> Vec<(String, u64, u64, u64)> {
    v.records
        .iter()
        .map(|r| {
            (
                r["event"].as_str().unwrap().to_string(),
                (r["time_s"].as_f64().unwrap() * 1e9).round() as u64,
                r["bytes"].as_u64().unwrap(),
                r["packets"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn push_all(path: &mut LinkPath, pkts: &[(Nanos, u32)], sink: &mut VecTrace) -> QueueTracer {
    let mut q = QueueTracer::new([(0, Direction::Downlink, &*path)]);
    for &(t, size) in pkts {
        let tr = path.transmit(t, size);
        q.observe(0, path, &tr, size, sink);
    }
    q.finish(None, sink);
    q
}

#[test]
fn three_packets_into_30_kbit_s_by_hand() {
    // 94 B at 30 kbit/s = 25 066 666.67 ns. Buffer 200 B, in-service counted: two fit
    // (94 + 94 = 188), the third (188 + 94 = 282 > 200) is dropped.
    let mut path = LinkPath::new(&chain(30_000, 200, true, 0), 296, 1, 0).unwrap();
    let mut sink = VecTrace { queue: true, ..VecTrace::default() };
    push_all(&mut path, &[(0, 94), (0, 94), (0, 94)], &mut sink);
    let e = |s: &str, t, b, p| (s.to_string(), t, b, p);
    assert_eq!(
        events(&sink),
        vec![
            e("enqueue", 0, 94, 1),
            e("enqueue", 0, 188, 2),
            e("drop", 0, 188, 2),
            e("leave", 25_066_667, 94, 1),
            e("leave", 50_133_334, 0, 0),
        ]
    );
    let r = &sink.records[0];
    assert_eq!(
        (r["kind"].as_str(), r["link"].as_u64(), r["direction"].as_str()),
        (Some("queue"), Some(0), Some("downlink"))
    );
    assert_eq!(r["size"], 94);

    // Same packets, the in-service packet not counted, plus a fourth arriving at 30 ms
    // (while the second is being serialised): the first starts at once (leaves at 0),
    // the second waits until the first's last bit (25 066 667 ns), the third until the
    // second's (50 133 334 ns); the fourth sees 94 B (the third) and is admitted.
    let mut path = LinkPath::new(&chain(30_000, 200, false, 0), 296, 1, 0).unwrap();
    let mut sink = VecTrace { queue: true, ..VecTrace::default() };
    push_all(&mut path, &[(0, 94), (0, 94), (0, 94), (30_000_000, 94)], &mut sink);
    assert_eq!(
        events(&sink),
        vec![
            e("enqueue", 0, 94, 1),
            e("leave", 0, 0, 0),
            e("enqueue", 0, 94, 1),
            e("enqueue", 0, 188, 2),
            e("leave", 25_066_667, 94, 1),
            e("enqueue", 30_000_000, 188, 2),
            e("leave", 50_133_334, 94, 1),
            e("leave", 75_200_000, 0, 0),
        ]
    );
}

#[test]
fn overhead_counts_and_nothing_without_a_rate_stage() {
    let mut path = LinkPath::new(&chain(8_000, 300, true, 14), 296, 1, 0).unwrap();
    let mut sink = VecTrace { queue: true, ..VecTrace::default() };
    push_all(&mut path, &[(0, 100), (0, 100), (0, 100)], &mut sink);
    // 114 counted bytes each: two fit in 300, the third (342) does not.
    let ev = events(&sink);
    assert_eq!(ev[1], ("enqueue".into(), 0, 228, 2));
    assert_eq!(ev[2], ("drop".into(), 0, 228, 2));
    assert_eq!(ev[3], ("leave".into(), 114_000_000, 114, 1));
    let mut path = LinkPath::new(&[StageConfig::Delay(DelayConfig { ms: 1.0 })], 296, 1, 0).unwrap();
    let mut sink = VecTrace { queue: true, ..VecTrace::default() };
    push_all(&mut path, &[(0, 100), (0, 100)], &mut sink);
    assert!(sink.records.is_empty());
}

/// Random arrivals (rest-of-path jitter in front of the stage, as on the testbed downlink):
/// at every arrival the traced occupancy equals what the stage's own admission test sees,
/// drops happen exactly when the packet would overflow, and the totals match the stage's
/// counters.
#[test]
fn occupancy_is_the_stage_s_own_at_every_arrival() {
    use coapcc_link::JitterConfig;
    use coapcc_link::{RatePoint, RateSchedule};
    // A schedule: an outage from 10 s to 15 s, then 60 kbit/s losing 20 % of the packets
    // (admitted and serialised, then lost: they still occupy the buffer).
    let sched = RateSchedule {
        points: vec![
            RatePoint { at_s: 10.0, bits_per_s: 0, loss: 0.0 },
            RatePoint { at_s: 15.0, bits_per_s: 60_000, loss: 0.2 },
        ],
    };
    for (in_service, overhead, scheduled) in
        [(true, 0u32, false), (true, 6, false), (false, 0, false), (false, 6, false), (true, 0, true), (false, 6, true)]
    {
        let buffer = 1_500;
        let mut c = chain(30_000, buffer, in_service, overhead);
        if scheduled {
            if let StageConfig::Rate(r) = &mut c[0] {
                r.schedule = Some(sched.clone());
            }
        }
        c.insert(0, StageConfig::Jitter(JitterConfig { min_ms: 10.0, max_ms: 20.0, allow_reordering: false }));
        let mut path = LinkPath::new(&c, 296, 7, 0).unwrap();
        let mut sink = VecTrace { queue: true, ..VecTrace::default() };
        let mut q = QueueTracer::new([(0, Direction::Downlink, &path)]);
        let mut rng = coapcc_cc::SplitMix64::new(3);
        let mut now = 0;
        let (mut drops, mut max_after) = (0u64, 0u64);
        for _ in 0..3_000 {
            now += rng.next_u64() % 40_000_000;
            let size = 20 + (rng.next_u64() % 277) as u32;
            let tr = path.transmit(now, size);
            let before = sink.records.len();
            q.observe(0, &path, &tr, size, &mut sink);
            let d = &q.dirs[0];
            let stage = path.rate_stage().unwrap();
            let last = sink.records.last().unwrap();
            assert!(sink.records.len() > before);
            let held_now: u64 = d.held.iter().filter(|h| h.0 > tr.enqueued).map(|h| h.1).sum();
            match last["event"].as_str().unwrap() {
                "drop" => {
                    drops += 1;
                    assert_eq!(d.bytes, stage.occupancy_at(tr.enqueued));
                    assert!(d.bytes + size as u64 + overhead as u64 > buffer);
                }
                "enqueue" => {
                    assert_eq!(held_now, stage.occupancy_at(tr.enqueued));
                    max_after = max_after.max(d.bytes);
                }
                e => panic!("last record of an arrival: {e}"),
            }
            assert!(d.bytes <= buffer);
        }
        q.finish(None, &mut sink);
        let st = path.rate_stage().unwrap().stats();
        assert!(drops > 10, "the case must congest: {drops} drops");
        assert_eq!(drops, st.dropped_packets);
        assert_eq!(max_after, st.max_queue_bytes);
        let sum = |ev: &str, key: &str| -> u64 {
            sink.records.iter().filter(|r| r["event"] == ev).map(|r| r[key].as_u64().unwrap()).sum()
        };
        let n = |ev: &str| sink.records.iter().filter(|r| r["event"] == ev).count() as u64;
        assert_eq!(n("enqueue"), st.admitted_packets);
        assert_eq!(sum("enqueue", "size"), st.admitted_bytes);
        assert_eq!(sum("drop", "size"), st.dropped_bytes);
        assert_eq!(n("leave"), n("enqueue"));
        let last = sink.records.last().unwrap();
        assert_eq!((last["bytes"].as_u64(), last["packets"].as_u64()), (Some(0), Some(0)));
        assert!(sink.records.windows(2).all(|w| w[0]["time_s"].as_f64() <= w[1]["time_s"].as_f64()));
    }
}
