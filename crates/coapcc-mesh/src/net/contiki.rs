//! Contiki's `csma.c` over `nullrdc` with the motes' processor and receive FIFO (`mac.csma =
//! contiki`, `mac.rdc = none`; sources in [`crate::contiki`] and [`crate::mote`]).
//!
//! Per node:
//! - **Neighbour queues**: one FIFO per next hop (at most `mac.max_neighbor_queues`), packets
//!   from a pool of `mac.queue_packets`; a queue whose first packet arrives, or whose retry
//!   timer fires, becomes a job of the processor.
//! - **Processor** (one thing at a time): reading a frame out of the receive FIFO and running
//!   it through the stack (`mote.spi_byte_us` per byte + `mote.rx_process_us`; before any
//!   other job, as Contiki polls the radio driver's process before it delivers events), a
//!   packet of the node's own application going down the stack (`mote.rx_process_us`), or a
//!   neighbour queue sent as `nullrdc`'s `send_list` does: for each packet, prepare it
//!   (`mote.tx_prepare_us` + SPI), CCA (`mac.cca_us`), then, if clear, transmit after the
//!   turnaround and wait for the end of the frame (and, with `autoack`, for the ACK); a busy
//!   channel or a missing ACK ends the queue's turn and arms its retry timer.
//! - **Receive FIFO** (`mote.rx_fifo_bytes`): frames for the node (unicast to it, or
//!   broadcast) land there when they end; one that does not fit overflows it and is lost,
//!   and the radio takes nothing more until the processor has read the next frame and
//!   flushed the rest.
//!
//! With `mote.cpu = false` the processing takes no time and there is no FIFO: a received
//! packet is queued at once (only the radio's sending is sequential).

use std::collections::VecDeque;

use super::{below, DropCause, Ev, Frame, Kind, MacWhat, MeshNet, Ns, Tx, BCAST, US};
use crate::config::MeshNetConfig;
use crate::contiki::CsmaBackoff;

/// The stack's parameters, resolved once.
#[derive(Clone, Debug)]
pub(crate) struct Params {
    tick: Ns,
    timebase_ticks: u64,
    autoack: bool,
    ack_wait: Ns,
    after_ack: Ns,
    backoff: CsmaBackoff,
    max_per_neighbor: usize,
    max_queues: usize,
    pool: u32,
    max_tx: u8,
    cpu: bool,
    fifo: u32,
    spi_byte_ns: f64,
    rx_process_ns: f64,
    tx_prepare_ns: f64,
    root: u16,
    root_factor: f64,
}

impl Params {
    pub(crate) fn new(cfg: &MeshNetConfig, root: usize) -> Params {
        let (m, r, mote) = (&cfg.mac, &cfg.mac.nullrdc, &cfg.mote);
        let rate = m.channel_check_rate_hz.round().max(1.0) as u64;
        Params {
            tick: 1_000_000_000 / r.clock_second as u64,
            // CLOCK_SECOND / NETSTACK_RDC_CHANNEL_CHECK_RATE, integer division as in C.
            timebase_ticks: (r.clock_second as u64 / rate).max(1),
            autoack: r.autoack,
            ack_wait: r.ack_wait_us as Ns * US,
            after_ack: r.after_ack_detected_us as Ns * US,
            backoff: r.backoff,
            max_per_neighbor: r.max_per_neighbor as usize,
            max_queues: m.max_neighbor_queues as usize,
            pool: m.queue_packets,
            max_tx: m.contiki_max_transmissions.max(1),
            cpu: mote.cpu,
            fifo: mote.rx_fifo_bytes,
            spi_byte_ns: mote.spi_byte_us * 1e3,
            rx_process_ns: (mote.rx_process_us + cfg.routing.forward_delay_us as f64) * 1e3,
            tx_prepare_ns: mote.tx_prepare_us * 1e3,
            root: root as u16,
            root_factor: mote.root_cpu_factor,
        }
    }
}

/// A queued packet: the frame and its MAC sequence number.
#[derive(Clone, Copy, Debug)]
struct Queued<P> {
    frame: Frame<P>,
    seq: u8,
}

