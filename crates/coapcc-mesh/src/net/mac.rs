//! The MAC of one FIFO per node: IEEE 802.15.4 unslotted CSMA/CA, and Contiki's `csma.c`
//! rules over ContikiMAC duty cycling (`mac.csma = contiki`, `mac.rdc = contikimac`).
//!
//! Head of queue: NB = 0, BE = macMinBE; wait U{0..2^BE − 1} unit backoff periods, CCA
//! (`cca_us`); busy → NB += 1, BE = min(BE + 1, macMaxBE), give up after macMaxCSMABackoffs;
//! idle → transmit after the turnaround. The receiver answers a correct unicast frame with a
//! MAC ACK one turnaround after its end (no CCA). No ACK within macAckWaitDuration → retry the
//! whole CSMA/CA procedure, up to macMaxFrameRetries times. With `mac.csma = contiki` over
//! ContikiMAC, Contiki's rules instead (one CCA, retries after T·(1 + U{0..2^c − 1}), T the
//! channel check interval) and strobed frames.

use super::medium::{survives, Rx};
use super::{below, DropCause, Ev, MacWhat, MeshNet, Ns, Tx, NONE16, US};

impl<P: Copy> MeshNet<P> {
    /// The sender's MAC after one of its transmissions ended (`received`: by the addressee).
    pub(crate) fn mac_tx_end(&mut self, tx: Tx<P>, received: bool) {
        // The AckTimeout event is only scheduled when no ACK will arrive (data lost, ACK
        // skipped or lost), at data end + macAckWaitDuration: one event fewer per good hop.
        if tx.ack {
            if received {
                self.ack_received(tx.dst, tx.seq);
            } else {
                let data_end = self.now - self.ack_air - self.turnaround;
                self.arm_ack_timeout(tx.dst, data_end);
            }
        } else if received {
            self.data_received(tx.dst, tx);
        } else {
            self.arm_ack_timeout(tx.sender, self.now);
        }
    }

    pub(crate) fn start_next(&mut self, node: u16) {
        let n = &mut self.nodes[node as usize];
        if n.queue.is_empty() {
            n.in_service = false;
            return;
        }
        n.in_service = true;
        n.dsn = n.dsn.wrapping_add(1);
        n.retries = 0;
        n.head_accepted = false;
        if self.contiki {
            // csma.c: at once after a success, one time base after a failure.
            n.nb = 0;
            let delay = if n.last_failed { self.contiki_timebase } else { 0 };
            self.schedule_cca(node, delay);
        } else {
            self.begin_csma(node);
        }
    }

    /// Contiki: CCA (then transmit) after `delay`.
    fn schedule_cca(&mut self, node: u16, delay: Ns) {
        let n = &mut self.nodes[node as usize];
        n.token = n.token.wrapping_add(1);
        let token = n.token;
        let dst = n.queue.front().map_or(NONE16, |p| p.next);
        let t = self.phase_snap(node, dst, self.now + delay + self.cca);
        self.schedule(t, Ev::CcaEnd { node, token });
    }

    /// Contiki's retransmission delay T + U[0, 2^exp·T), drawn in clock ticks (`random_rand()
    /// % (2^exp · T)` with T in ticks): multiples of T over `nullrdc` (T = one tick), any tick
    /// of the span with duty cycling (T = the check interval).
    fn contiki_rexmit_delay(&mut self, exp: u8) -> Ns {
        let tick = self.contiki_tick;
        let span_ticks = ((self.contiki_timebase << exp) / tick).max(1);
        self.contiki_timebase + tick * below(&mut self.rng_mac, span_ticks)
    }

    fn begin_csma(&mut self, node: u16) {
        let n = &mut self.nodes[node as usize];
        n.nb = 0;
        n.be = self.cfg.mac.min_be;
        self.backoff(node);
    }

    fn backoff(&mut self, node: u16) {
        let (be, attempts) = {
            let n = &self.nodes[node as usize];
            (n.be, n.retries as u64 + n.nb as u64)
        };
        let delay = if self.duty_cycled {
            let max = attempts.min(self.cfg.mac.rdc_max_backoff_intervals as u64);
            below(&mut self.rng_mac, max + 1) * self.wake_period
        } else {
            below(&mut self.rng_mac, 1u64 << be) * self.unit_backoff
        };
        let n = &mut self.nodes[node as usize];
        n.token = n.token.wrapping_add(1);
        let token = n.token;
        let dst = n.queue.front().map_or(NONE16, |p| p.next);
        let t = self.phase_snap(node, dst, self.now + delay + self.cca);
        self.schedule(t, Ev::CcaEnd { node, token });
    }

