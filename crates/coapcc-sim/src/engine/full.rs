//! The full endpoint model: one real `coapcc_proto::endpoint::Endpoint` per client and one for
//! the server, exchanging encoded datagrams.

use coapcc_cc::{CongestionControl, Instant, Snapshot, SplitMix64};
use coapcc_proto::endpoint::lifecycle;
use coapcc_proto::endpoint::{self as ep, Endpoint, Event, Request, Response, ServerRequestId, TransmitKind};
use coapcc_proto::{option, Code};

use super::protocol::{CoapEndpoints, Protocol};
use super::sim::{Answer, FlowPart, Packet, Sim, NONE};
use super::workload::Flows;
use super::{proto_duplicate_mode, Placement, STREAM_ENDPOINT, STREAM_SERVER};
use crate::algorithms::GroupAlg;
use crate::config::{ConfigError, SimConfig, UnnecessaryDef, WorkloadKind};
use crate::message_sizes;

/// Real endpoints: one [`Endpoint<u32>`] per client (node id = client index) and one for the
/// server (node id = number of clients, which is also its timer slot). Packets carry the
/// encoded datagrams; the metadata next to them (exchange, copy) is only used for the
/// metrics and the trace, never by the endpoints.
pub(crate) struct Full {
    eps: Vec<Endpoint<u32>>,
    server: Endpoint<u32>,
    server_id: u32,
    request: Request,
    response: Response,
    ip_version: u8,
    /// `bulk:BYTES`: one Block2 GET per client; each block's request (a new Message ID) is
    /// an exchange of the metrics, the whole transfer one exchange of the workload.
    bulk: bool,
    /// Bulk only: the Message ID of each client's last request sent.
    last_mid: Vec<u16>,
}

/// Block size of `bulk:BYTES` over UDP: SZX 4, 256-byte blocks (the Helsinki testbed's).
pub(crate) const BULK_BLOCK_SZX: u8 = 4;
/// 2^(4 + SZX) bytes.
const BULK_BLOCK_BYTES: usize = 1 << (4 + BULK_BLOCK_SZX as usize);

/// Where a server message comes from: the request copy it answers.
#[derive(Clone, Copy)]
struct Origin {
    client: u32,
    exchange: u32,
    copy: u16,
}

impl Full {
    fn ip_size(&self, datagram: &[u8]) -> u32 {
        message_sizes::ip_len(datagram.len(), self.ip_version) as u32
    }

    /// Collect what client `c`'s endpoint did: datagrams to send, its next wake-up, events.
    /// `via`: the response delivered by the call, if any.
    fn client_sync(sim: &mut Sim<'_, Self, Flows>, c: usize, via: Option<Answer>) {
        let now = sim.instant();
        let mut sent_copy = false;
        while let Some(t) = sim.m.eps[c].poll_transmit(now) {
            let size = sim.m.ip_size(&t.bytes);
            if t.kind == TransmitKind::Request {
                if !sim.exchange_active(c) {
                    sim.start_exchange(c);
                } else if sim.m.bulk {
                    Full::bulk_request(sim, c, via, &t.bytes);
                }
                if sim.m.bulk && t.bytes.len() >= 4 {
                    sim.m.last_mid[c] = u16::from_be_bytes([t.bytes[2], t.bytes[3]]);
                }
                let deadline = sim.m.eps[c].poll_timeout().expect("a CON request arms its timer").as_nanos();
                sim.send_copy(c, size, deadline, t.bytes);
                sent_copy = true;
            } else {
                Full::client_other(sim, c, size, t.bytes);
            }
        }
        if !sent_copy {
            let wake = sim.m.eps[c].poll_timeout().map(Instant::as_nanos);
            sim.set_timer(c, wake);
        }
        while let Some(ev) = sim.m.eps[c].poll_event() {
            match ev {
                Event::Response { copy, response, .. } => {
                    // The payload's buffer carries the client's next datagram.
                    sim.m.eps[c].recycle(response.payload);
                    Full::client_done(sim, c, via, copy);
                }
                Event::Failed { .. } => Full::client_failed(sim, c),
                Event::Request { .. } | Event::ResponseFailed { .. } => {}
            }
        }
    }

    // What follows is out of line: one call in several per `client_sync` at most, so that
    // the code every datagram and wake-up runs stays together.

    /// Client `c`'s exchange got its response (`copy`: the copy its token identifies).
    #[inline(never)]
    fn client_done(sim: &mut Sim<'_, Self, Flows>, c: usize, via: Option<Answer>, copy: Option<u32>) {
        let answer = match via {
            // The echoed copy: the one the client's layer read from the token
            // (copy identification), else the server's duplicate rule's.
            Some(a) if a.0 != NONE => (a.0, copy.map_or(a.1, |k| k as u16), a.2),
            // A separate response (sent on the server's timer or after an Empty
            // ACK) answers the request the server received first.
            _ => sim.separate_answer(c, via.map_or(0, |a| a.2)),
        };
        sim.exchange_done(c, answer);
    }

