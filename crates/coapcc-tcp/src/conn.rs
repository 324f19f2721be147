//! One TCP endpoint: handshake, sender (segmentation, retransmission queue, RTO, fast
//! retransmit, NewReno recovery with PRR or RFC 6582 inflation, pacing, rate sampling) and
//! receiver (delayed ACKs), in Linux's structure without SACK and timestamps.
//!
//! Sans-IO: push input with [`Connection::on_segment`] and [`Connection::on_timeout`], pull
//! output with [`Connection::poll_transmit`] (until `None`) and [`Connection::poll_timeout`].

use std::collections::VecDeque;
use std::time::Duration;

use coapcc_cc::{Instant, SplitMix64};

use crate::cc::{BbrMode, CaState, CcCtx, RateSample, TcpCc, TcpCongestionControl, INFINITE_SSTHRESH};
use crate::config::{TcpCcConfig, TcpConfig};
use crate::rate::gives_rate_sample;
use crate::recv::Receiver;
use crate::rtt::RtoEstimator;
use crate::segment::Segment;
use crate::stats::{Counters, TraceEvent, TraceRecord};

/// Connection state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Not opened yet (client before [`Connection::connect`]).
    Closed,
    /// Passive side waiting for a SYN.
    Listen,
    /// SYN sent, waiting for the SYN-ACK.
    SynSent,
    /// SYN received, SYN-ACK sent, waiting for its ACK.
    SynRcvd,
    /// Data may flow.
    Established,
    /// The handshake ran out of retries.
    Failed,
}

#[derive(Clone, Copy, Debug)]
struct TxSeg {
    seq: u64,
    len: u32,
    tx_time: Instant,
    first_tx: Instant,
    delivered: u64,
    delivered_time: Instant,
    app_limited: bool,
    ever_retx: bool,
    lost: bool,
    retrans: bool,
}

fn dur(s: f64) -> Duration {
    Duration::from_nanos((s * 1e9).round() as u64)
}

/// One endpoint of a TCP connection.
#[derive(Clone, Debug)]
pub struct Connection {
    cfg: TcpConfig,
    cc: TcpCc,
    ctx: CcCtx,
    rng: SplitMix64,
    state: State,
    // Handshake.
    hs_pending: bool,
    hs_retries: u32,
    hs_sent_at: Instant,
    started_at: Option<Instant>,
    established_at: Option<Instant>,
    force_ack: bool,
    // Sender.
    snd_una: u64,
    snd_nxt: u64,
    write_end: u64,
    bounds: VecDeque<u64>,
    queue: VecDeque<TxSeg>,
    sacked_out: u32,
    lost_out: u32,
    retrans_out: u32,
    high_seq: u64,
    prior_cwnd: u32,
    prr_delivered: u32,
    prr_out: u32,
    rto: RtoEstimator,
    rto_deadline: Option<Instant>,
    rto_retransmits: u32,
    pacing_next: Instant,
    pacing_blocked: bool,
    first_tx: Instant,
    cwnd_limited_flag: bool,
    /// RFC 6582 (PRR off): the next retransmission goes out whatever cwnd says.
    force_retx: bool,
    // Receiver.
    recv: Receiver,
    counters: Counters,
    /// A data RTO whose loss episode is under way: when it fired and `high_seq` then.
    rto_episode: Option<(Instant, u64)>,
    /// The last retransmission of that episode (the RTO's own resend of the head at first).
    rto_last_resend: Instant,
    seen_dupack: bool,
    trace: Option<Vec<TraceRecord>>,
}

