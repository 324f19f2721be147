//! A virtual-clock harness that drives a client and a server endpoint against each other
//! (quinn-proto's `Pair` shape): configurable one-way latency, a drop function, a wire log,
//! a server application, and a bounded `drive()` that panics on livelock.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::time::Duration;

use coapcc_cc::Instant;
use coapcc_proto::endpoint::{Endpoint, EndpointConfig, Event, ExchangeRecord, Response, ServerRequestId};
use coapcc_proto::Message;

pub const CLIENT: u8 = 1;
pub const SERVER: u8 = 2;

/// Direction of a datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    ToServer,
    ToClient,
}

/// One datagram seen on the wire (sent, whether or not it was then dropped).
#[derive(Clone, Debug)]
pub struct Wire {
    pub at: Instant,
    pub dir: Dir,
    pub bytes: Vec<u8>,
    pub msg: Option<Message>,
    pub dropped: bool,
}

/// What the server application does with a request.
pub enum App {
    /// Answer at once with the handler's response.
    Immediate(Box<dyn FnMut(&Message) -> Response>),
    /// Answer after a delay (the endpoint sends an Empty ACK meanwhile if it is long).
    Delayed(Duration, Box<dyn FnMut(&Message) -> Response>),
    /// Do nothing (tests answer by hand).
    Manual,
    /// Answer every new request with this response inside the endpoint's call
    /// (`Endpoint::handle_datagram_with`): no request event.
    InCall(Response),
}

/// Drop decision: (direction, index of this datagram in its direction, decoded message).
pub type DropFn = Box<dyn FnMut(Dir, usize, Option<&Message>) -> bool>;

pub struct Pair {
    pub now: Instant,
    pub client: Endpoint<u8>,
    pub server: Endpoint<u8>,
    pub latency: Duration,
    pub drop: DropFn,
    pub app: App,
    pub wire: Vec<Wire>,
    pub client_events: Vec<Event<u8>>,
    pub server_events: Vec<Event<u8>>,
    pub records: Vec<ExchangeRecord<u8>>,
    /// Datagrams in flight: (arrival, destination, source, bytes), FIFO per direction.
    flight: VecDeque<(Instant, u8, u8, Vec<u8>)>,
    /// Delayed application answers.
    pending: Vec<(Instant, ServerRequestId, Response)>,
    sent: [usize; 2],
    /// Upper bound on drive-loop iterations.
    pub max_steps: usize,
}

pub fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s)
}

pub fn at(s: f64) -> Instant {
    Instant::from_secs_f64(s)
}

pub fn hello_app() -> App {
    App::Immediate(Box::new(|_m: &Message| Response::content(vec![b'x'; 60])))
}

impl Pair {
    pub fn new(client: EndpointConfig, server: EndpointConfig) -> Pair {
        let mut client = client;
        client.record_exchanges = true;
        let mut server = server;
        server.record_exchanges = true;
        Pair {
            now: Instant::ZERO,
            client: Endpoint::with_seed(client, 11),
            server: Endpoint::with_seed(server, 22),
            latency: Duration::from_millis(10),
            drop: Box::new(|_, _, _| false),
            app: hello_app(),
            wire: Vec::new(),
            client_events: Vec::new(),
            server_events: Vec::new(),
            records: Vec::new(),
            flight: VecDeque::new(),
            pending: Vec::new(),
            sent: [0, 0],
            max_steps: 1_000_000,
        }
    }

    pub fn default_pair() -> Pair {
        Pair::new(EndpointConfig::default(), EndpointConfig::default())
    }

