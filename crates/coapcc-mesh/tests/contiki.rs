//! Contiki's `csma.c` over `nullrdc` with the motes' processor and receive FIFO
//! (`net/contiki.rs`), driven through `MeshNet`'s event-source interface, against hand-computed
//! sequences.
//!
//! Timing of one hop with the `ancillotti-cooja` mote (no RPL control traffic): the sender's
//! processor runs the packet down the stack (`rx_process_us` 2 000), prepares the frame
//! (`tx_prepare_us` 300 + SPI 4 µs × (PSDU + 1)), CCA 128 µs, turnaround 192 µs, airtime
//! (PSDU + 6) × 32 µs; the receiver reads it (4 µs × (PSDU + 1)) and runs it up the stack
//! (2 000 µs).

use coapcc_mesh::mrm::MrmConfig;
use coapcc_mesh::{Delivery, DropCause, MacWhat, MeshNet, MeshNetConfig};

const US: u64 = 1_000;

fn cfg(topology: &str, tweak: impl FnOnce(&mut MeshNetConfig)) -> MeshNetConfig {
    let mut c = MeshNetConfig::preset("ancillotti-cooja", topology).unwrap();
    c.routing.rpl.control = false;
    tweak(&mut c);
    c
}

fn net(c: &MeshNetConfig) -> MeshNet<u32> {
    net_seeded(c, 1)
}

fn net_seeded(c: &MeshNetConfig, seed: u64) -> MeshNet<u32> {
    let mut n = MeshNet::new(c, seed).unwrap();
    n.enable_mac_log();
    n
}

/// Poll to the end; (time, delivery) of every event that delivered something.
fn drain(net: &mut MeshNet<u32>, seq: &mut u64) -> Vec<(u64, Delivery<u32>)> {
    let mut out = Vec::new();
    let mut last = (0, 0);
    for _ in 0..1_000_000 {
        let Some((t, s)) = net.peek() else { return out };
        assert!((t, s) > last, "events out of order");
        last = (t, s);
        if let Some(d) = net.poll(seq) {
            out.push((t, d));
        }
    }
    panic!("the network never went idle");
}

#[test]
fn one_hop_takes_processing_spi_cca_turnaround_airtime_and_reading() {
    // Chain 0-1-2 with the root (a slower Sky) at 2: node 1 sends to its child 0.
    let c = cfg("chain:3", |c| c.routing.root = Some(2));
    let mut n = net(&c);
    let mut seq = 0;
    n.push(0, &mut seq, 1, 0, 84, 7);
    let got = drain(&mut n, &mut seq);
    // Sender: 2000 (stack) + 300 + 4·85 (prepare, SPI) + 128 (CCA) + 192 (turnaround) +
    // 90·32 (air) = 5840 µs; receiver: 4·85 (read) + 2000 (stack) = 2340 µs more.
    assert_eq!(got, vec![(8180 * US, Delivery { node: 0, psdu: 84, payload: 7 })]);
    let cons = n.conservation();
    assert_eq!((cons.created, cons.delivered, cons.dropped, cons.in_network_at_end), (1, 1, 0, 0));
    // No link-layer ACK on Sky and Z1 (nullrdc without NULLRDC_802154_AUTOACK).
    assert_eq!((n.mac_counters().data_tx, n.mac_counters().ack_tx), (1, 0));
}

#[test]
fn the_root_processor_is_slower() {
    // Chain 0-1, root 1 (a Sky: 8 / 3.9 times the Z1's processing): the packet from the
    // root pays 2000 · 8/3.9 µs of stack and (300 + 340) · 8/3.9 µs of preparation.
    let c = cfg("chain:2", |c| c.routing.root = Some(1));
    let mut n = net(&c);
    let mut seq = 0;
    n.push(0, &mut seq, 1, 0, 84, 7);
    let got = drain(&mut n, &mut seq);
    let f: f64 = 8.0 / 3.9;
    let sender = (2e6 * f).round() as u64 + (640e3 * f).round() as u64 + (128 + 192 + 2880) * US;
    assert_eq!(got[0].0, sender + 2340 * US);
}

