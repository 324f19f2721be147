//! The sender: segmentation of written bytes, the retransmission queue, the window and
//! pacing checks, pure ACKs and the handshake's segments.

use coapcc_cc::Instant;

use super::{dur, Connection, State, TxSeg};
use crate::cc::{CaState, TcpCongestionControl};
use crate::segment::Segment;
use crate::stats::TraceEvent;

impl Connection {
    /// Linux `tcp_rate_check_app_limited` (at the start of every write): less than one MSS
    /// unsent, the window not limiting, every lost segment retransmitted.
    pub(super) fn check_app_limited(&mut self) {
        let inf = self.in_flight();
        if self.write_end - self.snd_nxt < u64::from(self.cfg.mss())
            && inf < self.ctx.cwnd
            && self.lost_out <= self.retrans_out
        {
            self.ctx.app_limited = (self.ctx.delivered + u64::from(inf)).max(1);
        }
    }

    /// The next segment to send at `now`, if any. Call until it returns `None`.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Segment> {
        let h = self.cfg.header_bytes;
        match self.state {
            State::SynSent | State::SynRcvd if self.hs_pending => {
                self.hs_pending = false;
                self.hs_sent_at = now;
                self.rto_deadline = Some(now + dur(self.rto.rto()));
                let retx = self.hs_retries > 0;
                self.counters.segments_sent += 1;
                if retx {
                    self.counters.syn_retransmissions += 1;
                }
                let ack = if self.state == State::SynRcvd { Some(self.recv.rcv_nxt) } else { None };
                return Some(Segment { seq: 0, len: 0, ack, syn: true, retransmission: retx, header_bytes: h });
            }
            State::Established => {}
            _ => return None,
        }
        if self.force_ack {
            self.force_ack = false;
            return Some(self.pure_ack());
        }
        if self.recv.read_ack {
            // Linux sends this ACK from the read, before the application writes again.
            return Some(self.pure_ack());
        }
        if let Some(seg) = self.next_data(now) {
            return Some(seg);
        }
        if self.recv.ack_now {
            return Some(self.pure_ack());
        }
        None
    }

    fn pure_ack(&mut self) -> Segment {
        self.recv.ack_sent();
        self.counters.segments_sent += 1;
        Segment {
            seq: self.snd_nxt,
            len: 0,
            ack: Some(self.recv.rcv_nxt),
            syn: false,
            retransmission: false,
            header_bytes: self.cfg.header_bytes,
        }
    }

    fn can_send(&mut self, now: Instant) -> bool {
        let mut inf = self.in_flight();
        if !self.cfg.limited_transmit && self.ctx.ca_state == CaState::Disorder {
            inf += self.sacked_out;
        }
        if inf >= self.ctx.cwnd {
            self.cwnd_limited_flag = true;
            return false;
        }
        if self.cc.pacing_rate().is_some_and(|r| r > 0.0) && now < self.pacing_next {
            self.pacing_blocked = true;
            return false;
        }
        true
    }

    fn next_data(&mut self, now: Instant) -> Option<Segment> {
        let want_retx = self.lost_out > self.retrans_out;
        let want_new = self.snd_nxt < self.write_end
            && self.cfg.rwnd.is_none_or_ge(self.snd_nxt + 1 - self.snd_una, self.cfg.mss());
        if !want_retx && !want_new {
            return None;
        }
        let forced = want_retx && std::mem::take(&mut self.force_retx);
        if !forced && !self.can_send(now) {
            return None;
        }
        let (delivered, delivered_time) = (self.ctx.delivered, self.ctx.delivered_time);
        if self.queue.is_empty() {
            self.first_tx = now;
            self.ctx.delivered_time = now;
        }
        let app_limited = self.ctx.app_limited != 0;
        let first_tx = self.first_tx;
        let seg = if want_retx {
            let idx = self.queue.iter().position(|s| s.lost && !s.retrans).expect("lost_out > retrans_out");
            let s = &mut self.queue[idx];
            s.retrans = true;
            s.ever_retx = true;
            s.tx_time = now;
            s.first_tx = first_tx;
            s.delivered = delivered;
            s.delivered_time = delivered_time;
            s.app_limited = app_limited;
            let (seq, len) = (s.seq, s.len);
            self.retrans_out += 1;
            self.counters.retransmitted_segments += 1;
            if self.ctx.ca_state == CaState::Recovery {
                self.counters.recovery_retransmits += 1;
            }
            if idx == 0 {
                self.rto_deadline = Some(now + dur(self.rto.rto()));
            }
            if self.rto_episode.is_some() {
                self.rto_last_resend = now;
            }
            self.record(now, TraceEvent::Retransmit, seq, len);
            (seq, len, true)
        } else {
            if self.seen_dupack {
                self.counters.new_after_first_dupack += 1;
            }
            let bound = *self.bounds.front().expect("unsent data has a write bound");
            let len = (bound - self.snd_nxt).min(u64::from(self.cfg.mss())) as u32;
            let seq = self.snd_nxt;
            self.snd_nxt += u64::from(len);
            if self.snd_nxt == bound {
                self.bounds.pop_front();
            }
            self.queue.push_back(TxSeg {
                seq,
                len,
                tx_time: now,
                first_tx,
                delivered,
                delivered_time: if self.queue.is_empty() { now } else { delivered_time },
                app_limited,
                ever_retx: false,
                lost: false,
                retrans: false,
            });
            if self.rto_deadline.is_none() {
                self.rto_deadline = Some(now + dur(self.rto.rto()));
            }
            self.record(now, TraceEvent::Send, seq, len);
            (seq, len, false)
        };
        if self.ctx.ca_state == CaState::Recovery {
            self.prr_out += 1;
        }
        if self.in_flight() >= self.ctx.cwnd {
            self.cwnd_limited_flag = true;
        }
        let wire = self.cfg.header_bytes + seg.1;
        if let Some(rate) = self.cc.pacing_rate().filter(|r| *r > 0.0) {
            self.pacing_next = self.pacing_next.max(now) + dur(f64::from(wire) / rate);
        }
        self.pacing_blocked = false;
        self.counters.segments_sent += 1;
        self.counters.data_segments_sent += 1;
        // Linux tcp_transmit_skb: tcp_event_ack_sent, then tcp_event_data_sent.
        self.recv.ack_sent();
        self.recv.data_sent(now, &self.cfg);
        Some(Segment {
            seq: seg.0,
            len: seg.1,
            ack: Some(self.recv.rcv_nxt),
            syn: false,
            retransmission: seg.2,
            header_bytes: self.cfg.header_bytes,
        })
    }
}

trait RwndExt {
    fn is_none_or_ge(&self, need: u64, mss: u32) -> bool;
}

impl RwndExt for Option<u32> {
    /// A receive window allows one more byte beyond what is outstanding (and a full segment
    /// fits, approximately: the model does not split segments at the window edge).
    fn is_none_or_ge(&self, need: u64, mss: u32) -> bool {
        self.map_or(true, |w| need + u64::from(mss) - 1 <= u64::from(w))
    }
}
