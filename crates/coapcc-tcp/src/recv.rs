//! The receiving half: in-order delivery, an out-of-order store (no SACK is sent, but
//! segments above a hole are kept, as every real stack does), and when to acknowledge.
//!
//! Two receivers (`receiver=`):
//!
//! - [`ReceiverModel::Linux`]: Linux 4.15's ACK machinery (`net/ipv4/tcp_input.c`,
//!   `tcp_output.c`, `tcp_timer.c`, `tcp.c`): quick-ACK mode and its count
//!   (`tcp_incr_quickack`, `tcp_enter_quickack_mode`, `tcp_grow_window`'s `quick |= 1`), an
//!   immediate ACK for a duplicate segment (`tcp_data_queue`, `tcp_send_dupack`), the
//!   delayed-ACK timeout estimate `ato` (`tcp_event_data_recv`, `tcp_send_delayed_ack`,
//!   `tcp_delack_timer_handler`), interactive ("pingpong") mode (`tcp_event_data_sent`), the
//!   ACK decision itself (`__tcp_ack_snd_check`) and the ACK a read sends
//!   (`tcp_cleanup_rbuf`). docs/tcp.md cites each rule.
//! - [`ReceiverModel::Rfc5681`]: RFC 5681 §4.2 as a fixed rule: an ACK for every
//!   `ack_every`-th full segment, at once for out-of-order data, duplicates and data filling a
//!   hole, otherwise after the constant `delack`; optionally `quickack` immediate ACKs at the
//!   start.

use coapcc_cc::Instant;
use core::time::Duration;

use crate::config::{DelackTimer, ReceiverModel, TcpConfig};

/// Linux `TCP_ATO_MIN` and `TCP_DELACK_MIN` (HZ/25): 40 ms.
pub const ATO_MIN: f64 = 0.040;
/// Linux `TCP_MAX_QUICKACKS`.
pub const MAX_QUICKACKS: u32 = 16;
/// Linux's delayed-ACK bound for bulk (not interactive, not pushed) data, HZ/2.
const DELACK_BULK_MAX: f64 = 0.5;
/// Linux `TCP_MSS_DEFAULT` and `TCP_MIN_MSS` (`tcp_initialize_rcv_mss`, `tcp_measure_rcv_mss`).
const MSS_DEFAULT: u32 = 536;
const MIN_MSS: u32 = 88;

/// What the connection tells the receiver about itself as a sender (Linux reads these from
/// the same socket: `tp->srtt_us` bounds the delayed-ACK timeout, `icsk_rto` bounds `ato`).
#[derive(Clone, Copy, Debug)]
pub struct RecvCtx {
    /// Smoothed RTT of this endpoint's own samples, seconds.
    pub srtt: Option<f64>,
    /// Current RTO of this endpoint, seconds.
    pub rto: f64,
}

/// Receiver state of one connection.
#[derive(Clone, Debug, Default)]
pub struct Receiver {
    /// Next byte expected.
    pub rcv_nxt: u64,
    /// Out-of-order ranges `[start, end)`, sorted and disjoint, all above `rcv_nxt`.
    ooo: Vec<(u64, u64)>,
    /// `rfc5681`: in-order bytes received since the last ACK was sent.
    unacked: u64,
    /// Delayed-ACK deadline.
    pub delack: Option<Instant>,
    /// An ACK must go out at once.
    pub ack_now: bool,
    /// The pending immediate ACK was asked for by the application's read (Linux sends it
    /// from `tcp_recvmsg`, before anything the application writes next).
    pub read_ack: bool,
    /// Quick ACKs left (`icsk_ack.quick`; `rfc5681`: the `quickack` budget).
    quick: u32,
    /// In-order bytes not yet taken by the application.
    pub pending: u64,
    /// In-order bytes delivered in total.
    pub delivered_total: u64,
    /// Duplicate data bytes received (already delivered before).
    pub duplicate_bytes: u64,
    // Linux only.
    /// The Linux receiver is in use.
    linux: bool,
    /// `rcv_wup`: `rcv_nxt` when the last ACK was sent.
    rcv_wup: u64,
    /// `ICSK_ACK_SCHED`: data arrived that is not acknowledged yet.
    scheduled: bool,
    /// `ICSK_ACK_PUSHED` / `ICSK_ACK_PUSHED2`: a segment shorter than `rcv_mss` arrived (one,
    /// two) since the last ACK.
    pushed: u8,
    /// `icsk_ack.pingpong`: interactive mode (no quick ACKs, delayed ACKs bounded at 200 ms).
    pub pingpong: bool,
    /// `icsk_ack.ato`, seconds; 0 until the first data segment.
    pub ato: f64,
    /// `icsk_ack.lrcvtime`: when the last in-order data segment arrived.
    lrcvtime: Instant,
    /// `icsk_ack.rcv_mss` and `last_seg_size`.
    rcv_mss: u32,
    last_seg_size: u32,
    /// `tp->rcv_wnd`: the window announced with the last ACK, bytes.
    pub rcv_wnd: u32,
    /// `tp->rcv_ssthresh`: the window the receiver is willing to announce, growing.
    rcv_ssthresh: u32,
    /// `tp->window_clamp`.
    window_clamp: u32,
}

