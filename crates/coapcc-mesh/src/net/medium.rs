//! The shared channel: transmissions, who receives them, and what clear channel assessment
//! senses. Two rule sets:
//!
//! - **Reception curve** (`radio.mrm = null`): every node within interference range of the
//!   sender that is not itself transmitting either *locks* onto the frame (if idle and the
//!   link PRR is positive) or counts it as *interference* on the frame it is receiving. A
//!   locked frame survives while its power exceeds the sum of the concurrent interferers'
//!   powers by `radio.capture_db` (no capture: any overlap destroys it); at its end it is
//!   received with the link's PRR. CCA senses every sender within `cca_range_m`.
//! - **Cooja's MRM** (`radio.mrm`), after `MRM.createConnections` and
//!   `updateSignalStrengths` (Contiki 2.7–3.0) with MSPSim's byte-level CC2420 behind it
//!   (`Msp802154Radio`, `CC2420.receivedByte`). When a transmission X starts, each radio R
//!   draws once against the link's reception probability ([`crate::mrm::MrmConfig::prr`]):
//!   - draw failed: with the capture effect X does nothing at R; without it X interferes at
//!     R if its power exceeds the background noise;
//!   - R transmitting: X registers at R as interference (R senses it) and is lost there;
//!   - R disturbed (its current reception already corrupted): X joins the disturbance;
//!   - R receiving frame A: with the capture effect X is ignored at R if it is more than
//!     `capture_threshold_db` weaker than what R senses; otherwise MRM hands R to X and A is
//!     lost at R; the CC2420 then receives X only if A had not yet been synchronised
//!     (`capture_preamble_us`), or A was addressed to another node and already rejected by
//!     address recognition (`capture_mode = bytes`); otherwise R consumes X as A's bytes and
//!     is disturbed until X ends. Without the capture effect both are lost and R is
//!     disturbed until both end;
//!   - R idle: R receives X.
//!
//!   A radio that starts transmitting loses the frame it was receiving and stays disturbed
//!   until that frame ends. A frame is received at its end if its radio is still receiving
//!   it. CCA is busy while the strongest signal registered at the radio (frames it receives
//!   or is disturbed by) reaches `cca_threshold_dbm`, or one did within the CCA window.
//!
//! Simplification: MRM clears a radio's "interfered" flag when the first of the frames
//! involved ends; here the radio stays disturbed until all of them have ended.

use coapcc_cc::rng::unit_f64;

use super::{MacWhat, MeshNet, Ns, Tx, BCAST, US};
use crate::mrm::{CaptureMode, MrmConfig};

/// Reception state at a node (reception-curve model).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Rx {
    pub(crate) tx: u32,
    pub(crate) signal: f64,
    pub(crate) interference: f64,
    pub(crate) corrupted: bool,
}

/// MRM rules, precomputed from [`MrmConfig`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct MrmRules {
    capture: bool,
    capture_db: f32,
    preamble: Ns,
    mode: CaptureMode,
    noise_dbm: f32,
    cca_dbm: f32,
}

impl MrmRules {
    pub(crate) fn new(c: &MrmConfig) -> Self {
        MrmRules {
            capture: c.capture_effect,
            capture_db: c.capture_threshold_db as f32,
            preamble: (c.capture_preamble_us * 1e3).round() as Ns,
            mode: c.capture_mode,
            noise_dbm: c.bg_noise_mean_dbm as f32,
            cca_dbm: c.cca_threshold_dbm as f32,
        }
    }
}

/// Bytes from a frame's start until the CC2420 has checked a 64-bit destination address:
/// preamble 4 + SFD 1, then `rxread` 0 (length) to 13 (`CC2420.receivedByte`: long address
/// checked at `rxread == 8 + 5`).
const ADDRESS_CHECK_BYTES: u64 = 5 + 14;

/// A radio's state under MRM.
#[derive(Clone, Debug, Default)]
pub(crate) struct MrmRadio {
    /// The frame being received: (transmission, signal dBm, start, when address recognition
    /// rejects it if it is addressed elsewhere, else `Ns::MAX`).
    recv: Option<(u32, f32, Ns, Ns)>,
    /// Transmissions keeping the radio disturbed (it receives nothing until they end).
    disturb: Vec<u32>,
    /// Transmissions registered at the radio, with their signal (what it senses).
    heard: Vec<(u32, f32)>,
    /// End of the last registered frame at or above the CCA threshold.
    sensed_end: Ns,
}

