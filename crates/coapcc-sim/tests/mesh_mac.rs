//! MAC timing against hand-computed unslotted CSMA/CA sequences.
//!
//! With macMinBE = macMaxBE = 0 every backoff is 0 unit periods, so the whole sequence is
//! fixed by the constants: CCA 128 µs, turnaround 192 µs, ACK wait 864 µs, 32 µs per byte.
//! A 50-byte PSDU takes (50 + 6) · 32 = 1792 µs on air; a MAC ACK (5 + 6) · 32 = 352 µs.

use coapcc_mesh::{DropCause, MacRecord, MacWhat, MeshNet};
use coapcc_sim::mesh_command::MeshRun;

const US: u64 = 1_000;

/// A mesh network driven alone (no traffic but the frames a test injects), to its duration.
struct Mac {
    net: MeshNet<u32>,
    seq: u64,
    end_ns: u64,
}

impl Mac {
    /// A bare frame of `psdu` bytes at node `src` for its neighbour `to` at `at_ns`.
    fn inject(&mut self, at_ns: u64, src: usize, to: usize, psdu: u32) {
        self.net.inject(at_ns, &mut self.seq, src as u16, to as u16, psdu, 0);
    }

    /// With duty cycling, the first wake-up of `node` at or after `t_ns`.
    fn wake_up_after(&self, node: usize, t_ns: u64) -> Option<u64> {
        self.net.wake_up_after(node, t_ns)
    }
}

fn sim(name: &str, positions: &str, tweak: impl FnOnce(&mut MeshRun)) -> Mac {
    let path = std::env::temp_dir().join(format!("coapcc-mesh-test-{}-{name}.txt", std::process::id()));
    std::fs::write(&path, positions).unwrap();
    let mut cfg = MeshRun {
        topology: format!("file:{}", path.display()),
        traffic: "none".into(),
        duration_s: 1.0,
        ..MeshRun::default()
    };
    cfg.mac.min_be = 0;
    cfg.mac.max_be = 0;
    cfg.routing.root = Some(1);
    tweak(&mut cfg);
    let mut net = MeshNet::new(&cfg.medium(), cfg.seed).unwrap();
    net.enable_mac_log();
    std::fs::remove_file(&path).unwrap();
    Mac { net, seq: 0, end_ns: (cfg.duration_s * 1e9) as u64 }
}

fn times(log: &[MacRecord], node: u16, pred: impl Fn(&MacWhat) -> bool) -> Vec<u64> {
    log.iter().filter(|r| r.node == node && pred(&r.what)).map(|r| r.t_ns / US).collect()
}

fn is_tx(w: &MacWhat) -> bool {
    matches!(w, MacWhat::TxData { .. })
}

#[test]
fn one_sender_follows_the_standard_sequence() {
    let mut s = sim("one", "0 0\n10 0\n", |_| {});
    s.inject(0, 0, 1, 50);
    let log = run_log(s);
    let expect = vec![
        (128, 0, MacWhat::CccIdle),
        (320, 0, MacWhat::TxData { to: 1, retry: 0 }),
        (2112, 1, MacWhat::RxData { from: 0, duplicate: false }),
        (2112, 1, MacWhat::Delivered),
        (2304, 1, MacWhat::TxAck { to: 0 }),
        (2656, 0, MacWhat::AckReceived),
    ];
    let got: Vec<(u64, u16, MacWhat)> = log.iter().map(|r| (r.t_ns / US, r.node, r.what)).collect();
    assert_eq!(got, expect);
}

/// Run to the end, check frame conservation, return the MAC log.
fn run_log(mut s: Mac) -> Vec<MacRecord> {
    while let Some((t, _)) = s.net.peek() {
        if t > s.end_ns {
            break;
        }
        s.net.poll(&mut s.seq);
    }
    let c = s.net.conservation();
    assert_eq!(c.created + s.net.mac_counters().duplicates_forwarded, c.delivered + c.dropped + c.in_network_at_end);
    s.net.take_mac_log().unwrap()
}

