//! The compact endpoint model: the simulator's own clients and server, taking every protocol
//! decision from `coapcc_proto::endpoint::lifecycle` on compact messages.

use super::*;

/// The simulator's own endpoints: each client is an algorithm instance and a dither stream;
/// packets are [`Packet<()>`], sized by [`crate::coap`]; the server deduplicates by exchange
/// and answers each copy.
pub(crate) struct Compact<C> {
    cl: Vec<CompactClient<C>>,
    /// Server's duplicate-detection cache per client: (last exchange, first copy received).
    server_cache: Vec<(u32, u16)>,
    duplicate_mode: ep::DuplicateMode,
    req_size: u32,
    resp_size: u32,
}

struct CompactClient<C> {
    cc: C,
    dither: SplitMix64,
    ex: ConExchange,
    copy_id: bool,
}

impl<C: ClientCc> Model for Compact<C> {
    type Buf = ();

    fn new(cfg: &SimConfig, algs: &[GroupAlg]) -> Self {
        let n = cfg.total_clients() as usize;
        let mut cl = Vec::with_capacity(n);
        for (gc, alg) in cfg.groups.iter().zip(algs) {
            for _ in 0..gc.clients {
                let c = cl.len() as u64;
                let cc = C::make(alg).expect("the run chose a client type that holds every group's algorithm");
                cl.push(CompactClient {
                    dither: SplitMix64::stream(cfg.seed, STREAM_DITHER + c),
                    ex: ConExchange::idle(),
                    copy_id: cc.uses_copy_id(),
                    cc,
                });
            }
        }
        Compact {
            cl,
            server_cache: vec![(u32::MAX, 0); n],
            duplicate_mode: proto_duplicate_mode(cfg.server.duplicate_mode),
            req_size: cfg.coap.request_bytes(),
            resp_size: cfg.coap.response_bytes(),
        }
    }

    fn timer_slots(&self, clients: usize) -> usize {
        clients
    }

    fn needs_log(&self, c: usize) -> bool {
        self.cl[c].copy_id
    }

    /// Start the next exchange now, unless the algorithm's pacing hook says later.
    fn begin(sim: &mut Sim<'_, Self>, c: usize) {
        let now = Instant::from_nanos(sim.now);
        if let Some(t) = lifecycle::ready_at(&sim.m.cl[c].cc, now) {
            sim.defer_begin(c, t.as_nanos());
            return;
        }
        let k = &mut sim.m.cl[c];
        k.ex = ConExchange::start(&mut k.cc, now, 0, &mut k.dither);
        let deadline = k.ex.deadline().as_nanos();
        sim.start_exchange(c);
        sim.send_copy(c, sim.m.req_size, deadline, ());
    }

    fn timer(sim: &mut Sim<'_, Self>, c: usize) {
        let now = Instant::from_nanos(sim.now);
        if !sim.clients[c].active {
            // Cannot happen (every path that deactivates a client re-arms or disarms it);
            // kept so a stray entry can never fire.
            sim.timers.remove(c as u32);
            return;
        }
        let k = &mut sim.m.cl[c];
        match k.ex.expire(&mut k.cc, now) {
            Expiry::Retransmit { deadline, .. } => sim.send_copy(c, sim.m.req_size, deadline.as_nanos(), ()),
            Expiry::GiveUp => sim.exchange_failed(c),
        }
    }

    /// A request copy reaches the server: deduplicate by exchange, answer.
    fn at_server(sim: &mut Sim<'_, Self>, p: Packet<()>) {
        sim.note_request(&p);
        let cache = &mut sim.m.server_cache[p.client as usize];
        let echo = if cache.0 == p.exchange {
            sim.m.duplicate_mode.echo(cache.1, p.copy)
        } else {
            *cache = (p.exchange, p.copy);
            p.copy
        };
        sim.server_answer(Packet { echo, ..p }, sim.m.resp_size, 0);
    }

    fn server_send(sim: &mut Sim<'_, Self>, p: Packet<()>, _sid: u64) {
        sim.send_response(p, sim.m.resp_size);
    }

    /// A response reaches its client.
    fn at_client(sim: &mut Sim<'_, Self>, p: Packet<()>) {
        let c = p.client as usize;
        sim.note_response(&p);
        let cl = &sim.clients[c];
        if !(cl.active && cl.cur == p.exchange) {
            return; // a late duplicate, or the response to an exchange that gave up
        }
        let now = Instant::from_nanos(sim.now);
        let k = &mut sim.m.cl[c];
        let echoed = k.copy_id.then(|| {
            (p.echo as u32, sim.cold[c].log.get(p.echo as usize).map_or(k.ex.started(), |l| Instant::from_nanos(l.0)))
        });
        k.ex.acknowledge(&mut k.cc, now, echoed);
        sim.exchange_done(c, (p.copy, p.echo, sim.m.resp_size));
    }

    fn reset(sim: &mut Sim<'_, Self>, c: usize) {
        sim.m.cl[c].cc.reset(Instant::from_nanos(sim.now));
    }

    fn snapshot(&self, c: usize) -> Snapshot {
        self.cl[c].cc.snapshot()
    }
}
