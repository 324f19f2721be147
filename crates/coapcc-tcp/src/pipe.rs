//! A two-endpoint harness on the link model: one client and one server [`Connection`] joined
//! by the two directions of a [`coapcc_link::LinkConfig`] (the same chains, exact integer
//! serialisation, buffers, loss processes and random streams as the simulator), driven by a
//! virtual clock that jumps from event to event. It runs the CoAP-over-TCP exchange of the
//! Helsinki study: connect, a CSM each way, the GET, the whole response as one message.
//!
//! Tests add a scripted drop rule ([`Pipe::set_drop_rule`]): a packet the link delivers is
//! dropped when the rule says so, after it used the link's capacity, like a loss stage at the
//! end of the chain. With one flow and no drop rule a transfer here is the simulator's
//! (`coapcc simulate --transport tcp`) up to the order of simultaneous events: same links,
//! same streams (`STREAM_CLIENT`, `STREAM_SERVER`), same connection seeds.
//!
//! This is for tests, benchmarks and examples of the model alone; the simulator hosts the
//! same [`Connection`] objects on the same links among its other transports.

use coapcc_cc::{Entropy, Instant, SplitMix64};
use std::collections::VecDeque;

use coapcc_link::{
    testbed_downlink, testbed_uplink, JitterConfig, LinkConfig, LinkPath, LossModel, Nanos, Outcome, StageConfig,
    STREAM_DOWNLINK, STREAM_UPLINK,
};

use crate::app::{AppEvent, ClientApp, MessageSizes, ServerApp};
use crate::config::TcpCcConfig;
use crate::conn::{Connection, State};
use crate::segment::Segment;
use crate::stats::{Counters, TraceRecord};

/// Random stream whose first draw seeds flow `c`'s client connections: `STREAM_CLIENT + c`
/// (the simulator's numbering; one draw per connection).
pub const STREAM_CLIENT: u64 = 4 << 32;
/// Random stream of flow `c`'s server connections: `STREAM_SERVER + c`.
pub const STREAM_SERVER: u64 = 5 << 32;

/// Direction of a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Dir {
    /// Client to server.
    Up,
    /// Server to client.
    Down,
}

/// The harness configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct PipeConfig {
    /// Both directions of the link and the MTU.
    pub link: LinkConfig,
    /// Bytes of each CSM (an empty CSM is 2 bytes).
    pub csm_bytes: u64,
    /// Bytes of the GET.
    pub request_bytes: u64,
    /// Give up after this much virtual time, seconds.
    pub time_limit_s: f64,
}

impl PipeConfig {
    /// The Helsinki testbed with an "infinite" buffer (1 410 000 B): 60 kbit/s up, 30 kbit/s
    /// down, 200/400 ms one way, and the rest of the path a constant 15 ms each way (the
    /// middle of the published 10-20 ms; see docs/tcp.md for why constant), no link errors.
    pub fn testbed() -> Self {
        let mut link = LinkConfig {
            uplink: testbed_uplink(1_410_000, LossModel::None),
            downlink: testbed_downlink(1_410_000, LossModel::None),
            ..LinkConfig::default()
        };
        link.set_rest_of_path_ms(15.0, 15.0);
        PipeConfig { link, csm_bytes: 2, request_bytes: 9, time_limit_s: 3600.0 }
    }

    /// A symmetric link of `bits_per_s` with `delay_s` one way, a buffer that never
    /// overflows and no CSMs: every segment of a window arrives at about one instant, so
    /// traces are easy to compute by hand.
    pub fn fast(bits_per_s: u64, delay_s: f64) -> Self {
        use coapcc_link::{DelayConfig, RateConfig};
        let chain = vec![
            StageConfig::Rate(RateConfig {
                bits_per_s,
                buffer_bytes: 1 << 40,
                buffer_counts_in_service: true,
                per_packet_overhead_bytes: 0,
                schedule: None,
            }),
            StageConfig::Delay(DelayConfig { ms: delay_s * 1e3 }),
        ];
        let link = LinkConfig { uplink: chain.clone(), downlink: chain, ..LinkConfig::default() };
        PipeConfig { link, csm_bytes: 0, request_bytes: 9, time_limit_s: 3600.0 }
    }

    /// The same with both buffers set to `bytes`.
    pub fn with_buffer(mut self, bytes: u64) -> Self {
        self.link.set_buffer_bytes(bytes);
        self
    }

    /// The same with link errors `model` in both directions (independent processes).
    pub fn with_errors(mut self, model: &LossModel) -> Self {
        self.link.set_loss(model);
        self
    }

