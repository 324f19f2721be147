//! Cooja's MRM reception rules (`net/medium.rs`) against hand-computed cases.
//!
//! Frames are injected on Contiki's nullrdc stack without the processor model: a frame handed
//! over at t goes on the air at t + 320 µs (CCA 128 + turnaround 192) and lasts (PSDU + 6) ·
//! 32 µs. Received powers are MRM's free space at 2 400 MHz: −40.044 − 20·log10(d) dB plus the
//! output power (0 dBm) and the system gain.

use coapcc_mesh::mrm::{CaptureMode, MrmConfig};
use coapcc_mesh::{MacWhat, MeshNet, MeshNetConfig};

const US: u64 = 1_000;

/// Nodes on a line at the given x positions (metres), the preset's Contiki stack without the
/// processor model or RPL traffic, and `mrm`.
fn line(xs: &[f64], mrm: MrmConfig) -> MeshNet<u32> {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let k = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let text: String = xs.iter().map(|x| format!("{x} 0\n")).collect();
    let path = std::env::temp_dir().join(format!("coapcc-mrm-{}-{k}.txt", std::process::id()));
    std::fs::write(&path, text).unwrap();
    let mut c = MeshNetConfig::preset("ancillotti-cooja", &format!("file:{}", path.display())).unwrap();
    c.mote.cpu = false;
    c.routing.rpl.control = false;
    c.routing.min_link_prr = 1e-6;
    c.radio.mrm = Some(mrm);
    let mut n = MeshNet::new(&c, 1).unwrap();
    std::fs::remove_file(&path).unwrap();
    n.enable_mac_log();
    n
}

/// Inject `frames` (at µs, from, to), run to the end; the payloads delivered.
fn run(n: &mut MeshNet<u32>, frames: &[(u64, u16, u16)]) -> Vec<u32> {
    let mut seq = 0;
    for (i, &(at, from, to)) in frames.iter().enumerate() {
        n.inject(at * US, &mut seq, from, to, 50, i as u32);
    }
    let mut got = Vec::new();
    while n.peek().is_some() {
        if let Some(d) = n.poll(&mut seq) {
            got.push(d.payload);
        }
    }
    got
}

#[test]
fn the_preset_receives_up_to_10_m_and_is_disturbed_up_to_20_m() {
    // Gain −33.9 dB: P(d) = −73.944 − 20·log10(d) dBm; noise −100 dBm, threshold 6 dB.
    let p = MrmConfig::default();
    // 10 m: −93.944 dBm, SNR 6.056 dB ≥ 6: received with certainty.
    assert!((p.power_dbm(10.0) + 93.944).abs() < 1e-3);
    assert_eq!(p.prr(10.0), 1.0);
    // 20 m: −99.965 dBm > −100 (disturbs); 20.2 m: −100.051 dBm (does not).
    assert!((p.power_dbm(20.0) + 99.965).abs() < 1e-3);
    assert!((p.power_dbm(20.2) + 100.051).abs() < 1e-3);
    // Node 1 receives from 0 (10 m); node 2 at 20 m from 1 sends to 3 meanwhile (node 4 only
    // connects the DODAG; it never transmits).
    let mut n = line(&[0.0, 10.0, 30.0, 40.0, 20.0], MrmConfig::default());
    assert_eq!(run(&mut n, &[(0, 0, 1), (100, 2, 3)]), vec![1]);
    let lost = n.mac_log().iter().any(|r| r.node == 1 && matches!(r.what, MacWhat::RxLost { collision: true, .. }));
    assert!(lost, "the 20 m frame disturbed node 1");
    // 20.2 m away the same frame stays below the noise floor: both are received.
    let mut n = line(&[0.0, 10.0, 30.2, 40.2, 16.7, 23.5], MrmConfig::default());
    let mut got = run(&mut n, &[(0, 0, 1), (100, 2, 3)]);
    got.sort();
    assert_eq!(got, vec![0, 1]);
}