#[test]
fn a_busy_mote_drops_a_frame_that_does_not_fit_its_fifo() {
    // Node 0 sends four 84-byte frames to node 1 in one burst (nullrdc's send_list, one
    // every 3 840 µs); node 1 needs 20 ms for each. The first is read at once; the second
    // waits in the FIFO (85 of 128 bytes); the third does not fit: it overflows the FIFO and
    // is lost, and so is the fourth (the radio takes nothing until the FIFO is flushed).
    let c = cfg("chain:3", |c| {
        c.routing.root = Some(2);
        c.mote.rx_process_us = 20_000.0;
    });
    let mut n = net(&c);
    let mut seq = 0;
    for i in 0..4 {
        n.inject(0, &mut seq, 0, 1, 84, i);
    }
    let got = drain(&mut n, &mut seq);
    let delivered: Vec<u32> = got.iter().map(|(_, d)| d.payload).collect();
    assert_eq!(delivered, vec![0, 1]);
    assert_eq!(n.drop_causes().fifo_overflow, 2);
    let log = n.mac_log();
    let overflows = log.iter().filter(|r| r.node == 1 && r.what == MacWhat::FifoOverflow).count();
    assert_eq!(overflows, 2);
    assert_eq!(log.iter().filter(|r| r.what == MacWhat::Drop(DropCause::FifoOverflow)).count(), 2);
    // The four frames left 0 back to back: one every prepare + CCA + turnaround + air.
    let tx: Vec<u64> =
        log.iter().filter(|r| r.node == 0 && matches!(r.what, MacWhat::TxData { .. })).map(|r| r.t_ns).collect();
    let gap = (300 + 340 + 128 + 192 + 2880) * US;
    assert_eq!(tx.windows(2).map(|w| w[1] - w[0]).collect::<Vec<_>>(), vec![gap; 3]);
    let cons = n.conservation();
    assert_eq!((cons.created, cons.delivered + cons.dropped, cons.in_network_at_end), (4, 4, 0));
}

#[test]
fn without_the_processor_model_packets_are_forwarded_at_once() {
    let c = cfg("chain:3", |c| {
        c.routing.root = Some(0);
        c.mote.cpu = false;
    });
    let mut n = net(&c);
    let mut seq = 0;
    n.push(0, &mut seq, 2, 0, 50, 1);
    let got = drain(&mut n, &mut seq);
    // Two hops of CCA 128 + turnaround 192 + air 56·32 µs.
    assert_eq!(got[0].0, 2 * (128 + 192 + 56 * 32) * US);
}

#[test]
fn a_busy_channel_retries_after_one_to_two_time_bases() {
    // Three nodes in a row. With MRM tuned by the receiver sensitivity (strong signals) node
    // 1's CCA senses the frame it receives from node 0 (the preset's signals are below the
    // CC2420's CCA threshold: its CCA is never busy). Node 1 starts a frame while 0 is on
    // air: busy, and the retry comes T + U{0..T − 1} ticks later, T = 16 ticks of 1/128 s
    // (csma.c, nullrdc: CLOCK_SECOND / 8).
    let c = cfg("chain:3", |c| {
        c.routing.root = Some(0);
        c.mote.cpu = false;
        c.radio.mrm = Some(MrmConfig::smooth(14.142, 1.0));
    });
    let mut n = net(&c);
    let mut seq = 0;
    n.inject(0, &mut seq, 0, 1, 120, 1);
    // Node 1's CCA ends 128 µs after 1 ms: node 0 is on air from 320 µs to 320 + 126·32.
    n.inject(1_000 * US, &mut seq, 1, 2, 50, 2);
    let _ = drain(&mut n, &mut seq);
    let log = n.mac_log();
    let busy = log.iter().find(|r| r.node == 1 && r.what == MacWhat::CcaBusy).expect("a busy CCA").t_ns;
    assert_eq!(busy, 1_128 * US);
    let retry = log.iter().filter(|r| r.node == 1 && matches!(r.what, MacWhat::TxData { .. })).map(|r| r.t_ns).next();
    let tick = 1_000_000_000u64 / 128;
    let wait = retry.unwrap() - busy - 128 * US - 192 * US;
    assert!(wait % tick == 0 && (16 * tick..32 * tick).contains(&wait), "{wait}");
}

#[test]
fn same_seed_same_events() {
    let c = cfg("grid:4", |c| c.routing.rpl.control = true);
    let run = |c: &MeshNetConfig, seed: u64| {
        let mut n = net_seeded(c, seed);
        let (mut seq, mut next) = (0, 0u32);
        let mut out = Vec::new();
        while let Some((t, _)) = n.peek() {
            if t > 60_000_000_000 {
                break;
            }
            // One packet every 70 ms from nodes 1..=14 to the sink, pushed in time order.
            let at = next as u64 * 70_000 * US;
            if next < 40 && at <= t {
                n.push(at, &mut seq, (1 + next % 14) as u16, 0, 84, next);
                next += 1;
                continue;
            }
            if let Some(d) = n.poll(&mut seq) {
                out.push((t, d.payload));
            }
        }
        (out, n.mac_log().to_vec(), seq)
    };
    let a = run(&c, 1);
    assert_eq!(a, run(&c, 1));
    assert!(!a.0.is_empty());
    assert_ne!(a.1, run(&c, 2).1);
}