/// What a data segment was to the receiver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataKind {
    /// Advanced `rcv_nxt`.
    InOrder,
    /// Above a hole.
    OutOfOrder,
    /// Entirely below `rcv_nxt`.
    Duplicate,
}

fn dur(s: f64) -> Duration {
    Duration::from_nanos((s * 1e9).round() as u64)
}

impl Receiver {
    /// Start receiving at `rcv_nxt`, with the window Linux offers at the handshake
    /// (`tcp_select_initial_window`: `init_rwnd` segments) and the clamp it sets once
    /// established (`tcp_init_buffer_space`).
    pub fn new(rcv_nxt: u64, cfg: &TcpConfig) -> Self {
        let mss = cfg.mss();
        let rcv_wnd = cfg.init_rwnd.saturating_mul(mss);
        let clamp = cfg.window_clamp();
        Receiver {
            rcv_nxt,
            linux: cfg.receiver == ReceiverModel::Linux,
            rcv_wup: rcv_nxt,
            quick: if cfg.receiver == ReceiverModel::Rfc5681 { cfg.quickack } else { 0 },
            // tcp_initialize_rcv_mss.
            rcv_mss: mss.min(rcv_wnd / 2).clamp(MIN_MSS, MSS_DEFAULT),
            rcv_wnd,
            rcv_ssthresh: rcv_wnd.min(clamp),
            window_clamp: clamp,
            ..Receiver::default()
        }
    }

    /// Take a data segment `[seq, seq + len)`.
    pub fn on_data(&mut self, now: Instant, seq: u64, len: u32, cfg: &TcpConfig, ctx: RecvCtx) -> DataKind {
        match cfg.receiver {
            ReceiverModel::Rfc5681 => self.on_data_rfc5681(now, seq, len, cfg),
            ReceiverModel::Linux => self.on_data_linux(now, seq, len, cfg, ctx),
        }
    }

    fn on_data_rfc5681(&mut self, now: Instant, seq: u64, len: u32, cfg: &TcpConfig) -> DataKind {
        let end = seq + u64::from(len);
        if end <= self.rcv_nxt {
            self.duplicate_bytes += u64::from(len);
            self.ack_now = true;
            return DataKind::Duplicate;
        }
        if seq > self.rcv_nxt {
            self.insert_ooo(seq, end);
            self.ack_now = true;
            return DataKind::OutOfOrder;
        }
        let had_hole = !self.ooo.is_empty();
        self.advance(end);
        self.unacked += u64::from(len);
        if had_hole {
            // RFC 5681 §4.2: ACK at once a segment that fills (part of) a gap.
            self.ack_now = true;
        } else if self.quick > 0 {
            self.quick -= 1;
            self.ack_now = true;
        } else if self.unacked > u64::from(cfg.ack_every.saturating_sub(1)) * u64::from(cfg.mss()) {
            self.ack_now = true;
        } else if self.delack.is_none() {
            self.delack = Some(now + dur(cfg.delack));
        }
        DataKind::InOrder
    }

    /// Linux `tcp_data_queue` (and `tcp_send_dupack` for old data), then `tcp_ack_snd_check`.
    fn on_data_linux(&mut self, now: Instant, seq: u64, len: u32, cfg: &TcpConfig, ctx: RecvCtx) -> DataKind {
        let end = seq + u64::from(len);
        let kind = if end <= self.rcv_nxt {
            // "A retransmit, 2nd most common case. Force an immediate ack."
            self.duplicate_bytes += u64::from(len);
            self.enter_quickack_mode();
            self.scheduled = true;
            DataKind::Duplicate
        } else if seq > self.rcv_nxt {
            // Linux <= 4.17 entered quick-ACK mode here too; 4.18 stopped it.
            if cfg.quickack_ofo {
                self.enter_quickack_mode();
            }
            // tcp_data_queue_ofo: schedule an ACK, grow the window with a kept segment.
            self.scheduled = true;
            if self.insert_ooo(seq, end) {
                self.grow_window(len);
            }
            DataKind::OutOfOrder
        } else {
            if seq < self.rcv_nxt {
                // A partial packet (seq < rcv_nxt < end).
                self.enter_quickack_mode();
            }
            let had_hole = !self.ooo.is_empty();
            self.advance(end);
            self.event_data_recv(now, len, ctx);
            if had_hole && self.ooo.is_empty() {
                // "RFC2581. 4.2. SHOULD send immediate ACK, when gap in queue is filled."
                self.pingpong = false;
            }
            DataKind::InOrder
        };
        self.ack_snd_check(now, cfg, ctx);
        kind
    }