    /// ContikiMAC phase optimisation: move a CCA planned at `t` so that the transmission
    /// starts `phase_guard_us` before the addressee's next wake-up (if its phase is known).
    fn phase_snap(&self, node: u16, dst: u16, t: Ns) -> Ns {
        if self.duty_cycled && self.cfg.mac.phase_lock && dst != NONE16 {
            let nn = self.nodes.len();
            if self.phase_known[node as usize * nn + dst as usize] {
                let lead = self.turnaround + self.cfg.mac.phase_guard_us as Ns * US;
                return self.next_wake(dst as usize, t + lead) - lead;
            }
        }
        t
    }

    pub(crate) fn cca_end(&mut self, node: u16, token: u32) {
        if self.nodes[node as usize].token != token {
            return;
        }
        if self.channel_busy(node) {
            self.log(node, MacWhat::CcaBusy);
            self.csma_busy(node);
        } else {
            self.log(node, MacWhat::CccIdle);
            let t = self.now + self.turnaround;
            self.schedule(t, Ev::TxStart { node, token });
        }
    }

    fn csma_busy(&mut self, node: u16) {
        self.mac.cca_busy += 1;
        if self.contiki {
            let (max_tx, max_exp) = (self.cfg.mac.contiki_max_transmissions, self.cfg.mac.contiki_max_backoff_exponent);
            let n = &mut self.nodes[node as usize];
            n.nb += 1;
            if n.nb > max_exp {
                n.nb = 0;
                n.retries += 1;
            }
            if n.retries >= max_tx {
                self.give_up_head(node, DropCause::ChannelAccess);
            } else {
                let exp = n.nb;
                let delay = self.contiki_rexmit_delay(exp);
                self.schedule_cca(node, delay);
            }
            return;
        }
        let (min_be, max_be, max_nb) = (self.cfg.mac.min_be, self.cfg.mac.max_be, self.cfg.mac.max_csma_backoffs);
        let n = &mut self.nodes[node as usize];
        n.nb += 1;
        n.be = (n.be + 1).min(max_be).max(min_be);
        if n.nb > max_nb {
            self.give_up_head(node, DropCause::ChannelAccess);
        } else {
            self.backoff(node);
        }
    }

    fn give_up_head(&mut self, node: u16, cause: DropCause) {
        let n = &mut self.nodes[node as usize];
        let pkt = n.queue.pop_front().expect("a frame in service");
        n.token = n.token.wrapping_add(1);
        n.awaiting_ack = false;
        n.last_failed = true;
        if n.head_accepted {
            // The next hop has it: the MAC believes it lost, the network did not.
            self.mac.false_drops += 1;
        } else {
            self.drop_packet(node, pkt, cause);
        }
        self.start_next(node);
    }

    pub(crate) fn tx_start(&mut self, node: u16, token: u32) {
        if self.nodes[node as usize].token != token {
            return;
        }
        if self.nodes[node as usize].tx.is_some() {
            // Busy sending a MAC ACK: as a busy channel.
            self.log(node, MacWhat::CcaBusy);
            self.csma_busy(node);
            return;
        }
        let n = &mut self.nodes[node as usize];
        let pkt = *n.queue.front().expect("a frame in service");
        n.awaiting_ack = true;
        let (seq, retry) = (n.dsn, n.retries);
        let mut air = self.cfg.airtime_us(pkt.psdu) as Ns * US;
        if self.duty_cycled {
            // Copies every air + gap from now; the addressee takes the first whole copy that
            // starts at or after its wake-up.
            let wake = self.next_wake(pkt.next as usize, self.now);
            let stride = air + self.cfg.mac.strobe_gap_us as Ns * US;
            let copies_before = (wake - self.now).div_ceil(stride);
            let last_start = self.now + copies_before * stride;
            air += copies_before * stride;
            self.pending_strobe = Some(last_start);
        }
        self.mac.data_tx += 1;
        self.log(node, MacWhat::TxData { to: pkt.next, retry });
        self.start_transmission(
            Tx { sender: node, dst: pkt.next, ack: false, seq, pkt: Some(pkt), start: 0, dst_faded: false },
            air,
        );
    }

