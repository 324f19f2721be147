//! One TCP endpoint: handshake, sender (segmentation, retransmission queue, RTO, fast
//! retransmit, NewReno recovery with PRR or RFC 6582 inflation, pacing, rate sampling) and
//! receiver (delayed ACKs), in Linux's structure without SACK and timestamps.
//!
//! Sans-IO: push input with [`Connection::on_segment`] and [`Connection::on_timeout`], pull
//! output with [`Connection::poll_transmit`] (until `None`) and [`Connection::poll_timeout`].

//! The code is split by job: the handshake, the timers and the public API here; the sender
//! (segmentation, the retransmission queue, pacing) in `send`; the ACK path (delivery
//! accounting, loss detection, the rate sample, the window update) in `ack`; RTO loss
//! episodes, fast retransmit and NewReno recovery (PRR or RFC 6582 inflation) in `recovery`.

mod ack;
mod recovery;
mod send;

use std::collections::VecDeque;
use std::time::Duration;

use coapcc_cc::{Instant, SplitMix64};

use crate::cc::{BbrMode, CaState, CcCtx, TcpCc, TcpCongestionControl, INFINITE_SSTHRESH};
use crate::config::{TcpCcConfig, TcpConfig};
use crate::recv::{Receiver, RecvCtx};
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
        self.recv.take(&self.cfg)
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

    /// The minimum RTT, seconds (Linux `tcp_min_rtt`: the smallest RTT of the last segment
    /// an ACK covered; the rate sample's floor), `None` before the first sample.
    pub fn min_rtt(&self) -> Option<f64> {
        self.ctx.min_rtt
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
        self.recv.on_delack(now, &self.cfg, self.rto.rto());
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
                        self.take_rtt(now - self.hs_sent_at, now - self.hs_sent_at);
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
                        self.take_rtt(now - self.hs_sent_at, now - self.hs_sent_at);
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

    /// An RTT sample (Linux `tcp_ack_update_rtt`): `rtt` from the first segment the ACK
    /// covers feeds the estimator and the RTO, `ca_rtt` from the last one the minimum RTT
    /// (`tcp_update_rtt_min(sk, ca_rtt_us)`: the floor of the rate sample's interval).
    fn take_rtt(&mut self, rtt: Duration, ca_rtt: Duration) {
        let r = rtt.as_secs_f64();
        self.rto.sample(r, self.snd_una, self.snd_nxt);
        self.ctx.srtt = self.rto.srtt();
        let c = ca_rtt.as_secs_f64();
        self.ctx.min_rtt = Some(self.ctx.min_rtt.map_or(c, |m| m.min(c)));
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
            let ctx = RecvCtx { srtt: self.rto.srtt(), rto: self.rto.rto() };
            self.recv.on_data(now, seg.seq, seg.len, &self.cfg, ctx);
        }
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
