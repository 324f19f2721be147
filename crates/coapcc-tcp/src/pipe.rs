//! A minimal two-endpoint harness: one client and one server [`Connection`] joined by a
//! fixed-rate, fixed-delay link per direction (byte-limited tail-drop FIFO, then a delay and
//! an optional drop rule applied after the rate stage, as on the testbed), driven by a virtual
//! clock that jumps from event to event. It runs the CoAP-over-TCP exchange of the Helsinki
//! study: connect, a CSM each way, the GET, the whole response as one message.
//!
//! This is for tests, benchmarks and examples of the model alone; the simulator hosts the
//! same [`Connection`] objects on its own links.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::time::Duration;

use coapcc_cc::Instant;

use crate::app::{AppEvent, ClientApp, MessageSizes, ServerApp};
use crate::config::TcpCcConfig;
use crate::conn::{Connection, State};
use crate::segment::Segment;
use crate::stats::{Counters, TraceRecord};

/// Direction of a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Dir {
    /// Client to server.
    Up,
    /// Server to client.
    Down,
}

/// One direction of the link.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkDir {
    /// Bit rate, bit/s.
    pub rate_bps: f64,
    /// One-way delay after the rate stage (propagation plus rest of path), seconds.
    pub delay_s: f64,
    /// Tail-drop buffer in bytes (the packet in service counts).
    pub buffer_bytes: u64,
}

/// The harness configuration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PipeConfig {
    /// Client to server.
    pub up: LinkDir,
    /// Server to client.
    pub down: LinkDir,
    /// Bytes of each CSM (an empty CSM is 2 bytes).
    pub csm_bytes: u64,
    /// Bytes of the GET.
    pub request_bytes: u64,
    /// Give up after this much virtual time, seconds.
    pub time_limit_s: f64,
}

impl PipeConfig {
    /// The Helsinki testbed with an "infinite" buffer: 60 kbit/s up, 30 kbit/s down,
    /// 200/400 ms one-way delay plus 15 ms (the mean of U[10, 20] ms) rest of path.
    pub fn testbed() -> Self {
        PipeConfig {
            up: LinkDir { rate_bps: 60_000.0, delay_s: 0.215, buffer_bytes: 1_410_000 },
            down: LinkDir { rate_bps: 30_000.0, delay_s: 0.415, buffer_bytes: 1_410_000 },
            csm_bytes: 2,
            request_bytes: 9,
            time_limit_s: 3600.0,
        }
    }

    /// The same with both buffers set to `bytes`.
    pub fn with_buffer(mut self, bytes: u64) -> Self {
        self.up.buffer_bytes = bytes;
        self.down.buffer_bytes = bytes;
        self
    }
}

/// Outcome of one transfer.
#[derive(Clone, Debug)]
pub struct TransferResult {
    /// GET written to last response byte received, seconds.
    pub fct_s: f64,
    /// SYN sent to handshake complete at the client, seconds.
    pub setup_s: f64,
    /// When the GET was written (virtual seconds).
    pub request_at_s: f64,
    /// Client counters.
    pub client: Counters,
    /// Server counters.
    pub server: Counters,
    /// Packets dropped by the buffers, (up, down).
    pub buffer_drops: (u64, u64),
    /// Packets dropped by the drop rule, (up, down).
    pub error_drops: (u64, u64),
    /// Server trace (if enabled).
    pub server_trace: Vec<TraceRecord>,
}

/// Why a transfer did not complete.
#[derive(Clone, Debug, PartialEq)]
pub enum PipeError {
    /// The handshake failed (out of SYN retries).
    HandshakeFailed,
    /// The time limit passed.
    TimeLimit {
        /// Response bytes received by then.
        received: u64,
    },
    /// The step limit was hit (livelock guard).
    Livelock,
}

type DropRule = Box<dyn FnMut(Dir, &Segment, Instant) -> bool>;

/// The harness.
pub struct Pipe {
    cfg: PipeConfig,
    /// Client endpoint.
    pub client: Connection,
    /// Server endpoint.
    pub server: Connection,
    queues: [VecDeque<(Instant, u64)>; 2],
    busy_until: [Instant; 2],
    events: BinaryHeap<Reverse<(Instant, u64, u8, SegKey)>>,
    segs: Vec<Segment>,
    ev_seq: u64,
    drop_rule: Option<DropRule>,
    buffer_drops: [u64; 2],
    error_drops: [u64; 2],
}

type SegKey = usize;

impl Pipe {
    /// Two fresh endpoints; `seed` derives both endpoints' seeds.
    pub fn new(cc: &TcpCcConfig, cfg: PipeConfig, seed: u64) -> Self {
        Pipe {
            cfg,
            client: Connection::client(cc, seed.wrapping_mul(2).wrapping_add(1)),
            server: Connection::server(cc, seed.wrapping_mul(2)),
            queues: [VecDeque::new(), VecDeque::new()],
            busy_until: [Instant::ZERO; 2],
            events: BinaryHeap::new(),
            segs: Vec::new(),
            ev_seq: 0,
            drop_rule: None,
            buffer_drops: [0; 2],
            error_drops: [0; 2],
        }
    }