    /// Deliver in order up to `end`, then whatever the out-of-order store now continues.
    fn advance(&mut self, end: u64) {
        let old = self.rcv_nxt;
        self.rcv_nxt = end;
        while let Some(&(s, e)) = self.ooo.first() {
            if s > self.rcv_nxt {
                break;
            }
            self.rcv_nxt = self.rcv_nxt.max(e);
            self.ooo.remove(0);
        }
        let newly = self.rcv_nxt - old;
        self.pending += newly;
        self.delivered_total += newly;
    }

    /// Linux `tcp_event_data_recv`: in-order data arrived.
    fn event_data_recv(&mut self, now: Instant, len: u32, ctx: RecvCtx) {
        self.scheduled = true;
        self.measure_rcv_mss(len);
        if self.ato == 0.0 {
            // "The _first_ data packet received, initialize delayed ACK engine."
            self.incr_quickack(MAX_QUICKACKS);
            self.ato = ATO_MIN;
        } else {
            let m = (now - self.lrcvtime).as_secs_f64();
            if m <= ATO_MIN / 2.0 {
                self.ato = self.ato / 2.0 + ATO_MIN / 2.0;
            } else if m < self.ato {
                self.ato = (self.ato / 2.0 + m).min(ctx.rto);
            } else if m > ctx.rto {
                // "Too long gap. Apparently sender failed to restart window, so that we send
                // ACKs quickly."
                self.incr_quickack(MAX_QUICKACKS);
            }
        }
        self.lrcvtime = now;
        if len >= 128 {
            self.grow_window(len);
        }
    }

    /// Linux `tcp_measure_rcv_mss`; every short segment of the model ends a write, so it
    /// carries PSH.
    fn measure_rcv_mss(&mut self, len: u32) {
        let lss = std::mem::take(&mut self.last_seg_size);
        if len >= self.rcv_mss {
            self.rcv_mss = len;
            return;
        }
        if len >= MSS_DEFAULT {
            self.last_seg_size = len;
            if len == lss {
                self.rcv_mss = len;
                return;
            }
        }
        self.pushed = if self.pushed > 0 { 2 } else { 1 };
    }

    /// Linux `tcp_grow_window` (the receive memory is assumed never short: the window grows
    /// by two segments per segment of at least 128 bytes until `window_clamp`), and with it
    /// `icsk_ack.quick |= 1`: while the window opens, every segment is ACKed at once.
    fn grow_window(&mut self, len: u32) {
        if self.rcv_ssthresh < self.window_clamp {
            let incr = (2 * self.rcv_mss).max(2 * len);
            self.rcv_ssthresh = self.rcv_ssthresh.saturating_add(incr).min(self.window_clamp);
            self.quick |= 1;
        }
    }

    /// Linux 4.15 `tcp_incr_quickack`: half the announced window in segments, at least 2, at
    /// most `max`; never lowers the count.
    fn incr_quickack(&mut self, max: u32) {
        let mut q = self.rcv_wnd / (2 * self.rcv_mss);
        if q == 0 {
            q = 2;
        }
        if q > self.quick {
            self.quick = q.min(max);
        }
    }

    /// Linux `tcp_enter_quickack_mode`.
    fn enter_quickack_mode(&mut self) {
        self.incr_quickack(MAX_QUICKACKS);
        self.pingpong = false;
        self.ato = ATO_MIN;
    }

    fn in_quickack_mode(&self) -> bool {
        self.quick > 0 && !self.pingpong
    }

    /// Linux `__tcp_ack_snd_check`: more than `ack_every - 1` full segments unacknowledged
    /// (Linux: more than one; the window's right edge is assumed to advance, the application
    /// reading at once), quick-ACK mode, or data held out of order: ACK now; else delay.
    fn ack_snd_check(&mut self, now: Instant, cfg: &TcpConfig, ctx: RecvCtx) {
        if !self.scheduled {
            return;
        }
        let full = u64::from(cfg.ack_every.saturating_sub(1)) * u64::from(self.rcv_mss);
        if self.rcv_nxt - self.rcv_wup > full || self.in_quickack_mode() || !self.ooo.is_empty() {
            self.ack_now = true;
        } else {
            self.send_delayed_ack(now, cfg, ctx);
        }
    }

