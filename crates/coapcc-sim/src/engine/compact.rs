//! The compact endpoint model: the simulator's own clients and server, taking every protocol
//! decision from `coapcc_proto::endpoint::lifecycle` on compact messages: NSTART admission
//! and pacing (`Nstart`), the exchange lifecycle (`ConExchange`), and the server's duplicate
//! detection and duplicate rules (`classify` over a `PerClientCache`).

use coapcc_cc::{Instant, Snapshot, SplitMix64};
use coapcc_proto::endpoint::lifecycle::{self, ConExchange, Expiry};
use coapcc_proto::endpoint::{self as ep};

use super::protocol::{CoapEndpoints, Protocol};
use super::sim::{FlowPart, Packet, Sim};
use super::workload::{Acked, Workload};
use super::{proto_duplicate_mode, Placement};
use crate::algorithms::{ClientCc, GroupAlg};
use crate::config::{ConfigError, SimConfig, UnnecessaryDef};

/// The simulator's own endpoints: each client is an algorithm instance and a dither stream;
/// packets are [`Packet<()>`], sized by [`crate::message_sizes`]; the server deduplicates by
/// (client, exchange) and answers each copy.
pub(crate) struct Compact<C> {
    cl: Vec<CompactClient<C>>,
    /// Per client, one bit: its armed timer carries its last allowed copy, so that it will
    /// most likely give up when it expires (a hint for [`Protocol::prefetch_timer`], which then
    /// loads all of the client; 12.5 kB at 100 000 clients, read where a timer's state is
    /// loaded ahead).
    last_copy: Vec<u64>,
    /// Server's duplicate-detection cache: per client, the last exchange and the first copy
    /// received.
    server_cache: lifecycle::PerClientCache,
    duplicate_rules: lifecycle::DuplicateRules,
    /// NSTART: the real endpoint's (the full model's clients use its default configuration).
    nstart: u32,
    req_size: u32,
    resp_size: u32,
    ip_version: u8,
}

/// A client: the algorithm's state and the exchange's first (`repr(C)`: in this order), which
/// a timer reads and writes, then what only an exchange's start or end reads. Aligned to a
/// cache line, so that with Default CoAP (64 bytes) a timer touches exactly two lines
/// ([`Protocol::prefetch_timer`] loads only those), the exchange's end a third.
#[repr(C, align(64))]
struct CompactClient<C> {
    cc: C,
    ex: ConExchange,
    dither: SplitMix64,
    /// NSTART slot and the workload's exchange waiting for it (one at a time).
    slots: lifecycle::Nstart<lifecycle::Waiting>,
    copy_id: bool,
}

impl<C> Compact<C> {
    /// The IP size of a request of `len` CoAP bytes (the configured GET when `None`).
    #[inline(always)]
    fn request_size(&self, len: Option<u32>) -> u32 {
        match len {
            None => self.req_size,
            Some(l) => crate::message_sizes::ip_len(l as usize, self.ip_version) as u32,
        }
    }

    /// The bytes of a [`CompactClient`] a timer that does not give up touches.
    const TIMER_BYTES: usize = std::mem::offset_of!(CompactClient<C>, ex) + std::mem::size_of::<ConExchange>();

    /// Note whether client `c`'s timer, just armed, carries its exchange's last copy.
    #[inline(always)]
    fn note_last_copy(&mut self, c: usize, last: bool) {
        if let Some(w) = self.last_copy.get_mut(c / 64) {
            let bit = 1u64 << (c % 64);
            *w = (*w & !bit) | (bit * u64::from(last));
        }
    }
}

/// With Default CoAP, a timer's state is two cache lines.
const _: () = assert!(Compact::<coapcc_cc::default::DefaultCoap>::TIMER_BYTES == 128);

impl<C: ClientCc, W: Workload> Protocol<W> for Compact<C> {
    type Buf = ();
    const LOOKAHEAD: bool = true;