    #[cold]
    #[inline(never)]
    fn client_failed(sim: &mut Sim<'_, Self, Flows>, c: usize) {
        sim.exchange_failed(c);
    }

    /// A client datagram other than a request (an ACK of a separate response, an RST).
    #[cold]
    #[inline(never)]
    fn client_other(sim: &mut Sim<'_, Self, Flows>, c: usize, size: u32, bytes: Vec<u8>) {
        sim.send_other(c, size, bytes);
    }

    /// Bulk only: a request of client `c`'s Block2 transfer (`bytes`) while its exchange is
    /// active; a new Message ID is the next block's.
    #[inline(never)]
    fn bulk_request(sim: &mut Sim<'_, Self, Flows>, c: usize, via: Option<Answer>, bytes: &[u8]) {
        if bytes.len() >= 4 && [bytes[2], bytes[3]] != sim.m.last_mid[c].to_be_bytes() {
            // The next block of a Block2 transfer: the previous block's request
            // completed (its retransmissions go to the histogram).
            sim.block_done(c, via.map_or(0, |a| a.2));
            sim.start_exchange(c);
        }
    }

    /// Collect what the server endpoint did: answer new requests, send its datagrams, re-arm
    /// its timer. `origin`: the request copy the call handled, if any.
    fn server_sync(sim: &mut Sim<'_, Self, Flows>, origin: Option<Origin>) {
        let now = sim.instant();
        while let Some(ev) = sim.m.server.poll_event() {
            if let Event::Request { id, .. } = ev {
                if !sim.server_delays() {
                    let Full { server, response, .. } = &mut sim.m;
                    server.respond_ref(now, id, response).expect("a new request is pending");
                } else if let Some(o) = origin {
                    let p = Packet {
                        seq: 0,
                        client: o.client,
                        exchange: o.exchange,
                        copy: o.copy,
                        echo: o.copy,
                        buf: Vec::new(),
                    };
                    sim.server_answer(p, 0, id.0);
                }
            }
        }
        while let Some(t) = sim.m.server.poll_transmit(now) {
            let size = sim.m.ip_size(&t.bytes);
            let peer = t.peer;
            let is_response = t.kind == TransmitKind::Response;
            let exchange = sim.current_exchange(peer as usize);
            let p = match origin {
                Some(o) if is_response && o.client == peer && o.copy != NONE => {
                    // Which copy the answer identifies, as the server's reliability layer
                    // decided it (with copy identification the client reads it from the token).
                    let echo = match t.echoed {
                        Some(lifecycle::Echoed::Cached) => sim.first_copy_received(peer as usize, o.exchange),
                        Some(lifecycle::Echoed::Incoming) | None => o.copy,
                    };
                    Packet { seq: 0, client: peer, exchange: o.exchange, copy: o.copy, echo, buf: t.bytes }
                }
                _ => Packet { seq: 0, client: peer, exchange, copy: NONE, echo: NONE, buf: t.bytes },
            };
            sim.send_response(p, size);
        }
        let (slot, wake) = (sim.m.server_id as usize, sim.m.server.poll_timeout().map(Instant::as_nanos));
        sim.set_timer(slot, wake);
    }
}

impl Protocol<Flows> for Full {
    type Buf = Vec<u8>;

    fn try_new(cfg: &SimConfig, algs: &[GroupAlg], placement: &Placement) -> Result<Self, ConfigError> {
        let n = cfg.total_clients() as usize;
        let bulk = match cfg.workload.kind {
            WorkloadKind::Bulk(b) => Some(b as usize),
            _ => None,
        };
        // A bulk client reassembles the whole resource, however large.
        let max_body_size = bulk.map_or(ep::EndpointConfig::default().max_body_size, |b| b.max(1));
        let mut eps = Vec::with_capacity(n);
        for (gc, alg) in cfg.groups.iter().zip(algs) {
            for _ in 0..gc.clients {
                let c = eps.len() as u64;
                let ecfg = ep::EndpointConfig {
                    cc: alg.config(),
                    token_len: cfg.coap.token_len,
                    max_body_size,
                    ..Default::default()
                };
                // The generators in the endpoint itself (no allocation to reach per exchange).
                let mut e = Endpoint::with_split_mix(ecfg, SplitMix64::stream(cfg.seed, STREAM_ENDPOINT + c))
                    .with_cc_split_mix(SplitMix64::stream(cfg.seed, placement.dither_stream(c as usize)));
                if let Some(f) = alg.factory() {
                    e = e.with_controller(f);
                }
                eps.push(e);
            }
        }
        let scfg = ep::EndpointConfig {
            duplicate_mode: proto_duplicate_mode(cfg.server.duplicate_mode),
            // Fewer entries than Message IDs: a client reuses a Message ID after 65 536
            // exchanges, and by then its old entry has been evicted unless some of those
            // exchanges never reached the server at all. Memory stays bounded (≈ 10 MB).
            dedup_capacity: u16::MAX as usize,
            // Never slice the response: the compact model sends it whole (the MTU bounds it).
            max_unblocked_payload: if bulk.is_some() {
                BULK_BLOCK_BYTES
            } else {
                (cfg.coap.response_payload_bytes as usize).max(1024)
            },
            ..Default::default()
        };
        let server = Endpoint::new(scfg, Box::new(SplitMix64::stream(cfg.seed, STREAM_SERVER)));
        let mut request = Request::new(Code::GET, "");
        for seg in message_sizes::uri_path_segments(&cfg.coap.uri_path) {
            request.options.add(option::URI_PATH, seg.as_bytes());
        }
        let payload = bulk.unwrap_or(cfg.coap.response_payload_bytes as usize);
        if bulk.is_some() {
            request = request.with_block2_szx(BULK_BLOCK_SZX);
        }
        Ok(Full {
            eps,
            server,
            server_id: n as u32,
            request,
            response: Response::content(vec![b'x'; payload]),
            ip_version: cfg.coap.ip_version,
            bulk: bulk.is_some(),
            last_mid: if bulk.is_some() { vec![0; n] } else { Vec::new() },
        })
    }

