#![allow(dead_code)]
use coapcc_tcp::pipe::PipeConfig;

/// A fast link (1 Gbit/s) with `delay` seconds each way, no CSMs: every segment of a window
/// arrives at about one instant, so traces are easy to compute by hand.
pub fn fast_link(delay: f64) -> PipeConfig {
    PipeConfig::fast(1_000_000_000, delay)
}

pub fn close(a: f64, b: f64, eps: f64) -> bool {
    (a - b).abs() <= eps
}
