//! TCP New Reno window growth (RFC 5681 slow start and congestion avoidance, as Linux's
//! `tcp_reno_cong_avoid` does it). Fast retransmit and recovery (RFC 6582, PRR) live in the
//! sender core, which every controller shares.

use coapcc_cc::{Instant, SplitMix64};

use super::{BbrMode, CaState, CcCtx, RateSample, TcpCongestionControl};
use crate::config::{NewRenoParams, SsthreshBase};

/// New Reno.
#[derive(Clone, Debug)]
pub struct NewReno {
    params: NewRenoParams,
}

impl NewReno {
    /// A controller with these parameters.
    pub fn new(params: NewRenoParams) -> Self {
        NewReno { params }
    }
}

impl TcpCongestionControl for NewReno {
    fn init(&mut self, _ctx: &mut CcCtx, _now: Instant) {}

    fn ssthresh(&mut self, ctx: &CcCtx) -> u32 {
        let base = match self.params.ssthresh_base {
            SsthreshBase::Cwnd => ctx.cwnd,
            SsthreshBase::Flight => ctx.in_flight,
        };
        (base / 2).max(2)
    }

    fn set_state(&mut self, _ctx: &mut CcCtx, _state: CaState, _rng: &mut SplitMix64) {}

    fn cong_avoid(&mut self, ctx: &mut CcCtx, mut acked: u32) {
        if !ctx.cwnd_limited {
            return;
        }
        if ctx.cwnd < ctx.ssthresh {
            // Slow start: one segment per newly ACKed segment (optionally limited), up to ssthresh.
            let grow = match ctx.abc_limit {
                Some(l) => acked.min(l),
                None => acked,
            };
            let cwnd = ctx.cwnd.saturating_add(grow).min(ctx.ssthresh);
            acked -= (cwnd - ctx.cwnd).min(acked);
            if ctx.abc_limit.is_some() {
                acked = 0;
            }
            ctx.cwnd = cwnd;
            if acked == 0 {
                return;
            }
        }
        // Congestion avoidance: one segment per window of ACKed segments.
        let w = ctx.cwnd.max(1);
        if ctx.cwnd_cnt >= w {
            ctx.cwnd_cnt = 0;
            ctx.cwnd += 1;
        }
        ctx.cwnd_cnt += acked;
        if ctx.cwnd_cnt >= w {
            let delta = ctx.cwnd_cnt / w;
            ctx.cwnd_cnt -= delta * w;
            ctx.cwnd += delta;
        }
    }

    fn cong_control(&mut self, _ctx: &mut CcCtx, _rs: &RateSample, _now: Instant, _rng: &mut SplitMix64) -> bool {
        false
    }

    fn pacing_rate(&self) -> Option<f64> {
        None
    }

    fn bbr_mode(&self) -> Option<BbrMode> {
        None
    }
}