/// One neighbour queue of `csma.c`.
#[derive(Clone, Debug)]
struct NbrQueue<P> {
    next: u16,
    pkts: VecDeque<Queued<P>>,
    /// Bumped whenever the queue's timer is re-armed (a stale timer event is ignored).
    token: u32,
    /// `n->transmissions`: transmissions of the head packet that ended OK or without ACK.
    transmissions: u8,
    /// The next hop holds a copy of the head packet (its ACK was lost).
    head_accepted: bool,
}

/// A frame in the receive FIFO: the frame, its sender, MAC sequence number, and whether it
/// is a link-layer ACK.
#[derive(Clone, Copy, Debug)]
struct InFifo<P> {
    frame: Option<Frame<P>>,
    from: u16,
    seq: u8,
    bytes: u32,
}

/// What the processor does next.
#[derive(Clone, Copy, Debug)]
enum Job<P> {
    /// A packet of the node's own application goes down the stack.
    Local(Frame<P>),
    /// Send the neighbour queue of next hop `next` (`transmit_packet_list`).
    Queue(u16),
}

/// The processor's current step.
#[derive(Clone, Copy, Debug)]
enum Cpu<P> {
    Idle,
    /// Running a packet through the stack (received when `from` is some, else local).
    Process {
        frame: Option<Frame<P>>,
        local: bool,
    },
    /// Preparing the head packet of queue `next`, then its CCA (decided when this ends).
    PrepareCca {
        next: u16,
    },
    /// CCA clear: the frame goes on the air when this ends.
    Turnaround {
        next: u16,
    },
    /// On the air (ends with the transmission's end, not with a processor event).
    Transmit {
        next: u16,
    },
    /// `nullrdc` waiting `ACK_WAIT_TIME` after the frame.
    AckWait {
        next: u16,
    },
    /// `nullrdc` waiting `AFTER_ACK_DETECTED_WAIT_TIME`.
    AfterAck {
        next: u16,
    },
}

/// What one transmission attempt came to (`MAC_TX_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    Ok,
    Collision,
    NoAck,
}

/// The Contiki stack of one node.
#[derive(Debug)]
pub(crate) struct Stack<P> {
    queues: Vec<NbrQueue<P>>,
    pool: u32,
    dsn: u8,
    fifo: VecDeque<InFifo<P>>,
    fifo_bytes: u32,
    overflow: bool,
    cpu: Cpu<P>,
    cpu_token: u32,
    jobs: VecDeque<Job<P>>,
}

impl<P> Default for Stack<P> {
    fn default() -> Self {
        Stack {
            queues: Vec::new(),
            pool: 0,
            dsn: 0,
            fifo: VecDeque::new(),
            fifo_bytes: 0,
            overflow: false,
            cpu: Cpu::Idle,
            cpu_token: 0,
            jobs: VecDeque::new(),
        }
    }
}

impl<P> Stack<P> {
    /// Host packets held by the stack (queues, FIFO, processor, jobs).
    pub(crate) fn host_packets(&self) -> u64 {
        let host = |f: &Frame<P>| matches!(f.kind, Kind::Host(_)) as u64;
        let mut n: u64 = self.queues.iter().map(|q| q.pkts.iter().map(|p| host(&p.frame)).sum::<u64>()).sum();
        n += self.fifo.iter().filter_map(|f| f.frame.as_ref()).map(host).sum::<u64>();
        n += self.jobs.iter().map(|j| if let Job::Local(f) = j { host(f) } else { 0 }).sum::<u64>();
        if let Cpu::Process { frame: Some(f), .. } = &self.cpu {
            n += host(f);
        }
        // A head packet the next hop already holds (its ACK was lost) is counted there.
        n - self
            .queues
            .iter()
            .filter(|q| q.head_accepted && q.pkts.front().is_some_and(|p| host(&p.frame) == 1))
            .count() as u64
    }
}

impl<P: Copy> MeshNet<P> {
    fn ck(&self) -> &Params {
        self.nullrdc.as_ref().expect("the nullrdc stack")
    }

    /// Processor time of `ns` at `node` (the root's processor is slower).
    fn cpu_time(&self, node: u16, ns: f64) -> Ns {
        let p = self.ck();
        let f = if node == p.root { p.root_factor } else { 1.0 };
        (ns * f).round() as Ns
    }