    /// The same with the rest of the path drawn per packet from U[`min_ms`, `max_ms`].
    pub fn with_rest_of_path_ms(mut self, min_ms: f64, max_ms: f64) -> Self {
        for st in self.link.uplink.iter_mut().chain(self.link.downlink.iter_mut()) {
            if let StageConfig::Jitter(j) = st {
                *j = JitterConfig { min_ms, max_ms, ..j.clone() };
            }
        }
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
    /// Packets lost to the link's loss processes or the drop rule, (up, down).
    pub error_drops: (u64, u64),
    /// Server trace (if enabled).
    pub server_trace: Vec<TraceRecord>,
}

/// Why a transfer did not complete.
#[derive(Clone, Debug, PartialEq)]
pub enum PipeError {
    /// The link configuration is invalid (the message says why).
    Link(String),
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
    /// Up and down: the link model's directions, which compute a packet's whole path when it
    /// is sent ...
    links: [LinkPath; 2],
    /// ... and the segments each holds until their delivery time (FIFO directions).
    held: [VecDeque<(Nanos, Segment)>; 2],
    drop_rule: Option<DropRule>,
    scripted_drops: [u64; 2],
}

impl Pipe {
    /// Two fresh endpoints on the link of `cfg`; `seed` seeds the link's random streams and
    /// the endpoints as the simulator seeds flow 0.
    pub fn new(cc: &TcpCcConfig, cfg: PipeConfig, seed: u64) -> Result<Self, PipeError> {
        let mtu = cfg.link.mtu_bytes;
        let up = LinkPath::new(&cfg.link.uplink, mtu, seed, STREAM_UPLINK).map_err(PipeError::Link)?;
        let down = LinkPath::new(&cfg.link.downlink, mtu, seed, STREAM_DOWNLINK).map_err(PipeError::Link)?;
        if !(up.is_fifo() && down.is_fifo()) {
            return Err(PipeError::Link("the harness needs FIFO directions (allow_reordering = false)".into()));
        }
        Ok(Pipe {
            cfg,
            client: Connection::client(cc, SplitMix64::stream(seed, STREAM_CLIENT).next_u64()),
            server: Connection::server(cc, SplitMix64::stream(seed, STREAM_SERVER).next_u64()),
            links: [up, down],
            held: [VecDeque::new(), VecDeque::new()],
            drop_rule: None,
            scripted_drops: [0; 2],
        })
    }

    /// Drop packets for which `rule(direction, segment, departure)` is true, after the link's
    /// rate stage (the packet used its capacity). The rule sees only packets the link
    /// delivers.
    pub fn set_drop_rule(&mut self, rule: impl FnMut(Dir, &Segment, Instant) -> bool + 'static) {
        self.drop_rule = Some(Box::new(rule));
    }

    fn send(&mut self, now: Nanos, dir: Dir, seg: Segment) {
        let d = dir as usize;
        let tr = self.links[d].transmit(now, seg.wire_len());
        if tr.outcome != Outcome::Delivered {
            return;
        }
        if let Some(rule) = self.drop_rule.as_mut() {
            if rule(dir, &seg, Instant::from_nanos(tr.departed)) {
                self.scripted_drops[d] += 1;
                return;
            }
        }
        self.held[d].push_back((tr.at, seg));
    }

    fn flush(&mut self, now: Instant) {
        while let Some(s) = self.client.poll_transmit(now) {
            self.send(now.as_nanos(), Dir::Up, s);
        }
        while let Some(s) = self.server.poll_transmit(now) {
            self.send(now.as_nanos(), Dir::Down, s);
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
                return Ok(self.result(request_at, done_at));
            }
            if self.client.state() == State::Failed {
                return Err(PipeError::HandshakeFailed);
            }
            self.flush(now);
            // The next event: a delivery (uplink first on a tie) or a timer.
            let up = self.held[0].front().map(|h| h.0);
            let down = self.held[1].front().map(|h| h.0);
            let next_pkt = [up, down].into_iter().flatten().min().map(Instant::from_nanos);
            let next_timer = [self.client.poll_timeout(), self.server.poll_timeout()].into_iter().flatten().min();
            let next = match (next_pkt, next_timer) {
                (Some(p), Some(t)) => p.min(t),
                (Some(p), None) => p,
                (None, Some(t)) => t,
                (None, None) if client.done() => limit + core::time::Duration::from_nanos(1),
                (None, None) => return Err(PipeError::TimeLimit { received: self.client.bytes_received() }),
            };
            if next > limit && !client.done() {
                return Err(PipeError::TimeLimit { received: self.client.bytes_received() });
            }
            now = now.max(next);
            if next_pkt == Some(next) {
                let d = if up.is_some_and(|t| t <= next.as_nanos()) { 0 } else { 1 };
                let (_, seg) = self.held[d].pop_front().expect("a delivery is due");
                if d == 0 {
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

    fn result(&mut self, request_at: Option<Instant>, done_at: Option<Instant>) -> TransferResult {
        let ra = request_at.expect("request written before the response arrived");
        let done = done_at.expect("first response received");
        let (a, b) = self.client.handshake_times();
        let counts = |d: usize| self.links[d].counters();
        let (up, down) = (counts(0), counts(1));
        TransferResult {
            fct_s: (done - ra).as_secs_f64(),
            setup_s: (b.expect("established") - a.expect("started")).as_secs_f64(),
            request_at_s: ra.as_secs_f64(),
            client: self.client.counters(),
            server: self.server.counters(),
            buffer_drops: (up.buffer_drop_packets, down.buffer_drop_packets),
            error_drops: (
                up.error_loss_packets + self.scripted_drops[0],
                down.error_loss_packets + self.scripted_drops[1],
            ),
            server_trace: self.server.take_trace(),
        }
    }
}