    fn timer_slots(&self, clients: usize) -> usize {
        clients + 1
    }

    fn flow_start(sim: &mut Sim<'_, Self, Flows>, c: usize) {
        sim.coap_flow_start(c);
    }

    fn timer(sim: &mut Sim<'_, Self, Flows>, slot: usize) {
        let now = sim.instant();
        if slot == sim.m.server_id as usize {
            sim.m.server.handle_timeout(now);
            Full::server_sync(sim, None);
        } else {
            sim.m.eps[slot].handle_timeout(now);
            Full::client_sync(sim, slot, None);
        }
    }

    fn at_server(sim: &mut Sim<'_, Self, Flows>, p: Packet<Vec<u8>>) {
        sim.note_request(&p);
        let now = sim.instant();
        if !sim.server_delays() {
            // Every new request is answered at once with the one response: inside the
            // endpoint's call, as `server_sync` would answer its event.
            let Full { server, response, .. } = &mut sim.m;
            let response = &*response;
            server.handle_datagram_with(now, p.client, &p.buf, &mut |_| Some(response));
        } else {
            sim.m.server.handle_datagram(now, p.client, &p.buf);
        }
        // The datagram's buffer carries the server's next answer (no allocation per packet).
        sim.m.server.recycle(p.buf);
        let origin = Origin { client: p.client, exchange: p.exchange, copy: p.copy };
        Full::server_sync(sim, Some(origin));
    }

    fn at_client(sim: &mut Sim<'_, Self, Flows>, p: Packet<Vec<u8>>) {
        let c = p.client as usize;
        sim.note_response(&p);
        let size = sim.m.ip_size(&p.buf);
        let server = sim.m.server_id;
        let now = sim.instant();
        sim.m.eps[c].handle_datagram(now, server, &p.buf);
        sim.m.eps[c].recycle(p.buf);
        // A late copy of a response (matching nothing) changes nothing: no datagram, no
        // event, the same wake-up; `client_sync` would do nothing.
        let ep = &sim.m.eps[c];
        if ep.has_output() || ep.poll_timeout().map(Instant::as_nanos) != sim.timer_deadline(c) {
            Full::client_sync(sim, c, Some((p.copy, p.echo, size)));
        }
    }

    fn flow_reports(sim: &mut Sim<'_, Self, Flows>, cfg: &SimConfig, def: UnnecessaryDef) -> FlowPart {
        sim.coap_flow_reports(cfg, def)
    }
}

impl CoapEndpoints<Flows> for Full {
    fn needs_log(&self, _c: usize) -> bool {
        false
    }

    /// Hand the request to the endpoint, which starts it now or when the algorithm's pacing
    /// allows (its wake-up is the client's timer).
    fn begin(sim: &mut Sim<'_, Self, Flows>, c: usize) {
        let now = sim.instant();
        let req = sim.m.request.clone();
        let server = sim.m.server_id;
        sim.m.eps[c].request(now, server, req);
        Full::client_sync(sim, c, None);
    }

    fn server_send(sim: &mut Sim<'_, Self, Flows>, p: Packet<Vec<u8>>, sid: u64) {
        // The request may have been answered meanwhile only if the endpoint answered it
        // itself (never: it reports every new request and we answer each once).
        let now = sim.instant();
        let Full { server, response, .. } = &mut sim.m;
        let _ = server.respond_ref(now, ServerRequestId(sid), response);
        let origin = Origin { client: p.client, exchange: p.exchange, copy: p.copy };
        Full::server_sync(sim, Some(origin));
    }

    fn reset(sim: &mut Sim<'_, Self, Flows>, c: usize) {
        let server = sim.m.server_id;
        let now = sim.instant();
        sim.m.eps[c].reset_cc(now, &server);
    }

    fn snapshot(&self, c: usize) -> Snapshot {
        self.eps[c].cc(&self.server_id).map(|a| a.snapshot()).expect("a client that sent has algorithm state")
    }
}