impl MrmRadio {
    fn sensed(&self) -> f32 {
        self.heard.iter().fold(f32::NEG_INFINITY, |m, &(_, s)| m.max(s))
    }

    fn unregister(&mut self, id: u32) {
        if let Some(i) = self.heard.iter().position(|&(t, _)| t == id) {
            self.heard.swap_remove(i);
        }
    }

    fn register(&mut self, id: u32, s: f32) {
        if !self.heard.iter().any(|&(t, _)| t == id) {
            self.heard.push((id, s));
        }
    }
}

impl<P: Copy> MeshNet<P> {
    /// Whether `node`'s CCA finds the channel busy now.
    pub(crate) fn channel_busy(&self, node: u16) -> bool {
        let n = &self.nodes[node as usize];
        if n.tx.is_some() {
            return true;
        }
        match &self.mrm {
            Some(rules) => {
                let r = &n.mrm;
                r.sensed() >= rules.cca_dbm || r.sensed_end + self.cca > self.now
            }
            None => n.cca_count > 0 || n.cca_last_end + self.cca > self.now,
        }
    }

    /// Whether `node`'s radio is in the middle of receiving a frame (its SFD is up).
    pub(crate) fn receiving(&self, node: u16) -> bool {
        let n = &self.nodes[node as usize];
        match &self.mrm {
            Some(_) => n.mrm.recv.is_some_and(|(_, _, _, reject)| self.now < reject),
            None => n.rx.is_some(),
        }
    }

    /// Put `tx` on the air for `air` ns; returns its id.
    pub(crate) fn start_transmission(&mut self, mut tx: Tx<P>, air: Ns) -> u32 {
        tx.start = self.now;
        let id = match self.free_tx.pop() {
            Some(id) => {
                self.txs[id as usize] = tx;
                id
            }
            None => {
                self.txs.push(tx);
                (self.txs.len() - 1) as u32
            }
        };
        let s = tx.sender as usize;
        self.nodes[s].tx = Some(id);
        match self.mrm {
            Some(rules) => self.mrm_start(id, rules),
            None => self.curve_start(id),
        }
        self.active.push(id);
        let t = self.now + air;
        self.schedule(t, super::Ev::TxEnd { tx: id });
        if let Some(at) = self.pending_strobe.take() {
            self.schedule(at, super::Ev::StrobeRx { tx: id });
        }
        id
    }

    fn curve_start(&mut self, id: u32) {
        let tx = self.txs[id as usize];
        let s = tx.sender as usize;
        // Half duplex: a frame being received is lost.
        self.nodes[s].rx = None;
        let capture = self.capture_ratio;
        for i in 0..self.medium.hearers[s].len() {
            let h = self.medium.hearers[s][i];
            let r = h.node as usize;
            if self.nodes[r].tx.is_some() {
                continue;
            }
            match self.nodes[r].rx.as_mut() {
                Some(rx) => {
                    rx.interference += h.power;
                    rx.corrupted |= !survives(rx.signal, rx.interference, capture);
                }
                None if h.prr > 0.0 && (!self.duty_cycled || (tx.ack && r == tx.dst as usize)) => {
                    let mut interference = 0.0;
                    for &a in &self.active {
                        interference += self.medium.power(self.txs[a as usize].sender as usize, r);
                    }
                    self.nodes[r].rx = Some(Rx {
                        tx: id,
                        signal: h.power,
                        interference,
                        corrupted: !survives(h.power, interference, capture),
                    });
                }
                None => {}
            }
        }
        for i in 0..self.cca_hearers[s].len() {
            let l = self.cca_hearers[s][i] as usize;
            self.nodes[l].cca_count += 1;
        }
    }

