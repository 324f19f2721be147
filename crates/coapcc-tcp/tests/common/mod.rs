#![allow(dead_code)]
use coapcc_tcp::pipe::{LinkDir, PipeConfig};

/// A fast link (1 Gbit/s) with `delay` seconds each way, no CSMs: every segment of a window
/// arrives at one instant, so traces are easy to compute by hand.
pub fn fast_link(delay: f64) -> PipeConfig {
    let d = LinkDir { rate_bps: 1e9, delay_s: delay, buffer_bytes: 1 << 40 };
    PipeConfig { up: d, down: d, csm_bytes: 0, request_bytes: 9, time_limit_s: 3600.0 }
}

pub fn close(a: f64, b: f64, eps: f64) -> bool {
    (a - b).abs() <= eps
}
