//! Metrics: what the engine records per exchange, per client and per group while a run
//! goes (the report is assembled from them in `assemble`).

use super::*;
use crate::engine::workload::ExchangeObserver;
use crate::trace::ExchangeOutcome;

/// Per-exchange record (unnecessary-retransmission metric), kept while a packet in flight
/// can still change it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ExRec {
    /// Copies sent.
    pub(crate) tx: u16,
    /// Smallest copy that reached the server.
    pub(crate) min_req: u16,
    /// Smallest copy whose response reached the client.
    pub(crate) min_resp: u16,
    /// First copy that reached the server.
    pub(crate) first_req: u16,
    /// Request copies and responses of the exchange held by the links and the server's
    /// queue (while the engine counts them, [`Sim::counting`]; `u16::MAX` sticks).
    pub(crate) held: u16,
}

impl ExRec {
    /// A new exchange's record.
    pub(super) const NEW: ExRec = ExRec { tx: 0, min_req: NONE, min_resp: NONE, first_req: NONE, held: 0 };

    /// The record's unnecessary retransmissions under `def`.
    #[inline]
    pub(super) fn unnecessary(&self, def: UnnecessaryDef) -> u64 {
        let m = match def {
            UnnecessaryDef::ResponseDelivered => self.min_resp,
            UnnecessaryDef::RequestDelivered => self.min_req,
        };
        if m == NONE {
            0
        } else {
            (self.tx as u64).saturating_sub(1 + m as u64)
        }
    }

    /// Whether no packet can change the record's unnecessary retransmissions under `def` any
    /// more, once its exchange is over (no copy is sent after that): copy 0's request (or
    /// response) has arrived, and a later arrival can only lower the smallest copy, which is
    /// already 0.
    #[inline]
    pub(super) fn settled(&self, def: UnnecessaryDef) -> bool {
        match def {
            UnnecessaryDef::ResponseDelivered => self.min_resp == 0,
            UnnecessaryDef::RequestDelivered => self.min_req == 0,
        }
    }
}

/// A client's exchange records, indexed by exchange: the current (last) one inline in the
/// client's hot record, the earlier ones in a vector (only late packets reach them).
///
/// When the engine counts each record's packets in flight ([`ExRec::held`]), an earlier
/// record that no packet can reach any more is final: the leading run of those is folded
/// into a sum of unnecessary retransmissions, so the vector holds only the records from the
/// oldest one with a packet in flight (usually none) and memory does not grow with the
/// exchanges done. Until the engine counts ([`Sim::counting`]), a record is folded only if
/// it is [settled](ExRec::settled) when the next exchange starts and no earlier record is
/// kept (the usual case without loss); the others are kept. A packet that arrives for a
/// folded record changes nothing, so it is ignored ([`Recs::get_mut`]).
#[derive(Clone, Debug)]
pub(super) struct Recs {
    old: Vec<ExRec>,
    len: u32,
    /// Records folded away: `old[i]` is exchange `base + i`.
    base: u32,
    last: ExRec,
}

impl Recs {
    /// No record yet.
    pub(super) fn new() -> Self {
        Recs { old: Vec::new(), len: 0, base: 0, last: ExRec::NEW }
    }

    /// Records kept or folded (exchanges started).
    #[inline]
    pub(super) fn len(&self) -> usize {
        self.len as usize
    }

    /// Start a new record. With `fold` (the records' packets are counted), the earlier
    /// records that are final are folded away; with `fold_settled`, the previous record is
    /// also folded when it is [settled](ExRec::settled) (it may still have packets in
    /// flight). Returns the sum of the folded records' unnecessary retransmissions under
    /// `def`, and whether the previous record was kept (among the earlier records);
    /// `on_final` sees a record folded away.
    #[inline]
    pub(super) fn push(
        &mut self,
        r: ExRec,
        fold: bool,
        fold_settled: bool,
        def: UnnecessaryDef,
        on_final: impl FnOnce(&ExRec),
    ) -> (u64, bool) {
        let mut folded = 0;
        let mut kept = false;
        if self.len > 0 {
            if self.old.is_empty() && ((fold && self.last.held == 0) || (fold_settled && self.last.settled(def))) {
                on_final(&self.last);
                folded = self.last.unnecessary(def);
                self.base = self.len;
            } else {
                self.old.push(self.last);
                kept = true;
            }
        }
        self.last = r;
        self.len += 1;
        (folded, kept)
    }

