//! The network component's event-source interface ([`MeshNet`]): push, peek, poll, with the
//! host's insertion counter, as the mesh study's host and the general simulator drive it.
//!
//! With macMinBE = macMaxBE = 0 every backoff is 0 unit periods: a hop takes CCA 128 µs +
//! turnaround 192 µs + the frame's airtime ((PSDU + 6) · 32 µs), and the next hop starts at
//! once at the receiver (no forwarding delay).

use coapcc_mesh::{Delivery, MeshNet, MeshNetConfig};

const US: u64 = 1_000;

fn chain(n: usize, tweak: impl FnOnce(&mut MeshNetConfig)) -> MeshNet<u32> {
    let mut cfg = MeshNetConfig { topology: format!("chain:{n}"), ..MeshNetConfig::default() };
    cfg.mac.min_be = 0;
    cfg.mac.max_be = 0;
    tweak(&mut cfg);
    MeshNet::new(&cfg, 1).unwrap()
}

/// Poll to the end; (time, seq, delivery) of every event that delivered something. Checks
/// that events come in (time, seq) order and that `seq` only grows.
fn drain(net: &mut MeshNet<u32>, seq: &mut u64) -> Vec<(u64, Delivery<u32>)> {
    let mut out = Vec::new();
    let mut last = (0, 0);
    for _ in 0..100_000 {
        let Some((t, s)) = net.peek() else { return out };
        assert!((t, s) > last, "events out of order: {:?} after {last:?}", (t, s));
        assert!(s <= *seq, "an event numbered {s} beyond the counter {seq}");
        last = (t, s);
        if let Some(d) = net.poll(seq) {
            out.push((t, d));
        }
    }
    panic!("the network never went idle");
}

#[test]
fn one_hop_delivers_after_cca_turnaround_and_airtime() {
    let mut net = chain(2, |_| {});
    let mut seq = 100;
    net.push(5 * US, &mut seq, 1, 0, 84, 7);
    assert!(seq > 100, "the push scheduled the first CCA with the host's counter");
    let got = drain(&mut net, &mut seq);
    // 5 + 128 + 192 + (84 + 6) · 32 = 3205 µs.
    assert_eq!(got, vec![(3205 * US, Delivery { node: 0, psdu: 84, payload: 7 })]);
    let c = net.conservation();
    assert_eq!((c.created, c.delivered, c.dropped, c.in_network_at_end), (1, 1, 0, 0));
    assert_eq!((net.mac_counters().data_tx, net.mac_counters().acked), (1, 1));
}

#[test]
fn a_packet_is_forwarded_hop_by_hop_to_its_destination() {
    // Chain 0-1-2-3, 10 m apart: node 3 reaches node 0 in three hops, each a CSMA/CA
    // sequence of its own at the node holding the packet.
    let mut net = chain(4, |c| c.routing.root = Some(0));
    assert_eq!(net.dodag().hops(3, 0), 3);
    let mut seq = 0;
    net.push(0, &mut seq, 3, 0, 50, 1);
    let got = drain(&mut net, &mut seq);
    assert_eq!(got.len(), 1);
    let (t, d) = got[0];
    assert_eq!((d.node, d.payload), (0, 1));
    // At least three hops of 128 + 192 + 1792 µs.
    assert!(t >= 3 * 2112 * US, "{t}");
    let c = net.conservation();
    assert_eq!((c.created, c.delivered, c.dropped, c.in_network_at_end), (1, 1, 0, 0));
    assert_eq!(net.mac_counters().data_tx, 3);
}

#[test]
fn the_host_counter_interleaves_with_the_hosts_own_events() {
    // Two packets pushed at the same instant from both ends (random backoffs, so they do not
    // collide forever): every event of the network is numbered from the one counter, so a
    // host merging its own events by (time, seq) sees a single order; the same inputs give
    // the same sequence of (time, seq, delivery).
    let run = || {
        let mut net = chain(3, |c| {
            c.routing.root = Some(1);
            (c.mac.min_be, c.mac.max_be) = (3, 5);
        });
        let mut seq = 0;
        net.push(0, &mut seq, 0, 2, 60, 10);
        seq += 5; // the host's own events in between
        net.push(0, &mut seq, 2, 0, 60, 20);
        drain(&mut net, &mut seq)
    };
    let a = run();
    assert_eq!(a, run());
    let mut nodes: Vec<(u16, u32)> = a.iter().map(|(_, d)| (d.node, d.payload)).collect();
    nodes.sort();
    assert_eq!(nodes, vec![(0, 20), (2, 10)]);
}

#[test]
fn a_full_queue_drops_and_conservation_holds() {
    let mut net = chain(2, |c| c.mac.queue_packets = 2);
    let mut seq = 0;
    for k in 0..5 {
        net.push(0, &mut seq, 1, 0, 40, k);
    }
    let got = drain(&mut net, &mut seq);
    // The queue holds 2 packets, the one in service included: of 5 pushed at once, 3 are
    // dropped on arrival.
    let c = net.conservation();
    assert_eq!(c.created, 5);
    assert_eq!(c.delivered, got.len() as u64);
    assert_eq!(c.dropped, net.drop_causes().buffer_overflow);
    assert_eq!(c.dropped, 3, "{c:?}");
    assert_eq!(c.created, c.delivered + c.dropped + c.in_network_at_end);
}