#[test]
fn without_the_capture_effect_any_overlap_destroys_both() {
    // Two senders 10 m either side of node 1, equal power, 100 µs apart: both lost.
    let mut n = line(&[0.0, 10.0, 20.0], MrmConfig::default());
    assert_eq!(run(&mut n, &[(0, 0, 1), (100, 2, 1)]), Vec::<u32>::new());
    assert_eq!(n.drop_causes().air_collision, 2);
    // Without overlap both arrive: the first ends at 320 + 56·32 = 2 112 µs.
    let mut n = line(&[0.0, 10.0, 20.0], MrmConfig::default());
    assert_eq!(run(&mut n, &[(0, 0, 1), (1_800, 2, 1)]), vec![0, 1]);
}

#[test]
fn capture_takes_a_later_frame_only_within_the_preamble() {
    // Capture on, strong signals, no randomness within 10 m (50 % point at 14.14 m, σ 1 dB:
    // PRR(10 m) = 0.9987; seeds checked below keep every 10 m draw).
    let smooth = MrmConfig::smooth(14.142, 0.0);
    assert_eq!(smooth.prr(10.0), 1.0);
    // Equal powers (both 10 m from node 1): the later frame is not more than 3 dB weaker.
    // 30 µs later: the CC2420 is still searching for the first frame's delimiter, and
    // synchronises on the second (MRM's 64 µs preamble window).
    let mut n = line(&[0.0, 10.0, 20.0], smooth.clone());
    assert_eq!(run(&mut n, &[(0, 0, 1), (30, 2, 1)]), vec![1]);
    // 500 µs later: the radio is inside the first frame and takes the second one's bytes as
    // its own; both are lost.
    let mut n = line(&[0.0, 10.0, 20.0], smooth.clone());
    assert_eq!(run(&mut n, &[(0, 0, 1), (500, 2, 1)]), Vec::<u32>::new());
    // As MRM decides for its connections alone, the later frame always wins.
    let conn = MrmConfig { capture_mode: CaptureMode::Connection, ..smooth.clone() };
    let mut n = line(&[0.0, 10.0, 20.0], conn);
    assert_eq!(run(&mut n, &[(0, 0, 1), (500, 2, 1)]), vec![1]);
}

#[test]
fn capture_ignores_a_frame_more_than_3_db_weaker() {
    // Node 2 is 14.142 m from node 1: 20·log10(1.4142) = 3.01 dB weaker than node 0 at 10 m,
    // so it does not disturb node 1's reception (and its own draw does not matter).
    let smooth = MrmConfig::smooth(20.0, 0.0);
    assert_eq!(smooth.prr(14.142), 1.0);
    let mut n = line(&[0.0, 10.0, 24.142], smooth);
    assert_eq!(run(&mut n, &[(0, 0, 1), (100, 2, 1)]), vec![0]);
}

#[test]
fn cca_senses_only_registered_frames_above_the_threshold() {
    // Strong signals (0 dB gain): node 1 receives node 0's frame at −60.04 dBm and its CCA is
    // busy during it; node 1's own frame then waits.
    let mut n = line(&[0.0, 10.0, 20.0], MrmConfig::smooth(14.142, 0.0));
    run(&mut n, &[(0, 0, 1), (1_000, 1, 2)]);
    assert!(n.mac_log().iter().any(|r| r.node == 1 && r.what == MacWhat::CcaBusy));
    // The preset's signals (−93.94 dBm at 10 m) stay below the CC2420's −90 dBm threshold.
    let mut n = line(&[0.0, 10.0, 20.0], MrmConfig::default());
    run(&mut n, &[(0, 0, 1), (1_000, 1, 2)]);
    assert!(!n.mac_log().iter().any(|r| r.what == MacWhat::CcaBusy));
}

#[test]
fn reception_draws_follow_the_probability() {
    // 500 frames over a link at the 50 % point: about half arrive.
    let m = MrmConfig::smooth(14.142, 1.0);
    let mut n = line(&[0.0, 14.142], m);
    let frames: Vec<(u64, u16, u16)> = (0..500).map(|i| (i * 10_000, 0, 1)).collect();
    let got = run(&mut n, &frames).len() as f64;
    assert!((200.0..300.0).contains(&got), "{got}");
    assert_eq!(n.drop_causes().air_fading as f64 + got, 500.0);
}