    /// Drop packets for which `rule(direction, segment, time)` is true, after the rate stage.
    pub fn set_drop_rule(&mut self, rule: impl FnMut(Dir, &Segment, Instant) -> bool + 'static) {
        self.drop_rule = Some(Box::new(rule));
    }

    fn send(&mut self, now: Instant, dir: Dir, seg: Segment) {
        let d = dir as usize;
        let link = if dir == Dir::Up { self.cfg.up } else { self.cfg.down };
        let q = &mut self.queues[d];
        while q.front().is_some_and(|&(t, _)| t <= now) {
            q.pop_front();
        }
        let occupied: u64 = q.iter().map(|x| x.1).sum();
        let wire = u64::from(seg.wire_len());
        if occupied + wire > link.buffer_bytes {
            self.buffer_drops[d] += 1;
            return;
        }
        let start = self.busy_until[d].max(now);
        let ser = Duration::from_nanos((wire as f64 * 8.0 / link.rate_bps * 1e9).round() as u64);
        let depart = start + ser;
        self.busy_until[d] = depart;
        q.push_back((depart, wire));
        if let Some(rule) = self.drop_rule.as_mut() {
            if rule(dir, &seg, depart) {
                self.error_drops[d] += 1;
                return;
            }
        }
        let arrive = depart + Duration::from_nanos((link.delay_s * 1e9).round() as u64);
        self.segs.push(seg);
        self.ev_seq += 1;
        self.events.push(Reverse((arrive, self.ev_seq, d as u8, self.segs.len() - 1)));
    }

    fn flush(&mut self, now: Instant) {
        while let Some(s) = self.client.poll_transmit(now) {
            self.send(now, Dir::Up, s);
        }
        while let Some(s) = self.server.poll_transmit(now) {
            self.send(now, Dir::Down, s);
        }
    }

    /// Run the exchange: the server answers the GET with `response_bytes` (one message).
    pub fn transfer(&mut self, response_bytes: u64) -> Result<TransferResult, PipeError> {
        let sizes = MessageSizes { csm: self.cfg.csm_bytes, request: self.cfg.request_bytes, response: response_bytes };
        self.exchanges(sizes, 1)
    }

    /// Run `requests` exchanges one after another on one connection ([`ClientApp`],
    /// [`ServerApp`]); the FCT reported is the first exchange's.
    pub fn exchanges(&mut self, sizes: MessageSizes, requests: u32) -> Result<TransferResult, PipeError> {
        let limit = Instant::from_secs_f64(self.cfg.time_limit_s);
        let mut now = Instant::ZERO;
        self.client.connect(now);
        let mut client = ClientApp::new(sizes, requests);
        let mut server = ServerApp::new(sizes);
        let mut request_at = None;
        let mut done_at: Option<Instant> = None;
        for _ in 0..50_000_000u64 {
            client.poll(&mut self.client, |e| match e {
                AppEvent::RequestSent { index: 0 } => request_at = Some(now),
                AppEvent::ResponseReceived { index: 0 } => done_at = Some(now),
                _ => {}
            });
            server.poll(&mut self.server);
            // After the client has everything, run on until the server has its last ACK, so
            // the server's counters and trace are complete.
            if client.done() && (self.server.send_complete() || now > limit) {
                let ra = request_at.expect("request written before the response arrived");
                let done = done_at.expect("first response received");
                let (a, b) = self.client.handshake_times();
                return Ok(TransferResult {
                    fct_s: (done - ra).as_secs_f64(),
                    setup_s: (b.expect("established") - a.expect("started")).as_secs_f64(),
                    request_at_s: ra.as_secs_f64(),
                    client: self.client.counters(),
                    server: self.server.counters(),
                    buffer_drops: (self.buffer_drops[0], self.buffer_drops[1]),
                    error_drops: (self.error_drops[0], self.error_drops[1]),
                    server_trace: self.server.take_trace(),
                });
            }
            if self.client.state() == State::Failed {
                return Err(PipeError::HandshakeFailed);
            }
            self.flush(now);
            // Next event.
            let next_pkt = self.events.peek().map(|Reverse(e)| e.0);
            let next_timer = [self.client.poll_timeout(), self.server.poll_timeout()].into_iter().flatten().min();
            let finished = client.done();
            let next = match (next_pkt, next_timer) {
                (Some(p), Some(t)) => p.min(t),
                (Some(p), None) => p,
                (None, Some(t)) => t,
                (None, None) if finished => limit + Duration::from_nanos(1),
                (None, None) => return Err(PipeError::TimeLimit { received: self.client.bytes_received() }),
            };
            if next > limit && !finished {
                return Err(PipeError::TimeLimit { received: self.client.bytes_received() });
            }
            now = now.max(next);
            if next_pkt == Some(next) {
                let Reverse((_, _, d, k)) = self.events.pop().expect("peeked");
                let seg = self.segs[k];
                if d == Dir::Up as u8 {
                    self.server.on_segment(now, &seg);
                } else {
                    self.client.on_segment(now, &seg);
                }
            } else {
                self.client.on_timeout(now);
                self.server.on_timeout(now);
            }
        }
        Err(PipeError::Livelock)
    }
}
