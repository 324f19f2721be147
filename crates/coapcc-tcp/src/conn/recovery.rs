//! RTO loss episodes, fast retransmit and NewReno recovery, with PRR (RFC 6937, Linux's
//! `tcp_cwnd_reduction`) or RFC 6582's window inflation.

use coapcc_cc::Instant;

use super::{dur, Connection};
use crate::cc::{CaState, TcpCongestionControl};
use crate::stats::TraceEvent;

impl Connection {
    /// Fast recovery by RFC 6582's window inflation and deflation (`prr=off`), for a
    /// controller that leaves cwnd to the core; one that sets it on every ACK (BBR, Linux's
    /// `cong_control`) gets neither PRR nor this.
    pub(super) fn rfc6582(&self) -> bool {
        !self.cfg.prr && !self.cc.owns_cwnd()
    }

    pub(super) fn sacked_counts(&self) -> bool {
        match self.ctx.ca_state {
            CaState::Open | CaState::Disorder => self.cfg.limited_transmit,
            CaState::Recovery => !self.rfc6582(),
            CaState::Loss => true,
        }
    }

    pub(super) fn enter_loss(&mut self, now: Instant) {
        self.counters.rto_expiries += 1;
        self.counters.first_rto_at_s.get_or_insert(now.as_secs_f64());
        // An episode still under way ends here; this RTO's begins.
        self.end_rto_episode(now);
        self.rto_episode = Some((now, self.snd_nxt));
        self.rto_last_resend = now;
        self.ctx.in_flight = self.in_flight();
        let st = self.ctx.ca_state;
        if st <= CaState::Disorder
            || self.high_seq <= self.snd_una
            || (st == CaState::Loss && self.rto_retransmits == 0)
        {
            self.ctx.ssthresh = self.cc.ssthresh(&self.ctx);
        }
        self.sacked_out = 0;
        for s in self.queue.iter_mut() {
            // Linux tcp_sum_lost: a segment newly lost, or a retransmission lost again.
            if !s.lost || s.retrans {
                self.ctx.lost += 1;
            }
            if !s.lost {
                s.lost = true;
                self.lost_out += 1;
            }
            s.retrans = false;
        }
        self.retrans_out = 0;
        self.ctx.cwnd = self.in_flight() + 1;
        self.ctx.cwnd_cnt = 0;
        self.high_seq = self.snd_nxt;
        self.ctx.ca_state = CaState::Loss;
        self.force_retx = false;
        self.cc.set_state(&mut self.ctx, CaState::Loss, &mut self.rng);
        self.rto.back_off();
        self.rto_retransmits += 1;
        self.rto_deadline = Some(now + dur(self.rto.rto()));
        self.pacing_next = self.pacing_next.min(now);
        self.record(now, TraceEvent::Rto, self.snd_una, 0);
    }

    pub(super) fn end_rto_episode(&mut self, now: Instant) {
        if let Some((t, _)) = self.rto_episode.take() {
            self.counters.rto_episodes += 1;
            self.counters.rto_episode_s += (now - t).as_secs_f64();
            self.counters.rto_resend_s += (self.rto_last_resend - t).as_secs_f64();
        }
    }

    pub(super) fn set_state(&mut self, st: CaState) {
        if st != CaState::Recovery {
            self.force_retx = false;
        }
        if self.ctx.ca_state != st {
            self.ctx.ca_state = st;
            self.cc.set_state(&mut self.ctx, st, &mut self.rng);
        }
    }

    pub(super) fn enter_recovery(&mut self, now: Instant) -> u32 {
        self.counters.fast_retransmits += 1;
        self.high_seq = self.snd_nxt;
        self.prior_cwnd = self.ctx.cwnd;
        self.prr_delivered = 0;
        self.prr_out = 0;
        self.ctx.in_flight = self.in_flight();
        self.ctx.ssthresh = self.cc.ssthresh(&self.ctx);
        self.set_state(CaState::Recovery);
        let lost = self.mark_head_lost();
        if self.rfc6582() {
            // RFC 6582: cwnd = ssthresh + 3 SMSS (the segments that left the network).
            self.ctx.cwnd = self.ctx.ssthresh.saturating_add(self.cfg.dupthresh);
            self.force_retx = true;
        }
        self.record(now, TraceEvent::FastRetransmit, self.snd_una, 0);
        lost
    }

    pub(super) fn mark_head_lost(&mut self) -> u32 {
        match self.queue.front_mut() {
            Some(s) if !s.lost => {
                s.lost = true;
                self.lost_out += 1;
                self.ctx.lost += 1;
                1
            }
            _ => 0,
        }
    }

    /// Linux `tcp_cwnd_reduction` (PRR, RFC 6937 with Linux's bound choice).
    pub(super) fn prr_update(&mut self, newly_acked_sacked: u32, newly_lost: u32, advanced: bool) {
        if newly_acked_sacked == 0 || self.prior_cwnd == 0 {
            return;
        }
        self.prr_delivered += newly_acked_sacked;
        let in_flight = self.in_flight() as i64;
        let delta = i64::from(self.ctx.ssthresh) - in_flight;
        let prr_delivered = i64::from(self.prr_delivered);
        let prr_out = i64::from(self.prr_out);
        let mut sndcnt = if delta < 0 {
            let dividend = i64::from(self.ctx.ssthresh) * prr_delivered + i64::from(self.prior_cwnd) - 1;
            dividend / i64::from(self.prior_cwnd) - prr_out
        } else if advanced && newly_lost == 0 {
            delta.min((prr_delivered - prr_out).max(i64::from(newly_acked_sacked)) + 1)
        } else {
            delta.min(i64::from(newly_acked_sacked))
        };
        sndcnt = sndcnt.max(if self.prr_out > 0 { 0 } else { 1 });
        self.ctx.cwnd = (in_flight + sndcnt).max(0) as u32;
    }
}