impl Connection {
    fn new(cfg: &TcpCcConfig, seed: u64, state: State) -> Self {
        let tcp = cfg.tcp;
        Connection {
            cfg: tcp,
            cc: TcpCc::new(&cfg.cc, &tcp),
            ctx: CcCtx {
                cwnd: tcp.init_cwnd,
                ssthresh: INFINITE_SSTHRESH,
                cwnd_cnt: 0,
                in_flight: 0,
                delivered: 0,
                delivered_time: Instant::ZERO,
                lost: 0,
                app_limited: 0,
                ca_state: CaState::Open,
                cwnd_limited: false,
                srtt: None,
                min_rtt: None,
                mtu: tcp.mtu,
                init_cwnd: tcp.init_cwnd,
                abc_limit: tcp.abc_limit,
            },
            rng: SplitMix64::new(seed),
            state,
            hs_pending: false,
            hs_retries: 0,
            hs_sent_at: Instant::ZERO,
            started_at: None,
            established_at: None,
            force_ack: false,
            snd_una: 1,
            snd_nxt: 1,
            write_end: 1,
            bounds: VecDeque::new(),
            queue: VecDeque::new(),
            sacked_out: 0,
            lost_out: 0,
            retrans_out: 0,
            high_seq: 0,
            prior_cwnd: 0,
            prr_delivered: 0,
            prr_out: 0,
            rto: RtoEstimator::new(&tcp),
            rto_deadline: None,
            rto_retransmits: 0,
            pacing_next: Instant::ZERO,
            pacing_blocked: false,
            first_tx: Instant::ZERO,
            cwnd_limited_flag: false,
            force_retx: false,
            recv: Receiver::new(1, &tcp),
            counters: Counters::default(),
            rto_episode: None,
            rto_last_resend: Instant::ZERO,
            seen_dupack: false,
            trace: None,
        }
    }

    /// The active (connecting) side; call [`Connection::connect`] to send the SYN.
    /// `seed` feeds the controller's randomness (BBR's gain-cycle start phase).
    pub fn client(cfg: &TcpCcConfig, seed: u64) -> Self {
        Connection::new(cfg, seed, State::Closed)
    }

    /// The passive (listening) side.
    pub fn server(cfg: &TcpCcConfig, seed: u64) -> Self {
        Connection::new(cfg, seed, State::Listen)
    }

    /// Record a [`TraceRecord`] for every data segment sent and every ACK of data received.
    pub fn enable_trace(&mut self) {
        self.trace.get_or_insert_with(Vec::new);
    }