    pub(crate) fn ack_start(&mut self, node: u16, to: u16, seq: u8) {
        if self.nodes[node as usize].tx.is_some() {
            self.mac.acks_skipped += 1;
            let data_end = self.now - self.turnaround;
            self.arm_ack_timeout(to, data_end);
            return;
        }
        self.mac.ack_tx += 1;
        self.log(node, MacWhat::TxAck { to });
        let air = self.ack_air;
        self.start_transmission(
            Tx { sender: node, dst: to, ack: true, seq, pkt: None, start: 0, dst_faded: false },
            air,
        );
    }

    /// Duty cycling: the addressee of a strobed frame wakes and locks onto its last copy.
    pub(crate) fn strobe_rx(&mut self, id: u32) {
        let tx = self.txs[id as usize];
        let (s, r) = (tx.sender as usize, tx.dst as usize);
        if self.nodes[r].tx.is_some() || self.nodes[r].rx.is_some() || self.medium.prr(s, r) <= 0.0 {
            return;
        }
        let mut interference = 0.0;
        for &a in &self.active {
            if a != id {
                interference += self.medium.power(self.txs[a as usize].sender as usize, r);
            }
        }
        let signal = self.medium.power(s, r);
        let corrupted = !survives(signal, interference, self.capture_ratio);
        self.nodes[r].rx = Some(Rx { tx: id, signal, interference, corrupted });
    }

    /// First wake-up of `node` at or after `t` (duty cycling).
    pub(crate) fn next_wake(&self, node: usize, t: Ns) -> Ns {
        let phase = self.wake_phase[node];
        if t <= phase {
            return phase;
        }
        phase + (t - phase).div_ceil(self.wake_period) * self.wake_period
    }

    pub(crate) fn arm_ack_timeout(&mut self, node: u16, data_end: Ns) {
        let token = self.nodes[node as usize].token;
        self.schedule(data_end + self.ack_wait, Ev::AckTimeout { node, token });
    }

    fn data_received(&mut self, r: u16, tx: Tx<P>) {
        let t = self.now + self.turnaround;
        self.schedule(t, Ev::AckStart { node: r, to: tx.sender, seq: tx.seq });
        let n = self.nodes.len();
        let slot = r as usize * n + tx.sender as usize;
        let pkt = tx.pkt.expect("a data frame carries a packet");
        if self.last_seq[slot] == tx.seq as u16 {
            if self.cfg.mac.duplicate_detection {
                self.mac.duplicates_suppressed += 1;
                self.log(r, MacWhat::RxData { from: tx.sender, duplicate: true });
                return;
            }
            self.mac.duplicates_forwarded += 1;
        }
        self.last_seq[slot] = tx.seq as u16;
        self.nodes[tx.sender as usize].head_accepted = true;
        self.log(r, MacWhat::RxData { from: tx.sender, duplicate: false });
        if self.forward_delay > 0 {
            self.pending_arrivals += 1;
            let t = self.now + self.forward_delay;
            let slot = self.park(pkt);
            self.schedule(t, Ev::Arrive { node: r, slot });
        } else {
            self.arrive(r, pkt);
        }
    }

    fn ack_received(&mut self, node: u16, seq: u8) {
        let n = &mut self.nodes[node as usize];
        if !n.awaiting_ack || n.dsn != seq {
            return;
        }
        n.awaiting_ack = false;
        n.last_failed = false;
        let head = n.queue.pop_front();
        n.token = n.token.wrapping_add(1);
        if let (true, Some(p)) = (self.duty_cycled, head) {
            let nn = self.nodes.len();
            self.phase_known[node as usize * nn + p.next as usize] = true;
        }
        self.mac.acked += 1;
        self.log(node, MacWhat::AckReceived);
        self.start_next(node);
    }

    pub(crate) fn ack_timeout(&mut self, node: u16, token: u32) {
        let max_retries = self.cfg.mac.max_frame_retries;
        let n = &mut self.nodes[node as usize];
        if n.token != token || !n.awaiting_ack {
            return;
        }
        n.awaiting_ack = false;
        self.log(node, MacWhat::AckTimeout);
        let n = &mut self.nodes[node as usize];
        if self.contiki {
            n.retries += 1;
            n.nb = 0;
            if n.retries >= self.cfg.mac.contiki_max_transmissions {
                self.give_up_head(node, DropCause::NoAck);
            } else {
                let delay = self.contiki_rexmit_delay(0);
                self.schedule_cca(node, delay);
            }
            return;
        }
        if n.retries >= max_retries {
            self.give_up_head(node, DropCause::NoAck);
        } else {
            n.retries += 1;
            self.begin_csma(node);
        }
    }
}
