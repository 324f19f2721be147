//! The ACK path (Linux `tcp_ack`): delivery accounting and the RTT sample, duplicate ACKs,
//! loss detection and the recovery state (`tcp_fastretrans_alert`, Reno flavour), the rate
//! sample (`tcp_rate_gen`) and the window update (`tcp_cong_control`).

use coapcc_cc::Instant;

use super::{dur, Connection};
use crate::cc::{CaState, RateSample, TcpCongestionControl, INFINITE_SSTHRESH};
use crate::rate::gives_rate_sample;
use crate::stats::TraceEvent;

impl Connection {
    /// Whether a recovery or RTO episode is held because the ACKs reached `high_seq` exactly
    /// (`recover_hold=on`; off by default, the episode then ends on an ACK of `high_seq`).
    /// Linux `tcp_try_undo_recovery`, called for Recovery from `tcp_fastretrans_alert` and
    /// for Loss from `tcp_process_loss`, the same in 4.15 and since: "Hold old state until
    /// something *above* high_seq is ACKed. For Reno it is MUST to prevent false fast
    /// retransmits (RFC2582)". Until an ACK covers more than `high_seq` the state stays,
    /// duplicate ACKs count for nothing (no delivery, no fast retransmit: RFC 6582 §3.2 step
    /// 2 likewise starts none unless the ACK covers more than `recover`), so a segment lost
    /// right at `high_seq` waits for the RTO.
    fn held_at_high_seq(&self) -> bool {
        self.cfg.recover_hold
            && matches!(self.ctx.ca_state, CaState::Recovery | CaState::Loss)
            && self.snd_una == self.high_seq
    }