    /// Take the trace records collected so far.
    pub fn take_trace(&mut self) -> Vec<TraceRecord> {
        self.trace.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Open the connection: the SYN goes out on the next [`Connection::poll_transmit`].
    pub fn connect(&mut self, now: Instant) {
        if self.state == State::Closed {
            self.state = State::SynSent;
            self.started_at = Some(now);
            self.hs_pending = true;
        }
    }

    /// Connection state.
    pub fn state(&self) -> State {
        self.state
    }

    /// Established (data may be written and will flow)?
    pub fn is_established(&self) -> bool {
        self.state == State::Established
    }

    /// When the handshake started (SYN sent or received) and completed at this end.
    pub fn handshake_times(&self) -> (Option<Instant>, Option<Instant>) {
        (self.started_at, self.established_at)
    }

    /// Queue `bytes` of application data (one write; segments never span two writes, as
    /// with `TCP_NODELAY` and writes issued apart). Allowed before establishment.
    pub fn write(&mut self, bytes: u64) {
        if bytes == 0 {
            return;
        }
        self.check_app_limited();
        self.write_end += bytes;
        self.bounds.push_back(self.write_end);
    }

    /// Bytes written and not yet cumulatively acknowledged.
    pub fn unacked_bytes(&self) -> u64 {
        self.write_end - self.snd_una
    }

    /// All written data acknowledged?
    pub fn send_complete(&self) -> bool {
        self.snd_una == self.write_end
    }

    /// In-order bytes received since the last call.
    pub fn take_delivered(&mut self) -> u64 {
        std::mem::take(&mut self.recv.pending)
    }

    /// In-order bytes received in total.
    pub fn bytes_received(&self) -> u64 {
        self.recv.delivered_total
    }

    /// Counters of this endpoint.
    pub fn counters(&self) -> Counters {
        let mut c = self.counters;
        c.bytes_delivered = self.recv.delivered_total;
        c.duplicate_bytes_received = self.recv.duplicate_bytes;
        c.setup_s = match (self.started_at, self.established_at) {
            (Some(a), Some(b)) => Some((b - a).as_secs_f64()),
            _ => None,
        };
        c
    }

    /// Congestion window in segments.
    pub fn cwnd(&self) -> u32 {
        self.ctx.cwnd
    }

    /// Slow-start threshold in segments (`u32::MAX` before any loss).
    pub fn ssthresh(&self) -> u32 {
        self.ctx.ssthresh
    }

    /// Congestion-avoidance state.
    pub fn ca_state(&self) -> CaState {
        self.ctx.ca_state
    }

    /// Current RTO in seconds (backed off).
    pub fn rto(&self) -> f64 {
        self.rto.rto()
    }

    /// Smoothed RTT, if sampled.
    pub fn srtt(&self) -> Option<f64> {
        self.rto.srtt()
    }

    /// Segments in flight (Linux's estimate).
    pub fn in_flight(&self) -> u32 {
        let sacked = if self.sacked_counts() { self.sacked_out } else { 0 };
        (self.queue.len() as u32).saturating_sub(sacked + self.lost_out) + self.retrans_out
    }

    /// The congestion controller (for inspection).
    pub fn cc(&self) -> &TcpCc {
        &self.cc
    }

    /// Fast recovery by RFC 6582's window inflation and deflation (`prr=off`), for a
    /// controller that leaves cwnd to the core; one that sets it on every ACK (BBR, Linux's
    /// `cong_control`) gets neither PRR nor this.
    fn rfc6582(&self) -> bool {
        !self.cfg.prr && !self.cc.owns_cwnd()
    }

    fn sacked_counts(&self) -> bool {
        match self.ctx.ca_state {
            CaState::Open | CaState::Disorder => self.cfg.limited_transmit,
            CaState::Recovery => !self.rfc6582(),
            CaState::Loss => true,
        }
    }

    /// Linux `tcp_rate_check_app_limited` (at the start of every write): less than one MSS
    /// unsent, the window not limiting, every lost segment retransmitted.
    fn check_app_limited(&mut self) {
        let inf = self.in_flight();
        if self.write_end - self.snd_nxt < u64::from(self.cfg.mss())
            && inf < self.ctx.cwnd
            && self.lost_out <= self.retrans_out
        {
            self.ctx.app_limited = (self.ctx.delivered + u64::from(inf)).max(1);
        }
    }

    /// The earliest instant at which [`Connection::on_timeout`] or
    /// [`Connection::poll_transmit`] has something to do.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let mut t = self.rto_deadline;
        let mut consider = |x: Option<Instant>| {
            if let Some(x) = x {
                t = Some(t.map_or(x, |y| y.min(x)));
            }
        };
        consider(self.recv.delack);
        if self.pacing_blocked {
            consider(Some(self.pacing_next));
        }
        t
    }

    /// Handle every timer that has expired at `now`.
    pub fn on_timeout(&mut self, now: Instant) {
        self.recv.on_delack(now);
        if self.pacing_blocked && self.pacing_next <= now {
            self.pacing_blocked = false;
        }
        let Some(deadline) = self.rto_deadline else { return };
        if deadline > now {
            return;
        }
        self.rto_deadline = None;
        match self.state {
            State::SynSent | State::SynRcvd => {
                let limit = if self.state == State::SynSent { self.cfg.syn_retries } else { self.cfg.synack_retries };
                if self.hs_retries >= limit {
                    self.state = State::Failed;
                    return;
                }
                self.hs_retries += 1;
                self.rto.back_off();
                self.counters.rto_expiries += 1;
                self.hs_pending = true;
            }
            State::Established if !self.queue.is_empty() => self.enter_loss(now),
            _ => {}
        }
    }