#[test]
fn two_senders_in_range_collide_until_the_retries_run_out() {
    // A(0) and B(2) both 10 m from R(1), 20 m from each other (inside CCA range): they start
    // together, both sense an idle channel at 128 µs and collide at R on every attempt.
    let mut s = sim("collide", "0 0\n10 0\n20 0\n", |_| {});
    s.inject(0, 0, 1, 50);
    s.inject(0, 2, 1, 50);
    let log = run_log(s);
    // Each attempt: CCA 128 + turnaround 192 + 1792 on air + 864 ACK wait = 2976 µs.
    for node in [0, 2] {
        assert_eq!(times(&log, node, is_tx), vec![320, 3296, 6272, 9248], "node {node}");
        assert_eq!(times(&log, node, |w| *w == MacWhat::AckTimeout), vec![2976, 5952, 8928, 11904]);
        assert_eq!(times(&log, node, |w| *w == MacWhat::Drop(DropCause::NoAck)), vec![11904]);
    }
    assert!(times(&log, 1, |w| matches!(w, MacWhat::RxData { .. })).is_empty());
    assert_eq!(times(&log, 1, |w| matches!(w, MacWhat::RxLost { collision: true, .. })).len(), 8);
}

#[test]
fn hidden_senders_collide_where_cca_cannot_help() {
    // A(0) and B(2) are 21 m apart, beyond CCA and interference range of each other, both
    // 10.5 m from R(1) (step curve to 11 m: PRR 1). B starts 1 ms after A, while A is on air.
    let geometry = "0 0\n10.5 0\n21 0\n";
    let step = |c: &mut MeshRun| {
        c.radio.curve = coapcc_mesh::config::Curve::Step;
        c.radio.range_full_m = 11.0;
    };
    let mut s = sim("hidden", geometry, step);
    s.inject(0, 0, 1, 50);
    s.inject(1_000 * US, 2, 1, 50);
    let log = run_log(s);
    // B's CCA (ends 1128 µs) cannot hear A: it transmits at 1320 µs and destroys A's frame.
    // Each retry lands on the other's frame (A every 2976 µs from 320, B from 1320).
    assert_eq!(times(&log, 0, is_tx), vec![320, 3296, 6272, 9248]);
    assert_eq!(times(&log, 2, is_tx), vec![1320, 4296, 7272, 10248]);
    assert_eq!(times(&log, 0, |w| *w == MacWhat::Drop(DropCause::NoAck)), vec![11904]);
    assert_eq!(times(&log, 2, |w| *w == MacWhat::Drop(DropCause::NoAck)), vec![12904]);
    assert!(times(&log, 1, |w| matches!(w, MacWhat::RxData { .. })).is_empty());

    // The same geometry with a 25 m CCA range: B hears A, finds the channel busy at 1128,
    // 1256, 1384, 1512 and 1640 µs (backoff 0, CCA 128 µs each) and gives up after
    // macMaxCSMABackoffs = 4; A's frame goes through.
    let mut s = sim("exposed", geometry, |c| {
        step(c);
        c.radio.cca_range_m = 25.0;
    });
    s.inject(0, 0, 1, 50);
    s.inject(1_000 * US, 2, 1, 50);
    let log = run_log(s);
    assert_eq!(times(&log, 2, |w| *w == MacWhat::CcaBusy), vec![1128, 1256, 1384, 1512, 1640]);
    assert_eq!(times(&log, 2, |w| *w == MacWhat::Drop(DropCause::ChannelAccess)), vec![1640]);
    assert_eq!(times(&log, 1, |w| matches!(w, MacWhat::RxData { .. })), vec![2112]);
    assert_eq!(times(&log, 0, |w| *w == MacWhat::AckReceived), vec![2656]);
}

