//! Metrics: what the engine records per exchange, per client and per group while a run
//! goes (the report is assembled from them in `assemble`).

use super::*;

/// Per-exchange record kept until the end of the run (unnecessary-retransmission metric).
#[derive(Clone, Copy, Debug)]
pub(super) struct ExRec {
    /// Copies sent.
    pub(super) tx: u16,
    /// Smallest copy that reached the server.
    pub(super) min_req: u16,
    /// Smallest copy whose response reached the client.
    pub(super) min_resp: u16,
    /// First copy that reached the server.
    pub(super) first_req: u16,
}

/// A group's name and retransmission histogram.
pub(super) struct Group {
    pub(super) name: &'static str,
    pub(super) hist: Vec<u64>,
}

impl<'t, M: Model> Sim<'t, M> {
    /// A request copy reached the server (metrics only).
    #[inline]
    pub(super) fn note_request<B>(&mut self, p: &Packet<B>) {
        if p.copy == NONE {
            return;
        }
        let rec = &mut self.clients[p.client as usize].recs[p.exchange as usize];
        rec.min_req = rec.min_req.min(p.copy);
        if rec.first_req == NONE {
            rec.first_req = p.copy;
        }
    }

    /// A response to copy `p.copy` reached its client (metrics only).
    #[inline]
    pub(super) fn note_response<B>(&mut self, p: &Packet<B>) {
        if p.copy == NONE {
            return;
        }
        let rec = &mut self.clients[p.client as usize].recs[p.exchange as usize];
        rec.min_resp = rec.min_resp.min(p.copy);
    }

    /// Client `c`'s exchange completed with `answer`: histograms, useful bytes, trace.
    #[inline]
    pub(super) fn record_completed(&mut self, c: usize, answer: Answer) {
        let cl = &mut self.clients[c];
        cl.completed += 1;
        let n = cl.recs[cl.cur as usize].tx.saturating_sub(1) as usize;
        let g = cl.group as usize;
        if let Some(h) = self.hist.get_mut(n) {
            *h += 1;
        }
        if let Some(h) = self.groups[g].hist.get_mut(n) {
            *h += 1;
        }
        self.useful_bytes += answer.2 as u64;
        if self.trace.is_some() {
            self.emit_trace(c, ExchangeOutcome::Ack, Some(answer));
        }
    }

    /// A block of client `c`'s Block2 transfer completed (its next block's request is
    /// going out): the block's retransmissions go to the histograms, the `size` IP bytes of
    /// the response that completed it to the useful bytes.
    pub(super) fn block_done(&mut self, c: usize, size: u32) {
        self.useful_bytes += u64::from(size);
        let cl = &self.clients[c];
        let n = cl.recs[cl.cur as usize].tx.saturating_sub(1) as usize;
        let g = cl.group as usize;
        if let Some(h) = self.hist.get_mut(n) {
            *h += 1;
        }
        if let Some(h) = self.groups[g].hist.get_mut(n) {
            *h += 1;
        }
    }

    /// Client `c`'s exchange gave up.
    #[inline]
    pub(super) fn record_failed(&mut self, c: usize) {
        self.clients[c].failed += 1;
        self.emit_trace(c, ExchangeOutcome::GiveUp, None);
    }
}