    /// Fold away the leading records that no packet can reach any more: returns the sum of
    /// their unnecessary retransmissions under `def` (`on_final` sees each).
    #[inline]
    pub(super) fn fold_front(&mut self, def: UnnecessaryDef, mut on_final: impl FnMut(&ExRec)) -> u64 {
        let n = self.old.iter().take_while(|r| r.held == 0).count();
        let folded = self.old[..n].iter().inspect(|r| on_final(r)).map(|r| r.unnecessary(def)).sum();
        self.old.drain(..n);
        self.base += n as u32;
        folded
    }

    /// Free the vector of earlier records if none is left (all folded away): a client that
    /// has nothing in flight holds no allocation.
    pub(super) fn release_if_folded(&mut self) {
        if self.old.is_empty() {
            self.old = Vec::new();
        }
    }

    /// Record `i`, unless it was folded away (or does not exist): a folded record is final,
    /// so whatever arrives for it changes nothing.
    #[inline]
    pub(super) fn get_mut(&mut self, i: usize) -> Option<&mut ExRec> {
        if i + 1 == self.len as usize {
            Some(&mut self.last)
        } else {
            self.old.get_mut(i.checked_sub(self.base as usize)?)
        }
    }

    /// The current (last) record.
    #[inline]
    pub(super) fn last_mut(&mut self) -> Option<&mut ExRec> {
        (self.len > 0).then_some(&mut self.last)
    }

    /// Every record not folded away, in exchange order.
    pub(super) fn iter(&self) -> impl Iterator<Item = &ExRec> {
        self.old.iter().chain((self.len > 0).then_some(&self.last))
    }
}

impl std::ops::Index<usize> for Recs {
    type Output = ExRec;
    #[inline]
    fn index(&self, i: usize) -> &ExRec {
        if i + 1 == self.len as usize {
            &self.last
        } else {
            &self.old[i - self.base as usize]
        }
    }
}

impl std::ops::IndexMut<usize> for Recs {
    #[inline]
    fn index_mut(&mut self, i: usize) -> &mut ExRec {
        if i + 1 == self.len as usize {
            &mut self.last
        } else {
            &mut self.old[i - self.base as usize]
        }
    }
}

/// A group's name and retransmission histogram.
pub(super) struct Group {
    pub(super) name: &'static str,
    pub(super) hist: Vec<u64>,
}

impl<'t, M: Protocol<W>, W: Workload> Sim<'t, M, W> {
    /// A request copy reached the server (metrics only).
    #[inline]
    pub(crate) fn note_request<B>(&mut self, p: &Packet<B>) {
        if p.copy == NONE {
            return;
        }
        let Some(rec) = self.clients[p.client as usize].recs.get_mut(p.exchange as usize) else { return };
        rec.min_req = rec.min_req.min(p.copy);
        // A select, not a branch: whether a copy is the first to arrive follows no pattern.
        let first = rec.first_req;
        rec.first_req = if first == NONE { p.copy } else { first };
    }

    /// A response to copy `p.copy` reached its client (metrics only).
    #[inline]
    pub(crate) fn note_response<B>(&mut self, p: &Packet<B>) {
        if p.copy == NONE {
            return;
        }
        let Some(rec) = self.clients[p.client as usize].recs.get_mut(p.exchange as usize) else { return };
        rec.min_resp = rec.min_resp.min(p.copy);
    }

    /// The copy of client `c`'s exchange `x` that reached the server first (what a cached
    /// answer identifies).
    pub(crate) fn first_copy_received(&self, c: usize, x: u32) -> u16 {
        self.clients[c].recs[x as usize].first_req
    }

    /// Client `c`'s exchange completed with a separate response of `size` IP bytes (sent on
    /// the server's timer or after an Empty ACK): it answers the request the server received
    /// first, as the record says; the record counts it as that copy's response.
    pub(crate) fn separate_answer(&mut self, c: usize, size: u32) -> Answer {
        let cl = &mut self.clients[c];
        let r = &mut cl.recs[cl.cur as usize];
        r.min_resp = r.min_resp.min(r.min_req);
        (r.min_req, r.first_req, size)
    }

    /// A block of client `c`'s Block2 transfer completed (its next block's request is
    /// going out): the block's retransmissions go to the histograms, the `size` IP bytes of
    /// the response that completed it to the useful bytes.
    pub(crate) fn block_done(&mut self, c: usize, size: u32) {
        self.useful_bytes += u64::from(size);
        let cl = &self.clients[c];
        let n = cl.recs[cl.cur as usize].tx.saturating_sub(1) as usize;
        let g = self.cold[c].group as usize;
        if let Some(h) = self.hist.get_mut(n) {
            *h += 1;
        }
        if let Some(h) = self.groups[g].hist.get_mut(n) {
            *h += 1;
        }
    }
}