    fn set_cpu(&mut self, node: u16, step: Cpu<P>, after: Ns) {
        let st = &mut self.nodes[node as usize].ck;
        st.cpu = step;
        st.cpu_token = st.cpu_token.wrapping_add(1);
        let token = st.cpu_token;
        self.schedule(self.now + after, Ev::Cpu { node, token });
    }

    /// The node's application sends `pkt` (or a test frame is handed over).
    pub(crate) fn ck_local_send(&mut self, node: u16, pkt: Frame<P>) {
        if !self.ck().cpu {
            self.ck_route(node, pkt, true);
            self.ck_kick(node);
            return;
        }
        self.nodes[node as usize].ck.jobs.push_back(Job::Local(pkt));
        self.ck_kick(node);
    }

    /// Route a packet the stack has processed (`local`: the node's own): deliver it here, or
    /// hand it to the MAC.
    fn ck_route(&mut self, node: u16, mut pkt: Frame<P>, local: bool) {
        match pkt.kind {
            Kind::Dio if local => return self.ck_mac_send(node, pkt),
            Kind::Dio => return self.dio_heard(node),
            Kind::Dao if pkt.dst == node => return,
            _ => {}
        }
        if !pkt.routed {
            // A test frame: sent to its neighbour, delivered there.
            return if local { self.ck_mac_send(node, pkt) } else { self.deliver(node, pkt) };
        }
        if pkt.dst == node || !self.route(node, &mut pkt) {
            return self.deliver(node, pkt);
        }
        self.ck_mac_send(node, pkt);
    }

    /// `csma.c` `send_packet`: queue `pkt` for its next hop.
    pub(crate) fn ck_mac_send(&mut self, node: u16, pkt: Frame<P>) {
        let (max_queues, pool, per_nbr) = {
            let p = self.ck();
            (p.max_queues, p.pool, p.max_per_neighbor)
        };
        let st = &mut self.nodes[node as usize].ck;
        let qi = match st.queues.iter().position(|q| q.next == pkt.next) {
            Some(i) => i,
            None if max_queues > 0 && st.queues.len() >= max_queues => {
                return self.drop_packet(node, pkt, DropCause::NeighborQueues);
            }
            None => {
                st.queues.push(NbrQueue {
                    next: pkt.next,
                    pkts: VecDeque::new(),
                    token: 0,
                    transmissions: 0,
                    head_accepted: false,
                });
                st.queues.len() - 1
            }
        };
        let full = st.pool >= pool || (per_nbr > 0 && st.queues[qi].pkts.len() >= per_nbr);
        if full {
            if st.queues[qi].pkts.is_empty() {
                st.queues.swap_remove(qi);
            }
            return self.drop_packet(node, pkt, DropCause::BufferOverflow);
        }
        st.dsn = st.dsn.wrapping_add(1);
        let seq = st.dsn;
        st.pool += 1;
        let q = &mut st.queues[qi];
        q.pkts.push_back(Queued { frame: pkt, seq });
        if q.pkts.len() == 1 {
            // The first packet of the queue goes at once (ctimer 0: after the current step).
            q.token = q.token.wrapping_add(1);
            st.jobs.push_back(Job::Queue(pkt.next));
        }
    }

    /// If the processor is idle: read the FIFO first, else take the next job.
    fn ck_kick(&mut self, node: u16) {
        if !matches!(self.nodes[node as usize].ck.cpu, Cpu::Idle) {
            return;
        }
        let st = &mut self.nodes[node as usize].ck;
        if let Some(head) = st.fifo.pop_front() {
            // cc2420_read: the frame leaves the FIFO; after an overflow the rest is flushed.
            st.fifo_bytes -= head.bytes;
            if st.overflow {
                st.overflow = false;
                let rest: Vec<InFifo<P>> = st.fifo.drain(..).collect();
                st.fifo_bytes = 0;
                for f in rest {
                    self.ck_fifo_lost(node, f);
                }
            }
            let read = self.ck().spi_byte_ns * head.bytes as f64;
            let Some(frame) = head.frame else {
                // A link-layer ACK read outside an ACK wait: nullrdc ignores it.
                let t = self.cpu_time(node, read);
                return self.set_cpu(node, Cpu::Process { frame: None, local: false }, t);
            };
            if self.ck().autoack && self.ck_duplicate(node, head.from, head.seq) {
                let t = self.cpu_time(node, read);
                return self.set_cpu(node, Cpu::Process { frame: None, local: false }, t);
            }
            let t = self.cpu_time(node, read + self.ck().rx_process_ns);
            return self.set_cpu(node, Cpu::Process { frame: Some(frame), local: false }, t);
        }
        let Some(job) = st.jobs.pop_front() else { return };
        match job {
            Job::Local(frame) => {
                let t = self.cpu_time(node, self.ck().rx_process_ns);
                self.set_cpu(node, Cpu::Process { frame: Some(frame), local: true }, t);
            }
            Job::Queue(next) => self.ck_send_head(node, next),
        }
    }