#[test]
fn capture_saves_the_stronger_frame() {
    // A(0) -> R(1) at 10 m while hidden B(2) at 30 m sends to C(3) at 40 m. B is 20 m from R:
    // 9 dB weaker than A at exponent 3, above the 3 dB capture threshold.
    let geometry = "0 0\n10 0\n30 0\n40 0\n20 0\n"; // node 4 only connects the DODAG
    let run = |capture: Option<f64>| {
        let mut s = sim(&format!("capture{capture:?}"), geometry, |c| {
            c.radio.capture_db = capture;
            c.routing.root = Some(1);
            c.routing.min_link_prr = 1.0;
            c.radio.curve = coapcc_mesh::config::Curve::Step;
        });
        s.inject(0, 0, 1, 50);
        s.inject(0, 2, 3, 50);
        run_log(s)
    };
    let log = run(Some(3.0));
    assert_eq!(times(&log, 1, |w| matches!(w, MacWhat::RxData { .. })), vec![2112]);
    assert_eq!(times(&log, 3, |w| matches!(w, MacWhat::RxData { .. })), vec![2112]);
    let log = run(None);
    // Without capture A's first attempt is lost at R; C is out of A's interference range.
    assert_eq!(times(&log, 1, |w| matches!(w, MacWhat::RxLost { collision: true, .. })).first(), Some(&2112));
    assert_eq!(times(&log, 3, |w| matches!(w, MacWhat::RxData { .. })), vec![2112]);
}

#[test]
fn reception_follows_the_curve() {
    // A 15 m link has PRR 0.5 on the default linear curve: about half the first attempts
    // are lost to fading, and no frame is lost to collisions (one sender).
    let mut s = sim("curve", "0 0\n15 0\n", |c| c.routing.min_link_prr = 0.5);
    for i in 0..400u64 {
        s.inject(i * 20_000 * US, 0, 1, 50);
    }
    let log = run_log(s);
    let attempts = times(&log, 0, is_tx).len() as f64;
    let lost = times(&log, 1, |w| matches!(w, MacWhat::RxLost { collision: false, .. })).len() as f64;
    assert!(times(&log, 1, |w| matches!(w, MacWhat::RxLost { collision: true, .. })).is_empty());
    let ratio = lost / attempts;
    assert!((0.42..0.58).contains(&ratio), "fading share {ratio}");
}

#[test]
fn duty_cycling_strobes_until_the_receiver_wakes_then_locks_its_phase() {
    let mut s = sim("rdc", "0 0\n10 0\n", |c| {
        c.mac.rdc = coapcc_mesh::config::Rdc::Contikimac;
        c.duration_s = 2.0;
    });
    s.inject(0, 0, 1, 50);
    s.inject(1_000_000 * US, 0, 1, 50);
    let stride = 1792 + 400;
    // First frame: no phase known. CCA at 128 µs, strobing from 320 µs; the receiver takes
    // the first whole copy starting at or after its wake-up.
    let wake = s.wake_up_after(1, 320 * US).unwrap() / US;
    let last = 320 + (wake - 320).div_ceil(stride) * stride;
    // Second frame: the phase is known, so the sender starts 2 ms (guard) before the wake-up;
    // the copy in progress at the wake-up is missed and the next one (192 µs later) received.
    let lead = 128 + 192 + 2000;
    let wake2 = s.wake_up_after(1, (1_000_000 + lead) * US).unwrap() / US;
    let log = run_log(s);
    assert_eq!(times(&log, 0, is_tx), vec![320, wake2 - 2000]);
    assert_eq!(times(&log, 1, |w| matches!(w, MacWhat::RxData { .. })), vec![last + 1792, wake2 + 192 + 1792]);
    assert_eq!(times(&log, 0, |w| *w == MacWhat::AckReceived), vec![last + 1792 + 192 + 352, wake2 + 192 + 1792 + 544]);
}