    /// Move every queued datagram onto the wire and run the application.
    fn collect(&mut self) {
        let now = self.now;
        let mut outgoing = Vec::new();
        while let Some(t) = self.client.poll_transmit(now) {
            assert_eq!(t.peer, SERVER);
            outgoing.push((Dir::ToServer, t.bytes));
        }
        while let Some(t) = self.server.poll_transmit(now) {
            assert_eq!(t.peer, CLIENT);
            outgoing.push((Dir::ToClient, t.bytes));
        }
        for (dir, bytes) in outgoing {
            let i = dir as usize;
            let n = self.sent[i];
            self.sent[i] += 1;
            let msg = Message::decode(&bytes).ok();
            let dropped = (self.drop)(dir, n, msg.as_ref());
            self.wire.push(Wire { at: now, dir, bytes: bytes.clone(), msg, dropped });
            if !dropped {
                let (dst, src) = match dir {
                    Dir::ToServer => (SERVER, CLIENT),
                    Dir::ToClient => (CLIENT, SERVER),
                };
                self.flight.push_back((now + self.latency, dst, src, bytes));
            }
        }
        while let Some(e) = self.server.poll_event() {
            if let Event::Request { id, message, .. } = &e {
                match &mut self.app {
                    App::Immediate(h) => {
                        let r = h(message);
                        self.server.respond(now, *id, r).unwrap();
                    }
                    App::Delayed(d, h) => {
                        let r = h(message);
                        self.pending.push((now + *d, *id, r));
                    }
                    App::Manual | App::InCall(_) => {}
                }
            }
            self.server_events.push(e);
        }
        while let Some(e) = self.client.poll_event() {
            self.client_events.push(e);
        }
        while let Some(r) = self.client.poll_record() {
            self.records.push(r);
        }
    }

    /// Run until nothing is left to do or `until` is reached. Panics after `max_steps`
    /// iterations (livelock).
    pub fn drive_until(&mut self, until: Instant) {
        for _ in 0..self.max_steps {
            self.collect();
            // Something may have been queued by the application's answers.
            self.collect();
            let next = [
                self.flight.front().map(|f| f.0),
                self.client.poll_timeout(),
                self.server.poll_timeout(),
                self.pending.iter().map(|p| p.0).min(),
            ]
            .into_iter()
            .flatten()
            .min();
            let Some(next) = next else { return };
            if next > until {
                self.now = until;
                return;
            }
            self.now = self.now.max(next);
            let now = self.now;
            while self.flight.front().is_some_and(|f| f.0 <= now) {
                let (_, dst, src, bytes) = self.flight.pop_front().unwrap();
                if dst == SERVER {
                    match &self.app {
                        App::InCall(r) => self.server.handle_datagram_with(now, src, &bytes, &mut |_| Some(r)),
                        _ => self.server.handle_datagram(now, src, &bytes),
                    }
                } else {
                    self.client.handle_datagram(now, src, &bytes);
                }
            }
            if self.client.poll_timeout().is_some_and(|t| t <= now) {
                self.client.handle_timeout(now);
            }
            if self.server.poll_timeout().is_some_and(|t| t <= now) {
                self.server.handle_timeout(now);
            }
            let (due, rest): (Vec<_>, Vec<_>) = self.pending.drain(..).partition(|p| p.0 <= now);
            self.pending = rest;
            for (_, id, r) in due {
                self.server.respond(now, id, r).unwrap();
            }
        }
        panic!("drive() did not settle after {} steps: livelock", self.max_steps);
    }

    /// Run until quiescent (bounded by one virtual day).
    pub fn drive(&mut self) {
        self.drive_until(self.now + Duration::from_secs(86_400));
    }

    /// Inject raw bytes into the client as if from the server, now.
    pub fn inject_to_client(&mut self, bytes: &[u8]) {
        self.client.handle_datagram(self.now, SERVER, bytes);
    }

    /// Datagrams of one direction, in order.
    pub fn sent(&self, dir: Dir) -> Vec<&Wire> {
        self.wire.iter().filter(|w| w.dir == dir).collect()
    }

    pub fn responses(&self) -> Vec<&Message> {
        self.client_events
            .iter()
            .filter_map(|e| match e {
                Event::Response { response, .. } => Some(response),
                _ => None,
            })
            .collect()
    }

    pub fn requests_seen_by_app(&self) -> usize {
        self.server_events.iter().filter(|e| matches!(e, Event::Request { .. })).count()
    }
}