    /// `mac-sequence.c`: a frame with the sender's last sequence number is a duplicate.
    fn ck_duplicate(&mut self, node: u16, from: u16, seq: u8) -> bool {
        let n = self.nodes.len();
        let slot = node as usize * n + from as usize;
        if self.last_seq[slot] == seq as u16 {
            self.mac.duplicates_suppressed += 1;
            return true;
        }
        self.last_seq[slot] = seq as u16;
        false
    }

    /// Prepare and CCA the head packet of queue `next` (or end the turn if it is empty).
    fn ck_send_head(&mut self, node: u16, next: u16) {
        let st = &self.nodes[node as usize].ck;
        let Some(head) = st.queues.iter().find(|q| q.next == next).and_then(|q| q.pkts.front()) else {
            return self.ck_idle(node);
        };
        let p = self.ck();
        let prep = self.cpu_time(node, p.tx_prepare_ns + p.spi_byte_ns * (head.frame.psdu + 1) as f64);
        let after = if p.cpu { prep } else { 0 } + self.cca;
        self.set_cpu(node, Cpu::PrepareCca { next }, after);
    }

    fn ck_idle(&mut self, node: u16) {
        self.nodes[node as usize].ck.cpu = Cpu::Idle;
        self.ck_kick(node);
    }

    /// A processor step ended.
    pub(crate) fn ck_cpu(&mut self, node: u16, token: u32) {
        let st = &self.nodes[node as usize].ck;
        if st.cpu_token != token {
            return;
        }
        match st.cpu {
            Cpu::Idle | Cpu::Transmit { .. } => {}
            Cpu::Process { frame, local } => {
                self.nodes[node as usize].ck.cpu = Cpu::Idle;
                if let Some(f) = frame {
                    self.ck_route(node, f, local);
                }
                self.ck_kick(node);
            }
            Cpu::PrepareCca { next } => {
                let busy = self.channel_busy(node)
                    || (self.ck().autoack
                        && next != BCAST
                        && (self.receiving(node) || !self.nodes[node as usize].ck.fifo.is_empty()));
                if busy {
                    self.mac.cca_busy += 1;
                    self.log(node, MacWhat::CcaBusy);
                    self.ck_sent(node, next, Status::Collision);
                } else {
                    self.log(node, MacWhat::CccIdle);
                    let t = self.turnaround;
                    self.set_cpu(node, Cpu::Turnaround { next }, t);
                }
            }
            Cpu::Turnaround { next } => {
                let st = &self.nodes[node as usize].ck;
                let Some(q) = st.queues.iter().find(|q| q.next == next) else { return self.ck_idle(node) };
                let Some(&Queued { frame, seq }) = q.pkts.front() else { return self.ck_idle(node) };
                let retry = q.transmissions;
                self.nodes[node as usize].ck.cpu = Cpu::Transmit { next };
                self.mac.data_tx += 1;
                if !matches!(frame.kind, Kind::Host(_)) {
                    self.mac.control_tx += 1;
                }
                self.log(node, MacWhat::TxData { to: frame.next, retry });
                let air = self.airtime(frame.psdu);
                let tx =
                    Tx { sender: node, dst: frame.next, ack: false, seq, pkt: Some(frame), start: 0, dst_faded: false };
                self.start_transmission(tx, air);
            }
            Cpu::AckWait { next } => {
                let detected =
                    self.receiving(node) || !self.nodes[node as usize].ck.fifo.is_empty() || self.channel_busy(node);
                if detected {
                    let t = self.ck().after_ack;
                    self.set_cpu(node, Cpu::AfterAck { next }, t);
                } else {
                    self.log(node, MacWhat::AckTimeout);
                    self.ck_sent(node, next, Status::NoAck);
                }
            }
            Cpu::AfterAck { next } => {
                let seq = self.ck_head_seq(node, next);
                let st = &mut self.nodes[node as usize].ck;
                let Some(head) = st.fifo.front().copied() else {
                    self.log(node, MacWhat::AckTimeout);
                    return self.ck_sent(node, next, Status::NoAck);
                };
                if head.frame.is_none() && Some(head.seq) == seq {
                    st.fifo.pop_front();
                    st.fifo_bytes -= head.bytes;
                    self.mac.acked += 1;
                    self.log(node, MacWhat::AckReceived);
                    self.ck_sent(node, next, Status::Ok);
                } else {
                    // Not our ACK: nullrdc reads it into a 3-byte buffer; a longer frame makes
                    // cc2420_read flush the whole FIFO.
                    if head.frame.is_some() {
                        let rest: Vec<InFifo<P>> = st.fifo.drain(..).collect();
                        st.fifo_bytes = 0;
                        st.overflow = false;
                        for f in rest {
                            self.ck_fifo_lost(node, f);
                        }
                    } else {
                        st.fifo.pop_front();
                        st.fifo_bytes -= head.bytes;
                    }
                    self.ck_sent(node, next, Status::Collision);
                }
            }
        }
    }