#[test]
fn with_autoack_nullrdc_waits_for_the_hardware_ack() {
    // NULLRDC_802154_AUTOACK: node 1's frame to 0 ends at 320 + 56·32 = 2 112 µs; node 0's
    // CC2420 answers 192 µs later (352 µs on air); node 1 looks after ACK_WAIT_TIME (2 512
    // µs), senses the ACK arriving, waits AFTER_ACK_DETECTED_WAIT_TIME (667 µs) and reads it.
    let c = cfg("chain:3", |c| {
        c.routing.root = Some(2);
        c.mote.cpu = false;
        c.mac.nullrdc.autoack = true;
    });
    let mut n = net(&c);
    let mut seq = 0;
    n.inject(0, &mut seq, 1, 0, 50, 1);
    let got = drain(&mut n, &mut seq);
    assert_eq!(got.len(), 1);
    let log = n.mac_log();
    let at = |node: u16, what: MacWhat| {
        log.iter().filter(|r| r.node == node && r.what == what).map(|r| r.t_ns / US).collect::<Vec<_>>()
    };
    assert_eq!(at(0, MacWhat::TxAck { to: 1 }), vec![2304]);
    assert_eq!(at(1, MacWhat::AckReceived), vec![2512 + 667]);
    // To a node out of reception range: no ACK; two retries after T + U{0..2^n·T − 1} ticks
    // (n = transmissions so far, T = 16 ticks), then the packet is dropped.
    let mut n = net(&c);
    n.inject(0, &mut seq, 0, 2, 50, 2);
    let _ = drain(&mut n, &mut seq);
    let log = n.mac_log();
    let tx: Vec<u64> =
        log.iter().filter(|r| r.node == 0 && matches!(r.what, MacWhat::TxData { .. })).map(|r| r.t_ns).collect();
    assert_eq!(tx.len(), 3);
    let tick = 1_000_000_000u64 / 128;
    let frame = (1792 + 400) * US;
    for (k, w) in tx.windows(2).enumerate() {
        let wait = w[1] - w[0] - frame - 128 * US - 192 * US;
        assert!(wait % tick == 0 && wait >= 16 * tick && wait < (16 + 16 * (2 << k)) * tick, "retry {k}: {wait}");
    }
    let drop = log.iter().find(|r| r.what == MacWhat::Drop(DropCause::NoAck)).expect("dropped").t_ns;
    assert_eq!(drop, tx[2] + (1792 + 400) * US);
    assert_eq!(n.drop_causes().mac_no_ack, 1);
}

/// RPL's control traffic alone on a 3×3 grid for 20 minutes. Every node boots at t = 0 with
/// I_min = 4.096 s, so the intervals of all nodes end at 4.096 · (2^k − 1) s: 8 of them end
/// before 1 200 s (the 8th at 1 044.5 s) and the 9th DIO is due after 1 568.8 s. A node hears
/// at most 4 neighbours (the diagonals, 14.1 m, are out of MRM's 10.07 m), one DIO each per
/// interval: fewer than the redundancy constant 10, so none is suppressed: 8 DIOs per node.
/// Each of the 8 non-root nodes sends one DAO within [2, 6) s, and the 4 corners' DAOs are
/// forwarded once more by their parents (if not lost on the air): 8 to 12 DAO transmissions.
#[test]
fn rpl_sends_eight_trickle_dios_per_node_and_one_dao_each_in_20_minutes() {
    for seed in 1..=3 {
        let c = cfg("grid:3", |c| c.routing.rpl.control = true);
        let mut n = net_seeded(&c, seed);
        let mut seq = 0;
        while let Some((t, _)) = n.peek() {
            if t > 1_200_000_000_000 {
                break;
            }
            assert!(n.poll(&mut seq).is_none(), "control traffic delivers nothing to the host");
        }
        let mut dios = [0u32; 9];
        let mut daos = 0;
        for r in n.mac_log() {
            match r.what {
                MacWhat::TxData { to, .. } if to == u16::MAX - 1 => dios[r.node as usize] += 1,
                MacWhat::TxData { to, .. } => {
                    assert_eq!(n.dodag().parent[r.node as usize], Some(to as usize), "DAOs go up");
                    assert!(r.t_ns < 6_100_000_000, "DAO at {} ns", r.t_ns);
                    daos += 1
                }
                _ => {}
            }
        }
        assert_eq!(dios, [8; 9], "seed {seed}");
        assert!((8..=12).contains(&daos), "seed {seed}: {daos} DAO transmissions");
        assert_eq!(n.mac_counters().control_tx, 72 + daos as u64);
    }
}
