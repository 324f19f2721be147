//! Report assembly and trace records: what the engine measured, as a `SimReport` and
//! per-exchange `ExchangeTrace`s.

use super::*;
use crate::engine::workload::ExchangeObserver;
use crate::report::{secs, AccessLinkReport, FlowReport, GroupReport, LinkReport, LinksReport, SimReport, Summary};
use crate::trace::{ExchangeOutcome, ExchangeTrace};

/// The part of a report a protocol measures: per flow, per group, the retransmission
/// histogram (CoAP) and the useful bytes delivered (for `useful_fraction`).
pub(crate) struct FlowPart {
    pub(crate) flows: Vec<FlowReport>,
    pub(crate) groups: Vec<GroupReport>,
    pub(crate) hist: Vec<u64>,
    pub(crate) useful_bytes: u64,
}

impl<'t, M: CoapEndpoints<W>, W: Workload> Sim<'t, M, W> {
    /// The engine's trace record of client `c`'s exchange that just ended.
    pub(crate) fn emit_trace(&mut self, c: usize, outcome: ExchangeOutcome, answer: Option<Answer>) {
        let Some(sink) = self.trace.as_deref_mut() else { return };
        let cl = &self.clients[c];
        let cold = &self.cold[c];
        self.tx_buf.clear();
        self.tx_buf.extend(
            self.logs.get(c).into_iter().flatten().map(|&(s, t)| TxTrace { sent_s: secs(s), timer_s: secs(t) }),
        );
        let rec = ExchangeTrace {
            time_s: secs(self.now),
            client: c as u32,
            group: cold.group,
            exchange: cl.cur,
            outcome,
            transmissions: &self.tx_buf,
            rtt_s: answer.map(|_| secs(self.now - cold.started)),
            answered_copy: answer.map(|a| a.0 as u32),
            echoed_copy: answer.map(|a| a.1 as u32),
            cc: self.m.snapshot(c).into(),
        };
        sink.exchange(&rec);
    }

    /// The CoAP endpoints' part of the report: from the exchange records.
    pub(crate) fn coap_flow_reports(&mut self, cfg: &SimConfig, def: UnnecessaryDef) -> FlowPart {
        let mut flows = Vec::with_capacity(self.clients.len());
        let mut groups: Vec<GroupReport> = cfg
            .groups
            .iter()
            .enumerate()
            .map(|(i, g)| GroupReport::empty(i as u32, &g.cc, g.clients, self.groups[i].hist.clone()))
            .collect();
        let mut fcts: Vec<Vec<f64>> = vec![Vec::new(); groups.len()];
        for (i, (cl, cold)) in self.clients.iter().zip(&self.cold).enumerate() {
            // A finished run delivered or dropped every packet: no record counts one.
            debug_assert!(self.now >= self.bound || cl.recs.iter().all(|r| r.held == 0 || r.held == u16::MAX));
            for r in cl.recs.iter() {
                self.obs.record_final(i, r);
            }
            let unnecessary: u64 = cold.unnecessary() + cl.recs.iter().map(|r| r.unnecessary(def)).sum::<u64>();
            let fct = match (cold.first_sent, cold.done_at) {
                (Some(s), Some(d)) => Some(secs(d - s)),
                _ => None,
            };
            let g = cold.group as usize;
            let rtx = cl.transmissions - cl.recs.len() as u64;
            let gr = &mut groups[g];
            gr.completed_exchanges += cold.completed();
            gr.failed_exchanges += cold.failed();
            gr.transmissions += cl.transmissions;
            gr.retransmissions += rtx;
            gr.unnecessary_retransmissions += unnecessary;
            if let Some(f) = fct {
                gr.finished_flows += 1;
                fcts[g].push(f);
            }
            flows.push(FlowReport {
                client: i as u32,
                group: cold.group,
                cc: self.groups[g].name,
                fct_s: fct,
                transmissions: cl.transmissions,
                retransmissions: rtx,
                unnecessary_retransmissions: unnecessary,
                failed_exchanges: cold.failed(),
                completed_exchanges: cold.completed(),
                ..FlowReport::udp()
            });
        }
        for (gr, f) in groups.iter_mut().zip(&fcts) {
            gr.fct_s = Summary::of(f);
        }
        FlowPart { flows, groups, hist: std::mem::take(&mut self.hist), useful_bytes: self.useful_bytes }
    }
}

impl<'t, M: Protocol<W>, W: Workload> Sim<'t, M, W> {
    /// Assemble the report (everything but `wall_s`): the protocol's part
    /// ([`Protocol::flow_reports`]), the links, the window, the run's counters.
    pub(in crate::engine) fn report(mut self, cfg: SimConfig, truncated: bool, def: UnnecessaryDef) -> SimReport {
        let end = if truncated { self.bound } else { self.last_event };
        self.close_window(end);
        let start = self.first_packet.unwrap_or(0);
        let window = self.window_end.unwrap_or(end).saturating_sub(start);
        // The run is over: what only the run needed goes before the report's per-flow part
        // is built (the run's peak memory would otherwise be the two together).
        self.timers = TimerQueue::new(0);
        self.m.release_run_state();
        let FlowPart { flows, groups, hist, useful_bytes } = M::flow_reports(&mut self, &cfg, def);
        let messages = W::report(&self);
        let link = |l: &Link<Packet<M::Buf>>, busy: u64| {
            let path = l.path();
            let rs = path.rate_stage().map(|r| r.stats()).unwrap_or_default();
            LinkReport::new(path.counters(), rs.admitted_bytes, busy, window, rs.max_queue_bytes)
        };
        let downlink = link(&self.down, self.busy_window.0);
        let uplink = link(&self.up, self.busy_window.1);
        let mut serialised = downlink.serialised_bytes;
        let access_links: Vec<AccessLinkReport> = cfg
            .topology
            .access_links
            .iter()
            .zip(self.extra.iter().zip(&self.extra_busy))
            .map(|(a, ((u, d), busy))| {
                let links = LinksReport { downlink: link(d, busy.0), uplink: link(u, busy.1) };
                serialised += links.downlink.serialised_bytes;
                AccessLinkReport { groups: a.groups.clone(), links }
            })
            .collect();
        SimReport {
            config: cfg,
            flows,
            retransmissions_per_exchange: hist,
            links: LinksReport { downlink, uplink },
            access_links,
            useful_fraction: if serialised > 0 { useful_bytes as f64 / serialised as f64 } else { 0.0 },
            sim_time_s: secs(end),
            wall_s: 0.0,
            events: self.events,
            truncated,
            groups,
            mesh: self.mesh.as_ref().map(|m| m.report(self.server_q.len() as u64)),
            messages,
        }
    }
}