    fn ck_head_seq(&self, node: u16, next: u16) -> Option<u8> {
        let st = &self.nodes[node as usize].ck;
        st.queues.iter().find(|q| q.next == next).and_then(|q| q.pkts.front()).map(|p| p.seq)
    }

    /// A frame in the FIFO was lost (overflow flush, or read as a bad ACK).
    fn ck_fifo_lost(&mut self, node: u16, f: InFifo<P>) {
        self.mac.fifo_overflows += 1;
        let Some(frame) = f.frame else { return };
        if self.ck().autoack {
            // The sender may still hold the packet (it will retransmit, or count the loss).
            let sender = &mut self.nodes[f.from as usize].ck;
            if let Some(q) = sender.queues.iter_mut().find(|q| q.next == node) {
                if q.pkts.front().is_some_and(|p| p.seq == f.seq) {
                    q.head_accepted = false;
                    return;
                }
            }
        }
        self.drop_packet(node, frame, DropCause::FifoOverflow);
    }

    /// A transmission ended (the medium's part is done): the receivers' radios and the
    /// sender's `nullrdc`.
    pub(crate) fn ck_tx_end(&mut self, tx: Tx<P>, got: &[u16], received: bool) {
        if tx.ack {
            // A hardware ACK reaches the data sender's FIFO.
            if received {
                self.ck_radio_rx(tx.dst, InFifo { frame: None, from: tx.sender, seq: tx.seq, bytes: 6 });
            }
            return;
        }
        let frame = tx.pkt.expect("a data frame carries a packet");
        for &r in got {
            let accepted =
                self.ck_radio_rx(r, InFifo { frame: Some(frame), from: tx.sender, seq: tx.seq, bytes: frame.psdu + 1 });
            if accepted && tx.dst != BCAST {
                self.log(r, MacWhat::RxData { from: tx.sender, duplicate: false });
                if self.ck().autoack {
                    let q = self.nodes[tx.sender as usize].ck.queues.iter_mut().find(|q| q.next == r);
                    if let Some(q) = q {
                        q.head_accepted = true;
                    }
                    // CC2420 auto-ACK 12 symbols after the frame.
                    let t = self.now + self.turnaround;
                    self.schedule(t, Ev::AckStart { node: r, to: tx.sender, seq: tx.seq });
                }
            }
        }
        let autoack = self.ck().autoack;
        if tx.dst != BCAST && !received && !autoack {
            let cause = if tx.dst_faded { DropCause::AirFading } else { DropCause::AirCollision };
            self.drop_packet(tx.dst, frame, cause);
        }
        let s = tx.sender;
        let Cpu::Transmit { next } = self.nodes[s as usize].ck.cpu else { return };
        if autoack && tx.dst != BCAST {
            let t = self.ck().ack_wait;
            self.set_cpu(s, Cpu::AckWait { next }, t);
        } else {
            self.ck_sent(s, next, Status::Ok);
        }
    }