    fn mrm_start(&mut self, id: u32, rules: MrmRules) {
        let tx = self.txs[id as usize];
        let s = tx.sender as usize;
        let now = self.now;
        // Half duplex: a frame being received is lost, and the radio stays disturbed until it
        // ends (MRM: TRANSMISSION_STARTED while receiving → interfereAnyReception).
        let me = &mut self.nodes[s].mrm;
        if let Some((a, _, _, reject)) = me.recv.take() {
            if now < reject {
                me.disturb.push(a);
            }
        }
        let unicast_to = if tx.dst == BCAST || tx.ack { None } else { Some(tx.dst as usize) };
        for i in 0..self.medium.hearers[s].len() {
            let h = self.medium.hearers[s][i];
            let r = h.node as usize;
            let sig = h.dbm as f32;
            let drawn = h.prr >= 1.0 || (h.prr > 0.0 && unit_f64(&mut self.rng_radio) < h.prr);
            if !drawn {
                if r == tx.dst as usize {
                    self.txs[id as usize].dst_faded = true;
                }
                if !rules.capture && sig > rules.noise_dbm {
                    self.mrm_disturb(r, id, sig);
                }
                continue;
            }
            if self.nodes[r].tx.is_some() {
                self.nodes[r].mrm.register(id, sig);
                continue;
            }
            if !self.nodes[r].mrm.disturb.is_empty() {
                let m = &mut self.nodes[r].mrm;
                m.disturb.push(id);
                m.register(id, sig);
                continue;
            }
            // Address recognition: a unicast frame for another node is dropped by the CC2420
            // after its destination address; until then the radio is busy with it.
            let reject = match unicast_to {
                Some(d) if d != r => now + ADDRESS_CHECK_BYTES * 8 * 1_000_000_000 / self.cfg.radio.bitrate_bps as u64,
                _ => Ns::MAX,
            };
            match self.nodes[r].mrm.recv {
                None => {
                    let m = &mut self.nodes[r].mrm;
                    m.recv = Some((id, sig, now, reject));
                    m.register(id, sig);
                }
                Some((a, _, a_start, a_reject)) => {
                    if !rules.capture {
                        // Both lost; disturbed until both end.
                        let m = &mut self.nodes[r].mrm;
                        m.recv = None;
                        m.disturb.push(a);
                        m.disturb.push(id);
                        m.register(id, sig);
                        continue;
                    }
                    let current = self.nodes[r].mrm.sensed();
                    if sig < current - rules.capture_db {
                        // Too weak: ignored at R (not even sensed).
                        continue;
                    }
                    // MRM hands R over to X; A is lost at R and no longer registered there.
                    let m = &mut self.nodes[r].mrm;
                    m.unregister(a);
                    m.register(id, sig);
                    let synced = now >= a_start + rules.preamble && now < a_reject;
                    if rules.mode == CaptureMode::Connection || !synced {
                        m.recv = Some((id, sig, now, reject));
                    } else {
                        // The CC2420 consumes X's bytes as A's: both lost.
                        m.recv = None;
                        m.disturb.push(id);
                    }
                }
            }
        }
    }

    /// Without the capture effect, a frame that failed its draw disturbs `r` anyway.
    fn mrm_disturb(&mut self, r: usize, id: u32, sig: f32) {
        if self.nodes[r].tx.is_some() {
            self.nodes[r].mrm.register(id, sig);
            return;
        }
        let now = self.now;
        let m = &mut self.nodes[r].mrm;
        if let Some((a, _, _, reject)) = m.recv.take() {
            if now < reject {
                m.disturb.push(a);
            }
        }
        m.disturb.push(id);
        m.register(id, sig);
    }