    /// Linux `tcp_send_delayed_ack`: the timeout is `ato`, bounded (when above
    /// `TCP_DELACK_MIN`) by 500 ms, or `delack` (`TCP_DELACK_MAX`, 200 ms) in interactive mode
    /// or after a short segment, and by the smoothed RTT; an earlier pending timer is kept,
    /// and one about to expire (within a quarter of `ato`) means an ACK now.
    fn send_delayed_ack(&mut self, now: Instant, cfg: &TcpConfig, ctx: RecvCtx) {
        let ato = match cfg.delack_timer {
            DelackTimer::Fixed => cfg.delack,
            DelackTimer::Ato => {
                let mut ato = self.ato;
                if ato > ATO_MIN {
                    let mut max_ato = if self.pingpong || self.pushed > 0 { cfg.delack } else { DELACK_BULK_MAX };
                    if let Some(srtt) = ctx.srtt {
                        max_ato = max_ato.min(srtt.max(ATO_MIN));
                    }
                    ato = ato.min(max_ato);
                }
                ato
            }
        };
        let mut timeout = now + dur(ato);
        if let Some(t) = self.delack {
            if t <= now + dur(ato / 4.0) {
                self.ack_now = true;
                return;
            }
            timeout = timeout.min(t);
        }
        self.delack = Some(timeout);
    }

    /// Linux `tcp_event_data_sent` (this endpoint sent data): a reply within `ato` of the
    /// last data received makes the connection interactive.
    pub fn data_sent(&mut self, now: Instant, cfg: &TcpConfig) {
        if cfg.receiver == ReceiverModel::Linux && self.ato > 0.0 && (now - self.lrcvtime).as_secs_f64() < self.ato {
            self.pingpong = true;
        }
    }

    /// Insert `[s, e)` into the out-of-order store; `false` when it was all held already.
    fn insert_ooo(&mut self, s: u64, e: u64) -> bool {
        let i = self.ooo.partition_point(|r| r.1 < s);
        if self.ooo.get(i).is_some_and(|r| r.0 <= s && e <= r.1) {
            return false;
        }
        let mut ns = s;
        let mut ne = e;
        let mut j = i;
        while j < self.ooo.len() && self.ooo[j].0 <= ne {
            ns = ns.min(self.ooo[j].0);
            ne = ne.max(self.ooo[j].1);
            j += 1;
        }
        self.ooo.splice(i..j, [(ns, ne)]);
        true
    }

    /// The delayed-ACK timer fired (Linux `tcp_delack_timer_handler`: a missed delayed ACK
    /// doubles `ato`, up to the RTO, or ends interactive mode).
    pub fn on_delack(&mut self, now: Instant, cfg: &TcpConfig, rto: f64) {
        if !self.delack.is_some_and(|d| d <= now) {
            return;
        }
        self.delack = None;
        match cfg.receiver {
            ReceiverModel::Rfc5681 => self.ack_now = true,
            ReceiverModel::Linux => {
                if self.scheduled {
                    if self.pingpong {
                        self.pingpong = false;
                        self.ato = ATO_MIN;
                    } else {
                        self.ato = (2.0 * self.ato).min(rto);
                    }
                    self.ack_now = true;
                }
            }
        }
    }

    /// An ACK (pure or piggybacked) carrying `rcv_nxt` was sent (Linux `tcp_event_ack_sent`:
    /// one quick ACK used, leaving quick-ACK mode resets `ato`; the timer stopped; the window
    /// announced, never shrinking).
    pub fn ack_sent(&mut self) {
        self.unacked = 0;
        self.delack = None;
        self.ack_now = false;
        self.read_ack = false;
        if !self.linux {
            return;
        }
        // tcp_dec_quickack_mode(sk, 1).
        if self.quick > 0 {
            self.quick -= 1;
            if self.quick == 0 {
                self.ato = ATO_MIN;
            }
        }
        self.scheduled = false;
        self.pushed = 0;
        self.rcv_wup = self.rcv_nxt;
        self.rcv_wnd = self.rcv_wnd.max(self.rcv_ssthresh);
    }

    /// The application reads what arrived in order (Linux `tcp_recvmsg`, then
    /// `tcp_cleanup_rbuf`: a read that empties the queue after a short segment sends the
    /// pending ACK at once, unless the connection is interactive and only one short segment
    /// came).
    pub fn take(&mut self, cfg: &TcpConfig) -> u64 {
        let copied = std::mem::take(&mut self.pending);
        if cfg.receiver == ReceiverModel::Linux
            && copied > 0
            && self.scheduled
            && !self.ack_now
            && (self.pushed >= 2 || (self.pushed == 1 && !self.pingpong))
            && self.ooo.is_empty()
        {
            self.ack_now = true;
            self.read_ack = true;
        }
        copied
    }

    /// Quick ACKs left.
    pub fn quick_acks(&self) -> u32 {
        self.quick
    }

    /// Bytes held above a hole.
    pub fn out_of_order_bytes(&self) -> u64 {
        self.ooo.iter().map(|r| r.1 - r.0).sum()
    }
}
