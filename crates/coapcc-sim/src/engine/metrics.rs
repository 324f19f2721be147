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

/// A client's exchange records, indexed by exchange: the current (last) one inline in the
/// client's hot record, the earlier ones in a vector (only late duplicates reach them).
#[derive(Clone, Debug)]
pub(super) struct Recs {
    last: ExRec,
    old: Vec<ExRec>,
    len: u32,
}

impl Recs {
    pub(super) fn with_capacity(n: usize) -> Self {
        Recs {
            last: ExRec { tx: 0, min_req: NONE, min_resp: NONE, first_req: NONE },
            old: Vec::with_capacity(n),
            len: 0,
        }
    }

    /// Records kept (exchanges started).
    #[inline]
    pub(super) fn len(&self) -> usize {
        self.len as usize
    }

    /// Start a new record.
    #[inline]
    pub(super) fn push(&mut self, r: ExRec) {
        if self.len > 0 {
            self.old.push(self.last);
        }
        self.last = r;
        self.len += 1;
    }

    /// The current (last) record.
    #[inline]
    pub(super) fn last_mut(&mut self) -> Option<&mut ExRec> {
        (self.len > 0).then_some(&mut self.last)
    }

    /// Every record, in exchange order.
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
            &self.old[i]
        }
    }
}

impl std::ops::IndexMut<usize> for Recs {
    #[inline]
    fn index_mut(&mut self, i: usize) -> &mut ExRec {
        if i + 1 == self.len as usize {
            &mut self.last
        } else {
            &mut self.old[i]
        }
    }
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
        let cl = &self.clients[c];
        let n = cl.recs[cl.cur as usize].tx.saturating_sub(1) as usize;
        let cold = &mut self.cold[c];
        cold.completed += 1;
        let g = cold.group as usize;
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
        let g = self.cold[c].group as usize;
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
        self.cold[c].failed += 1;
        self.emit_trace(c, ExchangeOutcome::GiveUp, None);
    }
}