impl<'t, M: CoapEndpoints<W>, W: Workload> Sim<'t, M, W> {
    /// Client `c`'s exchange completed with `answer`: histograms, useful bytes, trace.
    #[inline]
    pub(super) fn record_completed(&mut self, c: usize, answer: Answer) {
        let cl = &self.clients[c];
        let n = cl.recs[cl.cur as usize].tx.saturating_sub(1) as usize;
        let cold = &mut self.cold[c];
        cold.count_completed();
        let g = cold.group as usize;
        if let Some(h) = self.hist.get_mut(n) {
            *h += 1;
        }
        if let Some(h) = self.groups[g].hist.get_mut(n) {
            *h += 1;
        }
        self.useful_bytes += answer.2 as u64;
        if self.trace.is_some() {
            W::trace(self, c, ExchangeOutcome::Ack, Some(answer));
        }
    }

    /// Client `c`'s exchange gave up.
    #[inline]
    pub(super) fn record_failed(&mut self, c: usize) {
        self.cold[c].count_failed();
        self.obs.gave_up(c);
        if self.trace.is_some() {
            W::trace(self, c, ExchangeOutcome::GiveUp, None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithms::CustomAlgorithms;
    use coapcc_cc::default::DefaultCoap;

    /// A congested run (late duplicates reach the records of exchanges that ended; with
    /// `loss`, packets are lost and reordered, so some records are not settled when their
    /// exchange ends and change later) with the engine
    /// starting to count packets in flight after `fold_after` kept records, and settled
    /// records folding or not: its report, whether it counted, and the records kept at the
    /// end.
    fn run_folding(loss: bool, fold_after: u64, fold_settled: bool) -> (serde_json::Value, bool, usize) {
        let mut cfg = SimConfig {
            seed: 3,
            groups: vec![crate::GroupConfig { cc: "default:preset=helsinki2018".into(), clients: 120 }],
            ..SimConfig::default()
        };
        cfg.workload.exchanges = 12;
        cfg.server.processing_delay_ms = 5.0; // the server's queue holds packets too
        cfg.link.set_buffer_bytes(1_410_000);
        if loss {
            cfg.link.set_loss(&coapcc_link::LossModel::Bernoulli { p: 0.1 });
            // Packets overtake each other: a lower copy's response can arrive after a higher
            // one's, and after the exchange ended.
            cfg.link.set_rest_of_path_ms(0.0, 3000.0);
            for st in &mut cfg.link.uplink {
                if let coapcc_link::StageConfig::Jitter(j) = st {
                    j.allow_reordering = true;
                }
            }
        }
        let custom = CustomAlgorithms::new();
        let resolved = cfg.resolved_with(&custom).unwrap();
        let algs = resolved.group_algorithms(&custom).unwrap();
        let mut sim =
            Sim::<crate::engine::Compact<DefaultCoap>, crate::engine::Flows>::new(&resolved, &algs, None).unwrap();
        sim.coap_setup();
        sim.fold_after = fold_after;
        sim.fold_settled = fold_settled;
        let truncated = sim.run();
        let kept = sim.clients.iter().map(|c| c.recs.iter().count()).sum();
        let counting = sim.counting;
        let def = resolved.metrics.unnecessary_def;
        (sim.report(resolved, truncated, def).outcome_json(), counting, kept)
    }

    #[test]
    fn counting_from_any_point_folds_without_changing_results() {
        for loss in [false, true] {
            let (all, counted, kept) = run_folding(loss, u64::MAX, false);
            assert!(!counted);
            assert_eq!(kept, 120 * 12, "without folding every record is kept");
            let g = &all["groups"][0];
            assert!(g["unnecessary_retransmissions"].as_u64().unwrap() > 0, "{g}");
            // Settled records only; counting from the start (the first kept record), and
            // mid-run with packets in every queue; with and without settled records folding.
            for (fold_after, fold_settled) in [(u64::MAX, true), (0, false), (0, true), (500, false), (500, true)] {
                let (report, counted, kept) = run_folding(loss, fold_after, fold_settled);
                // (With settled records folding, counting starts only once a record is kept.)
                if fold_after == u64::MAX || !fold_settled {
                    assert_eq!(counted, fold_after != u64::MAX, "loss {loss}, after {fold_after}");
                }
                // Settled records alone stop folding a client's records at its first kept one.
                let at_most = if counted { 120 * 12 / 2 } else { 120 * 12 };
                assert!(kept < at_most, "{kept} records kept: loss {loss}, after {fold_after}, settled {fold_settled}");
                // (Not assert_eq: the reports are long.)
                assert!(
                    report == all,
                    "report differs: loss {loss}, counting after {fold_after}, settled {fold_settled}"
                );
            }
            // Without loss every record settles: only the current ones are left.
            if !loss {
                assert_eq!(run_folding(loss, u64::MAX, true).2, 120);
            }
        }
    }
}