    fn try_new(cfg: &SimConfig, algs: &[GroupAlg], placement: &Placement) -> Result<Self, ConfigError> {
        let n = cfg.total_clients() as usize;
        let mut cl = Vec::with_capacity(n);
        crate::cache_hints::advise_huge_pages(&cl);
        for (gc, alg) in cfg.groups.iter().zip(algs) {
            for _ in 0..gc.clients {
                let c = cl.len() as u64;
                let cc = C::make(alg).expect("the run chose a client type that holds every group's algorithm");
                cl.push(CompactClient {
                    dither: SplitMix64::stream(cfg.seed, placement.dither_stream(c as usize)),
                    ex: ConExchange::idle(),
                    slots: lifecycle::Nstart::default(),
                    copy_id: cc.uses_copy_id(),
                    cc,
                });
            }
        }
        Ok(Compact {
            cl,
            last_copy: vec![0; n.div_ceil(64)],
            server_cache: lifecycle::PerClientCache::new(n),
            duplicate_rules: lifecycle::DuplicateRules {
                mode: proto_duplicate_mode(cfg.server.duplicate_mode),
                max_replies: u32::MAX,
            },
            nstart: ep::EndpointConfig::default().nstart,
            req_size: cfg.coap.request_bytes(),
            resp_size: match super::Messages::response_len(cfg) {
                Some(len) => crate::message_sizes::ip_len(len as usize, cfg.coap.ip_version) as u32,
                None => cfg.coap.response_bytes(),
            },
            ip_version: cfg.coap.ip_version,
        })
    }

    fn timer_slots(&self, clients: usize) -> usize {
        clients
    }

    fn flow_start(sim: &mut Sim<'_, Self, W>, c: usize) {
        sim.coap_flow_start(c);
    }

    fn timer(sim: &mut Sim<'_, Self, W>, c: usize) {
        let now = sim.instant();
        if !sim.exchange_active(c) {
            // Cannot happen (every path that deactivates a client re-arms or disarms it);
            // kept so a stray entry can never fire.
            sim.disarm_timer(c);
            return;
        }
        let ahead = sim.loads_ahead();
        let k = &mut sim.m.cl[c];
        match k.ex.expire(&mut k.cc, now) {
            Expiry::Retransmit { deadline, ordinal, .. } => {
                // Only a population large enough to load its state ahead uses the hint.
                if ahead {
                    let last = ordinal >= k.cc.max_retransmit();
                    sim.m.note_last_copy(c, last);
                }
                let size = sim.m.request_size(sim.request_len(c));
                sim.send_copy(c, size, deadline.as_nanos(), ())
            }
            Expiry::GiveUp => {
                k.slots.release();
                sim.exchange_failed(c)
            }
        }
    }

    /// A request copy reaches the server: new or duplicate by the protocol layer's rules,
    /// answered identifying the copy they choose.
    fn at_server(sim: &mut Sim<'_, Self, W>, p: Packet<()>) {
        sim.note_request(&p);
        let key = (p.client, p.exchange);
        let echo = match lifecycle::classify(&mut sim.m.server_cache, sim.m.duplicate_rules, &key, true, p.copy) {
            lifecycle::Arrival::New => {
                lifecycle::DuplicateCache::remember(&mut sim.m.server_cache, key, p.copy);
                p.copy
            }
            lifecycle::Arrival::Duplicate(lifecycle::DuplicateAnswer::Replay { echo }) => echo.unwrap_or(p.copy),
            // Never for a per-client cache without a reply limit: every copy is answered.
            lifecycle::Arrival::Duplicate(_) => return,
        };
        sim.server_answer(Packet { echo, ..p }, sim.m.resp_size, 0);
    }

    /// A response reaches its client.
    #[inline(always)]
    fn at_client(sim: &mut Sim<'_, Self, W>, p: Packet<()>) {
        let c = p.client as usize;
        sim.note_response(&p);
        if !(sim.exchange_active(c) && sim.current_exchange(c) == p.exchange) {
            return; // a late duplicate, or the response to an exchange that gave up
        }
        let now = sim.instant();
        let sent = if sim.m.cl[c].copy_id { sim.copy_sent_at(c, p.echo) } else { None };
        let observe = sim.observes_snapshots();
        let k = &mut sim.m.cl[c];
        let echoed = k.copy_id.then(|| (p.echo as u32, sent.map_or(k.ex.started(), Instant::from_nanos)));
        let before = if observe { k.cc.snapshot() } else { Snapshot::default() };
        let info = k.ex.acknowledge(&mut k.cc, now, echoed);
        k.slots.release();
        if observe {
            let a = Acked { rtt: info.rtt, deadline: k.ex.deadline().as_nanos(), before, after: k.cc.snapshot() };
            sim.observe_acked(c, &a);
        }
        sim.exchange_done(c, (p.copy, p.echo, sim.m.resp_size));
    }

