#![allow(dead_code)]
use coapcc_tcp::pipe::{Dir, Pipe, PipeConfig};

/// A fast link (1 Gbit/s) with `delay` seconds each way, no CSMs: every segment of a window
/// arrives at about one instant, so traces are easy to compute by hand.
pub fn fast_link(delay: f64) -> PipeConfig {
    PipeConfig::fast(1_000_000_000, delay)
}

pub fn close(a: f64, b: f64, eps: f64) -> bool {
    (a - b).abs() <= eps
}

/// Segment `k` (1-based) of the response: its first byte's sequence number (256-byte
/// segments, as the testbed's MSS).
pub fn seg(k: u64) -> u64 {
    1 + 256 * (k - 1)
}

/// Turns tracing on and drops the first transmission of the last segment of a
/// `response`-byte response (after the 2-byte CSM): a tail loss only an RTO repairs.
pub fn drop_last_tx_once(p: &mut Pipe, response: u64) {
    p.server.enable_trace();
    let last = 1 + 2 + 256 * (response / 256);
    let mut n = 0;
    p.set_drop_rule(move |d, s, _| {
        if d == Dir::Down && s.seq == last && s.len > 0 && n < 1 {
            n += 1;
            return true;
        }
        false
    });
}