    fn enter_loss(&mut self, now: Instant) {
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

    fn end_rto_episode(&mut self, now: Instant) {
        if let Some((t, _)) = self.rto_episode.take() {
            self.counters.rto_episodes += 1;
            self.counters.rto_episode_s += (now - t).as_secs_f64();
            self.counters.rto_resend_s += (self.rto_last_resend - t).as_secs_f64();
        }
    }

    /// Take one segment from the network.
    pub fn on_segment(&mut self, now: Instant, seg: &Segment) {
        match self.state {
            State::Closed | State::Failed => {}
            State::Listen => {
                if seg.syn && seg.ack.is_none() {
                    self.state = State::SynRcvd;
                    self.started_at = Some(now);
                    self.recv = Receiver::new(seg.seq + 1, &self.cfg);
                    self.hs_pending = true;
                }
            }
            State::SynSent => {
                if seg.syn && seg.ack == Some(1) {
                    if self.hs_retries == 0 && self.cfg.handshake_rtt {
                        self.take_rtt(now - self.hs_sent_at);
                    }
                    self.rto_deadline = None;
                    self.recv = Receiver::new(seg.seq + 1, &self.cfg);
                    self.force_ack = true;
                    self.establish(now);
                }
            }
            State::SynRcvd => {
                if seg.syn && seg.ack.is_none() {
                    self.hs_pending = true; // the peer did not get our SYN-ACK
                } else if seg.ack.is_some_and(|a| a >= 1) {
                    if self.hs_retries == 0 && self.cfg.handshake_rtt {
                        self.take_rtt(now - self.hs_sent_at);
                    }
                    self.rto_deadline = None;
                    self.establish(now);
                    self.on_established_segment(now, seg);
                }
            }
            State::Established => {
                if seg.syn {
                    // Our handshake ACK was lost: repeat it.
                    self.force_ack = true;
                    return;
                }
                self.on_established_segment(now, seg);
            }
        }
    }

    fn take_rtt(&mut self, rtt: Duration) {
        let r = rtt.as_secs_f64();
        self.rto.sample(r, self.snd_una, self.snd_nxt);
        self.ctx.srtt = self.rto.srtt();
        self.ctx.min_rtt = Some(self.ctx.min_rtt.map_or(r, |m| m.min(r)));
    }

    fn establish(&mut self, now: Instant) {
        self.state = State::Established;
        self.established_at = Some(now);
        self.hs_retries = 0;
        self.ctx.delivered_time = now;
        self.cc.init(&mut self.ctx, now);
    }

    fn on_established_segment(&mut self, now: Instant, seg: &Segment) {
        if let Some(a) = seg.ack {
            self.on_ack(now, a, seg.is_pure_ack());
        }
        if seg.len > 0 {
            self.recv.on_data(now, seg.seq, seg.len, &self.cfg);
        }
    }

    fn on_ack(&mut self, now: Instant, ack: u64, pure: bool) {
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
                    self.take_rtt(now - f);
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
            // delivered out of order) only once new data beyond `high_seq` is out.
            if self.ctx.ca_state != CaState::Loss || self.snd_nxt > self.high_seq {
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
                if advanced && self.snd_una >= self.high_seq {
                    self.sacked_out = 0;
                    if self.ctx.ssthresh != INFINITE_SSTHRESH {
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
                if advanced {
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

    fn set_state(&mut self, st: CaState) {
        if st != CaState::Recovery {
            self.force_retx = false;
        }
        if self.ctx.ca_state != st {
            self.ctx.ca_state = st;
            self.cc.set_state(&mut self.ctx, st, &mut self.rng);
        }
    }

    fn enter_recovery(&mut self, now: Instant) -> u32 {
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

    fn mark_head_lost(&mut self) -> u32 {
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
    fn prr_update(&mut self, newly_acked_sacked: u32, newly_lost: u32, advanced: bool) {
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
        self.recv.ack_sent();
        Some(Segment {
            seq: seg.0,
            len: seg.1,
            ack: Some(self.recv.rcv_nxt),
            syn: false,
            retransmission: seg.2,
            header_bytes: self.cfg.header_bytes,
        })
    }

    fn record(&mut self, now: Instant, event: TraceEvent, seq: u64, len: u32) {
        if self.trace.is_none() {
            return;
        }
        let r = TraceRecord {
            time: now,
            event,
            seq,
            len,
            cwnd: self.ctx.cwnd,
            ssthresh: (self.ctx.ssthresh != INFINITE_SSTHRESH).then_some(self.ctx.ssthresh),
            in_flight: self.in_flight(),
            pacing_rate: self.cc.pacing_rate(),
            bbr_mode: self.cc.bbr_mode(),
            ca_state: self.ctx.ca_state,
            rto: self.rto.rto(),
        };
        if let Some(t) = self.trace.as_mut() {
            t.push(r);
        }
    }

    /// BBR mode, when BBR is the controller.
    pub fn bbr_mode(&self) -> Option<BbrMode> {
        self.cc.bbr_mode()
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