    /// The radio of `r` received a frame for it: into the FIFO (or straight up the stack
    /// without the processor model). Returns whether it was accepted.
    fn ck_radio_rx(&mut self, r: u16, f: InFifo<P>) -> bool {
        let (cpu, cap) = (self.ck().cpu, self.ck().fifo);
        if !cpu {
            if let Some(frame) = f.frame {
                if self.ck().autoack && self.ck_duplicate(r, f.from, f.seq) {
                    return true;
                }
                self.ck_route(r, frame, false);
                self.ck_kick(r);
            } else if let Cpu::AckWait { .. } | Cpu::AfterAck { .. } = self.nodes[r as usize].ck.cpu {
                let st = &mut self.nodes[r as usize].ck;
                st.fifo.push_back(f);
                st.fifo_bytes += f.bytes;
            }
            return true;
        }
        let st = &mut self.nodes[r as usize].ck;
        if st.overflow || st.fifo_bytes + f.bytes > cap {
            st.overflow = true;
            self.log(r, MacWhat::FifoOverflow);
            self.mac.fifo_overflows += 1;
            if let Some(frame) = f.frame {
                self.drop_packet(r, frame, DropCause::FifoOverflow);
            }
            return false;
        }
        st.fifo.push_back(f);
        st.fifo_bytes += f.bytes;
        if f.frame.is_some() {
            self.ck_kick(r);
        }
        true
    }

    /// `csma.c` `packet_sent` for the head packet of queue `next` at `node`, then the rest of
    /// `send_list`.
    fn ck_sent(&mut self, node: u16, next: u16, status: Status) {
        let p = self.ck().clone();
        let st = &mut self.nodes[node as usize].ck;
        let Some(qi) = st.queues.iter().position(|q| q.next == next) else { return self.ck_idle(node) };
        let q = &mut st.queues[qi];
        match status {
            Status::Ok => {
                q.pkts.pop_front();
                st.pool -= 1;
                q.transmissions = 0;
                q.head_accepted = false;
                if q.pkts.is_empty() {
                    st.queues.swap_remove(qi);
                    return self.ck_idle(node);
                }
                // send_list goes on with the next packet at once.
                self.ck_send_head(node, next);
            }
            Status::Collision | Status::NoAck => {
                if status == Status::NoAck {
                    q.transmissions = q.transmissions.saturating_add(1);
                }
                if q.transmissions >= p.max_tx {
                    let head = q.pkts.pop_front().expect("a head packet");
                    let accepted = std::mem::replace(&mut q.head_accepted, false);
                    st.pool -= 1;
                    q.transmissions = 0;
                    let empty = q.pkts.is_empty();
                    if empty {
                        st.queues.swap_remove(qi);
                    } else {
                        // free_packet: the next packet after one time base.
                        q.token = q.token.wrapping_add(1);
                        let token = q.token;
                        let t = self.now + p.timebase_ticks * p.tick;
                        self.schedule(t, Ev::QueueTimer { node, next, token });
                    }
                    if accepted {
                        self.mac.false_drops += 1;
                    } else {
                        self.drop_packet(node, head.frame, DropCause::NoAck);
                    }
                    return self.ck_idle(node);
                }
                let k = match p.backoff {
                    CsmaBackoff::Exponential => 1u64 << q.transmissions.min(3),
                    CsmaBackoff::Linear => (q.transmissions as u64 + 1).min(3),
                };
                q.token = q.token.wrapping_add(1);
                let token = q.token;
                // T + (random_rand() % (k·T)) ticks.
                let ticks = p.timebase_ticks + below(&mut self.rng_mac, k * p.timebase_ticks);
                let t = self.now + ticks * p.tick;
                self.schedule(t, Ev::QueueTimer { node, next, token });
                self.ck_idle(node);
            }
        }
    }

    /// A neighbour queue's retry timer fired.
    pub(crate) fn ck_queue_timer(&mut self, node: u16, next: u16, token: u32) {
        let st = &mut self.nodes[node as usize].ck;
        if !st.queues.iter().any(|q| q.next == next && q.token == token) {
            return;
        }
        st.jobs.push_back(Job::Queue(next));
        self.ck_kick(node);
    }
}