    #[inline(always)]
    fn prefetch(&self, c: usize) {
        if let Some(k) = self.cl.get(c) {
            crate::cache_hints::prefetch(k);
        }
    }

    /// The algorithm and the exchange only, unless the timer carries the exchange's last
    /// copy (it will give up: NSTART and the next exchange's start touch the rest).
    #[inline(always)]
    fn prefetch_timer(&self, c: usize) -> bool {
        let last = self.last_copy.get(c / 64).is_some_and(|w| w >> (c % 64) & 1 != 0);
        if let Some(k) = self.cl.get(c) {
            crate::cache_hints::prefetch_bytes(
                k,
                if last { std::mem::size_of::<CompactClient<C>>() } else { Self::TIMER_BYTES },
            );
        }
        last
    }

    /// The clients' algorithms and the server's cache are not part of the report (the
    /// engine's records are).
    fn release_run_state(&mut self) {
        self.cl = Vec::new();
        self.server_cache = lifecycle::PerClientCache::new(0);
    }

    #[inline(always)]
    fn prefetch_server(&self, c: usize) {
        if let Some(e) = self.server_cache.slot(c as u32) {
            crate::cache_hints::prefetch(e);
        }
    }

    fn flow_reports(sim: &mut Sim<'_, Self, W>, cfg: &SimConfig, def: UnnecessaryDef) -> FlowPart {
        sim.coap_flow_reports(cfg, def)
    }
}

impl<C: ClientCc, W: Workload> CoapEndpoints<W> for Compact<C> {
    fn needs_log(&self, c: usize) -> bool {
        self.cl[c].copy_id
    }

    /// The workload's next exchange: it starts now if NSTART and the algorithm's pacing
    /// allow, else when the pacing says (a deferred begin comes back here; the workload asks
    /// for one exchange at a time, so it never waits for a slot).
    fn begin(sim: &mut Sim<'_, Self, W>, c: usize) {
        let now = sim.instant();
        let nstart = sim.m.nstart;
        let ahead = sim.loads_ahead();
        let k = &mut sim.m.cl[c];
        if k.slots.waiting() == 0 {
            k.slots.push_back(());
        }
        let in_flight = match k.slots.poll_start(nstart, &k.cc, now) {
            lifecycle::Admission::Start { in_flight, .. } => in_flight,
            lifecycle::Admission::WaitUntil(t) => {
                // On a ticking clock the start waits for the tick at or after `t`.
                let at = sim.timer_time(t.as_nanos());
                sim.defer_begin(c, at);
                return;
            }
            lifecycle::Admission::Idle => return,
        };
        k.ex = ConExchange::start(&mut k.cc, now, in_flight, &mut k.dither);
        let last = ahead && k.cc.max_retransmit() == 0;
        let (deadline, t0) = (k.ex.deadline().as_nanos(), k.ex.timer());
        if ahead {
            sim.m.note_last_copy(c, last);
        }
        sim.start_exchange(c);
        sim.observe_started(c, t0);
        let size = sim.m.request_size(sim.request_len(c));
        sim.send_copy(c, size, deadline, ());
    }

    fn server_send(sim: &mut Sim<'_, Self, W>, p: Packet<()>, _sid: u64) {
        sim.send_response(p, sim.m.resp_size);
    }

    fn reset(sim: &mut Sim<'_, Self, W>, c: usize) {
        let now = sim.instant();
        sim.m.cl[c].cc.reset(now);
    }

    fn snapshot(&self, c: usize) -> Snapshot {
        self.cl[c].cc.snapshot()
    }
}