    /// Transmission `id` ended: who received it. Returns the nodes that received it cleanly
    /// (the addressee for a unicast frame; every node for a broadcast) into `out`.
    fn end_receptions(&mut self, id: u32, out: &mut Vec<u16>) -> bool {
        let tx = self.txs[id as usize];
        let s = tx.sender as usize;
        let mut locked_at_dst = false;
        match self.mrm {
            Some(rules) => {
                for i in 0..self.medium.hearers[s].len() {
                    let h = self.medium.hearers[s][i];
                    let r = h.node as usize;
                    let now = self.now;
                    let m = &mut self.nodes[r].mrm;
                    if let Some(j) = m.heard.iter().position(|&(t, _)| t == id) {
                        if m.heard[j].1 >= rules.cca_dbm {
                            m.sensed_end = now;
                        }
                        m.heard.swap_remove(j);
                    }
                    if let Some(j) = m.disturb.iter().position(|&t| t == id) {
                        m.disturb.swap_remove(j);
                    }
                    if m.recv.is_some_and(|(t, ..)| t == id) {
                        m.recv = None;
                        if r == tx.dst as usize {
                            locked_at_dst = true;
                            out.push(r as u16);
                        } else if tx.dst == BCAST {
                            out.push(r as u16);
                        }
                    }
                }
            }
            None => {
                for i in 0..self.medium.hearers[s].len() {
                    let h = self.medium.hearers[s][i];
                    let r = h.node as usize;
                    let Some(rx) = self.nodes[r].rx.as_mut() else { continue };
                    if rx.tx != id {
                        rx.interference = (rx.interference - h.power).max(0.0);
                        continue;
                    }
                    let corrupted = rx.corrupted;
                    self.nodes[r].rx = None;
                    let wanted = r == tx.dst as usize || tx.dst == BCAST;
                    if !wanted {
                        continue;
                    }
                    if r == tx.dst as usize {
                        locked_at_dst = true;
                    }
                    if corrupted {
                        if !tx.ack && tx.dst != BCAST {
                            self.mac.collisions += 1;
                            self.log(r as u16, MacWhat::RxLost { from: tx.sender, collision: true });
                        }
                    } else if h.prr >= 1.0 || unit_f64(&mut self.rng_radio) < h.prr {
                        out.push(r as u16);
                    } else if !tx.ack && tx.dst != BCAST {
                        self.txs[id as usize].dst_faded = true;
                        self.mac.fading += 1;
                        self.log(r as u16, MacWhat::RxLost { from: tx.sender, collision: false });
                    }
                }
                for i in 0..self.cca_hearers[s].len() {
                    let l = self.cca_hearers[s][i] as usize;
                    self.nodes[l].cca_count -= 1;
                    self.nodes[l].cca_last_end = self.now;
                }
            }
        }
        locked_at_dst
    }

    /// A transmission ended: receptions, then the MAC of sender and receivers.
    pub(crate) fn tx_end(&mut self, id: u32) {
        let s = self.txs[id as usize].sender as usize;
        self.active.retain(|&a| a != id);
        self.nodes[s].tx = None;
        let mut got = std::mem::take(&mut self.rx_scratch);
        got.clear();
        let locked_at_dst = self.end_receptions(id, &mut got);
        let tx = self.txs[id as usize];
        self.free_tx.push(id);
        let received = tx.dst != BCAST && got.first() == Some(&tx.dst);
        if !received && !tx.ack && tx.dst != BCAST {
            if self.mrm.is_some() {
                let fading = tx.dst_faded;
                if fading {
                    self.mac.fading += 1;
                } else {
                    self.mac.collisions += 1;
                }
                self.log(tx.dst, MacWhat::RxLost { from: tx.sender, collision: !fading });
            } else if !locked_at_dst && self.medium.prr(s, tx.dst as usize) > 0.0 {
                // The addressee was busy with another frame or transmitting.
                self.mac.collisions += 1;
                self.log(tx.dst, MacWhat::RxLost { from: tx.sender, collision: true });
            }
        }
        if self.nullrdc.is_some() {
            self.ck_tx_end(tx, &got, received);
        } else {
            self.mac_tx_end(tx, received);
        }
        self.rx_scratch = got;
    }

    /// Airtime of a frame of `psdu` bytes, ns.
    pub(crate) fn airtime(&self, psdu: u32) -> Ns {
        self.cfg.airtime_us(psdu) as Ns * US
    }
}

/// Does a frame of power `signal` survive `interference` (linear powers)? `capture` is the
/// capture threshold as a linear power ratio (`None`: no capture, any interference destroys).
pub(crate) fn survives(signal: f64, interference: f64, capture: Option<f64>) -> bool {
    if interference <= 0.0 {
        return true;
    }
    match capture {
        None => false,
        Some(ratio) => signal >= ratio * interference,
    }
}