    pub(super) fn on_ack(&mut self, now: Instant, ack: u64, pure: bool) {
        if ack > self.snd_nxt {
            return;
        }
        let prior_in_flight = self.in_flight();
        let prior_delivered = self.ctx.delivered;
        let mut rs = RateSample { delivered: -1, prior_in_flight, ..RateSample::default() };
        let mut newly_lost = 0u32;
        let mut advanced = false;
        let mut is_dupack = false;
        let mut acked_pkts = 0u32;
        let mut prior_time: Option<Instant> = None;
        let mut snd_interval = 0.0;
        if ack > self.snd_una {
            advanced = true;
            let mut retrans_acked = false;
            let mut first_ackt: Option<Instant> = None;
            let mut last_ackt: Option<Instant> = None;
            let mut prior_seg_delivered: Option<u64> = None;
            while let Some(s) = self.queue.front_mut() {
                let end = s.seq + u64::from(s.len);
                if end > ack {
                    if s.seq < ack {
                        s.len -= (ack - s.seq) as u32;
                        s.seq = ack;
                    }
                    break;
                }
                let s = self.queue.pop_front().expect("front exists");
                acked_pkts += 1;
                if s.lost {
                    self.lost_out -= 1;
                    if s.retrans {
                        self.retrans_out -= 1;
                    }
                }
                if s.ever_retx {
                    retrans_acked = true;
                } else {
                    first_ackt.get_or_insert(s.tx_time);
                    last_ackt = Some(s.tx_time);
                }
                if gives_rate_sample(prior_seg_delivered, s.delivered) {
                    prior_seg_delivered = Some(s.delivered);
                    prior_time = Some(s.delivered_time);
                    rs.is_app_limited = s.app_limited;
                    snd_interval = (s.tx_time - s.first_tx).as_secs_f64();
                    self.first_tx = s.tx_time;
                }
            }
            if let Some(p) = prior_seg_delivered {
                rs.prior_delivered = p;
            }
            self.snd_una = ack;
            self.rto_retransmits = 0;
            if self.rto_episode.is_some_and(|(_, high)| ack >= high) {
                self.end_rto_episode(now);
            }
            // Reno: one ACK fills the hole, the rest eat the duplicate ACKs counted before.
            if acked_pkts > 0 {
                self.ctx.delivered += u64::from(acked_pkts.saturating_sub(self.sacked_out).max(1));
                if acked_pkts > self.sacked_out {
                    self.sacked_out = 0;
                } else {
                    self.sacked_out -= acked_pkts - 1;
                }
            }
            let mut sampled = false;
            if !retrans_acked {
                if let (Some(f), Some(l)) = (first_ackt, last_ackt) {
                    self.take_rtt(now - f, now - l);
                    rs.rtt = Some((now - l).as_secs_f64());
                    sampled = true;
                }
            }
            if !sampled {
                self.rto.new_data_acked(first_ackt.is_some());
            }
            self.rto_deadline = if self.queue.is_empty() { None } else { Some(now + dur(self.rto.rto())) };
        } else if ack == self.snd_una && pure && !self.queue.is_empty() {
            is_dupack = true;
            self.seen_dupack = true;
            self.counters.dupacks_received += 1;
            let prior_sacked = self.sacked_out;
            // Linux tcp_process_loss: after an RTO a Reno duplicate ACK counts (as a segment
            // delivered out of order) only once new data beyond `high_seq` is out; and neither
            // there nor in Recovery while the episode is held at `high_seq` (below).
            if !self.held_at_high_seq() && (self.ctx.ca_state != CaState::Loss || self.snd_nxt > self.high_seq) {
                self.sacked_out += 1;
            }
            let packets_out = self.queue.len() as u32;
            let holes = self.lost_out.max(1).min(packets_out);
            if self.sacked_out + holes > packets_out {
                self.sacked_out = packets_out - holes;
            }
            if self.sacked_out > prior_sacked {
                self.ctx.delivered += 1;
            }
        } else {
            return;
        }
        let acked_sacked = (self.ctx.delivered - prior_delivered) as u32;
        if acked_sacked > 0 {
            self.ctx.delivered_time = now;
        }

        // Loss detection and recovery state (Linux tcp_fastretrans_alert, Reno flavour).
        match self.ctx.ca_state {
            CaState::Open | CaState::Disorder => {
                if self.sacked_out + 1 > self.cfg.dupthresh && is_dupack {
                    newly_lost += self.enter_recovery(now);
                } else if self.sacked_out > 0 {
                    self.set_state(CaState::Disorder);
                } else if self.ctx.ca_state == CaState::Disorder {
                    self.set_state(CaState::Open);
                }
            }
            CaState::Recovery => {
                if advanced {
                    self.counters.recovery_rounds += 1;
                }
                if self.held_at_high_seq() {
                    // Held (tcp_try_undo_recovery): no partial-ACK retransmission, no
                    // duplicate ACK counted or inflating the window. RFC 6582 ends its
                    // inflation on this full ACK (cwnd = ssthresh) but, the ACK not covering
                    // more than `recover`, starts no new fast retransmit either.
                    self.sacked_out = 0;
                    if advanced && self.rfc6582() && self.ctx.ssthresh != INFINITE_SSTHRESH {
                        self.ctx.cwnd = self.ctx.ssthresh;
                        self.force_retx = false;
                    }
                } else if advanced && self.snd_una >= self.high_seq {
                    self.sacked_out = 0;
                    // Linux tcp_end_cwnd_reduction: cwnd = ssthresh, except for a controller
                    // that sets cwnd itself (`cong_control`: BBR), which it leaves alone.
                    if self.ctx.ssthresh != INFINITE_SSTHRESH && !self.cc.owns_cwnd() {
                        self.ctx.cwnd = self.ctx.ssthresh;
                    }
                    self.set_state(CaState::Open);
                } else if advanced {
                    // NewReno partial ACK: the new head is lost too.
                    newly_lost += self.mark_head_lost();
                    if self.rfc6582() {
                        self.force_retx = true;
                        let c = self.ctx.cwnd.saturating_sub(acked_pkts);
                        self.ctx.cwnd = if acked_pkts >= 1 { c + 1 } else { c };
                    }
                } else if is_dupack && self.rfc6582() {
                    self.ctx.cwnd += 1;
                }
            }
            CaState::Loss => {
                // Held at `high_seq`, Linux leaves the Reno count as the ACK left it.
                if advanced && !self.held_at_high_seq() {
                    self.sacked_out = 0;
                    if self.snd_una >= self.high_seq {
                        self.set_state(CaState::Open);
                    }
                }
            }
        }

        // Rate sample (Linux tcp_rate_gen).
        if self.ctx.app_limited != 0 && self.ctx.delivered > self.ctx.app_limited {
            self.ctx.app_limited = 0;
        }
        if let Some(pt) = prior_time {
            rs.delivered = (self.ctx.delivered - rs.prior_delivered) as i64;
            let ack_interval = (now - pt).as_secs_f64();
            rs.interval = snd_interval.max(ack_interval);
            if self.ctx.min_rtt.is_some_and(|m| rs.interval < m) {
                rs.interval = -1.0;
            }
        }
        rs.acked_sacked = acked_sacked;
        rs.losses = newly_lost;

        // Window update (Linux tcp_cong_control).
        self.ctx.in_flight = self.in_flight();
        self.ctx.cwnd_limited = self.cwnd_limited_flag
            || prior_in_flight >= self.ctx.cwnd
            || (self.ctx.cwnd < self.ctx.ssthresh && self.ctx.cwnd < 2 * prior_in_flight);
        let owned = self.cc.cong_control(&mut self.ctx, &rs, now, &mut self.rng);
        if !owned {
            if self.ctx.ca_state == CaState::Recovery {
                if self.cfg.prr {
                    self.prr_update(acked_sacked, newly_lost, advanced);
                }
            } else if advanced {
                self.cc.cong_avoid(&mut self.ctx, acked_sacked);
            }
        }
        self.cwnd_limited_flag = false;
        self.record(now, if is_dupack { TraceEvent::DupAck } else { TraceEvent::Ack }, ack, 0);
    }
}
