//! The forwarder: one thread per direction moves whole IP packets from one TUN device to the
//! other through a [`coapcc_link::Link`], the simulator's own link object, driven by
//! the monotonic clock.
//!
//! Loop of a direction thread:
//!
//! ```text
//! loop:
//!     now = monotonic clock − epoch
//!     write every packet with delivery time <= now to the egress TUN  (link.poll(now))
//!     ppoll(ingress TUN, stop eventfd; timeout = link.next_wakeup() − now)   // ns resolution
//!     for each packet read from the ingress TUN: link.push(now, IP length, packet)
//! ```
//!
//! The link decides each packet's fate when it is pushed (delivered at a time, tail-dropped,
//! or lost to a link error), exactly as in the simulator; the thread only has to wake up on
//! time. Wake-up precision: the thread sets 1 ns timer slack (Linux's default is 50 µs),
//! runs with SCHED_FIFO when permitted, sleeps until `spin` (default 100 µs) before a delivery
//! and busy-polls the rest; each delivery's lateness (write time − model delivery time) is
//! recorded and summarised in the report.
//!
//! IPv6 neighbour discovery and MLD (ICMPv6 types 130–137, 143) are forwarded at once,
//! outside the model, and counted as `control_packets`: the TUN link is point-to-point
//! (no ARP, no link-layer addresses), so these are rare, but they must never be delayed,
//! lost or counted as offered load.

use std::collections::HashMap;
use std::net::IpAddr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Result;
use coapcc_link::{Link, LinkCounters, Nanos, Outcome};
use serde::Serialize;

use crate::sys;

/// Largest number of lateness samples kept per direction (the summary covers the first
/// this-many deliveries).
pub const MAX_LATENESS_SAMPLES: usize = 1 << 21;
/// Largest number of per-packet trace records kept per direction.
pub const MAX_TRACE: usize = 1 << 20;
/// Largest number of flows tracked per direction.
pub const MAX_FLOWS: usize = 65_536;

/// A transport flow as seen in one direction: protocol and (address, port) of both ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FlowKey {
    /// IP protocol number (6 TCP, 17 UDP, 1/58 ICMP, ...).
    pub proto: u8,
    /// Source address and port (port 0 for protocols without ports).
    pub src: (IpAddr, u16),
    /// Destination address and port.
    pub dst: (IpAddr, u16),
}

impl FlowKey {
    /// The same flow seen from the other direction.
    pub fn reversed(self) -> FlowKey {
        FlowKey { proto: self.proto, src: self.dst, dst: self.src }
    }
}

/// What a packet is, as far as the forwarder cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// Ordinary traffic: crosses the link model.
    Data(Option<FlowKey>),
    /// IPv6 neighbour discovery / MLD: forwarded at once, outside the model.
    Control,
}

/// Classify an IP packet and extract its flow key.
pub fn classify(p: &[u8]) -> Class {
    let Some(&b0) = p.first() else { return Class::Data(None) };
    let (proto, src, dst, off) = match b0 >> 4 {
        4 if p.len() >= 20 => {
            let ihl = ((b0 & 0x0f) as usize) * 4;
            let src = IpAddr::from([p[12], p[13], p[14], p[15]]);
            let dst = IpAddr::from([p[16], p[17], p[18], p[19]]);
            // A non-first fragment carries no transport header.
            let frag_off = u16::from_be_bytes([p[6], p[7]]) & 0x1fff;
            let off = if frag_off != 0 { usize::MAX } else { ihl };
            (p[9], src, dst, off)
        }
        6 if p.len() >= 40 => {
            let mut a = [0u8; 16];
            a.copy_from_slice(&p[8..24]);
            let src = IpAddr::from(a);
            a.copy_from_slice(&p[24..40]);
            let dst = IpAddr::from(a);
            let mut nh = p[6];
            let mut off = 40;
            // Skip hop-by-hop, routing and destination-options headers (MLD uses hop-by-hop).
            while matches!(nh, 0 | 43 | 60) && p.len() >= off + 8 {
                let len = (p[off + 1] as usize + 1) * 8;
                nh = p[off];
                off += len;
            }
            (nh, src, dst, off)
        }
        _ => return Class::Data(None),
    };
    if proto == 58 && p.len() > off {
        if let 130..=137 | 143 = p[off] {
            return Class::Control;
        }
    }
    let ports = if matches!(proto, 6 | 17) && off != usize::MAX && p.len() >= off + 4 {
        (u16::from_be_bytes([p[off], p[off + 1]]), u16::from_be_bytes([p[off + 2], p[off + 3]]))
    } else {
        (0, 0)
    };
    Class::Data(Some(FlowKey { proto, src: (src, ports.0), dst: (dst, ports.1) }))
}

/// Per-flow record of one direction.
#[derive(Clone, Copy, Debug, Default)]
pub struct FlowDir {
    /// Packets offered to the link.
    pub packets: u64,
    /// Bytes offered.
    pub bytes: u64,
    /// Packets delivered (written to the far side).
    pub delivered: u64,
    /// Packets dropped (buffer or link error).
    pub dropped: u64,
    /// Time the first packet entered the link, ns since the epoch.
    pub first_in: Option<Nanos>,
    /// Time the last packet entered the link.
    pub last_in: Option<Nanos>,
    /// Time the last delivered packet was written to the far side.
    pub last_out: Option<Nanos>,
}

/// Lateness summary: write time − model delivery time, microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Lateness {
    /// Deliveries measured.
    pub count: u64,
    /// Mean, µs.
    pub mean_us: f64,
    /// Median, µs.
    pub median_us: f64,
    /// 90th percentile, µs.
    pub p90_us: f64,
    /// 99th percentile, µs.
    pub p99_us: f64,
    /// Maximum, µs.
    pub max_us: f64,
}

/// Percentile by linear interpolation between closest ranks (spec AMBIG-T10) of sorted data.
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

impl Lateness {
    /// Summarise samples in ns.
    pub fn of(samples_ns: &[u64]) -> Lateness {
        if samples_ns.is_empty() {
            return Lateness::default();
        }
        let mut v: Vec<f64> = samples_ns.iter().map(|&n| n as f64 / 1000.0).collect();
        v.sort_by(|a, b| a.total_cmp(b));
        Lateness {
            count: v.len() as u64,
            mean_us: v.iter().sum::<f64>() / v.len() as f64,
            median_us: percentile(&v, 0.5),
            p90_us: percentile(&v, 0.9),
            p99_us: percentile(&v, 0.99),
            max_us: *v.last().expect("non-empty"),
        }
    }
}

/// One packet's passage (with tracing on). Times are ns since the epoch.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct TraceRecord {
    /// IP size, bytes.
    pub size: u32,
    /// When the packet was read from the ingress device and pushed into the link.
    pub t_in: Nanos,
    /// Fate decided by the model.
    pub outcome: Outcome,
    /// Model time of delivery (or of the drop).
    pub at: Nanos,
    /// When it was written to the egress device (delivered packets only).
    pub t_out: Option<Nanos>,
}

/// Live state of a direction, shared with the controlling thread.
#[derive(Debug, Default)]
pub struct DirState {
    /// The link's counters (fates are counted when a packet is pushed).
    pub counters: LinkCounters,
    /// Bytes admitted by the first rate stage (serialised, including later error losses).
    pub serialised_bytes: u64,
    /// Serialisation time of the first rate stage, ns.
    pub busy_ns: u64,
    /// Largest buffer occupancy of the first rate stage, bytes.
    pub max_queue_bytes: u64,
    /// Packets larger than the MTU, refused.
    pub oversized_packets: u64,
    /// IPv6 ND/MLD packets forwarded outside the model.
    pub control_packets: u64,
    /// Failed writes to the egress device.
    pub write_errors: u64,
    /// Packets held by the link (in flight).
    pub in_flight: u64,
    /// Lateness samples, ns.
    pub lateness_ns: Vec<u64>,
    /// Per-flow records.
    pub flows: HashMap<FlowKey, FlowDir>,
    /// Per-packet records (only when tracing; at most [`MAX_TRACE`]).
    pub trace: Vec<TraceRecord>,
    /// Whether SCHED_FIFO was granted to the thread.
    pub realtime: bool,
    /// The error that stopped the thread, if any.
    pub error: Option<String>,
}

/// A packet held by the link.
pub struct Held {
    data: Vec<u8>,
    key: Option<FlowKey>,
    /// Index of the packet's trace record, if traced.
    rec: Option<usize>,
}

/// The descriptors a direction thread uses.
pub struct Fds {
    /// TUN device packets are read from.
    pub ingress: Arc<OwnedFd>,
    /// TUN device packets are written to.
    pub egress: Arc<OwnedFd>,
    /// Eventfd that stops the thread when signalled.
    pub stop: Arc<OwnedFd>,
}

/// Options of a direction thread.
#[derive(Clone, Copy, Debug)]
pub struct DirOptions {
    /// Time 0 of the link model.
    pub epoch: Instant,
    /// Ask for SCHED_FIFO.
    pub realtime: bool,
    /// Busy-wait this long before each delivery, ns.
    pub spin_ns: u64,
    /// Keep per-packet records.
    pub trace: bool,
}

/// A delivered packet: flow, write time, write succeeded, lateness, trace record.
type Delivery = (Option<FlowKey>, Nanos, bool, Nanos, Option<usize>);

/// A running direction.
pub struct Direction {
    /// Shared live state.
    pub state: Arc<Mutex<DirState>>,
    thread: Option<JoinHandle<()>>,
}

impl Direction {
    /// Start forwarding `fds.ingress` → `fds.egress` through `link` until `fds.stop` (an
    /// eventfd) becomes readable.
    pub fn spawn(name: &str, link: Link<Held>, fds: Fds, opts: DirOptions) -> Result<Direction> {
        let state = Arc::new(Mutex::new(DirState::default()));
        let st = state.clone();
        let thread = std::thread::Builder::new().name(name.to_string()).spawn(move || {
            let rt = sys::tune_thread(opts.realtime);
            st.lock().expect("state").realtime = rt;
            if let Err(e) = run(link, &fds, opts, &st) {
                st.lock().expect("state").error = Some(format!("{e:#}"));
            }
        })?;
        Ok(Direction { state, thread: Some(thread) })
    }

    /// Wait for the thread to end (after the stop eventfd was signalled).
    pub fn join(&mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn ns_since(epoch: Instant) -> Nanos {
    epoch.elapsed().as_nanos() as Nanos
}

fn run(mut link: Link<Held>, fds: &Fds, opts: DirOptions, st: &Mutex<DirState>) -> Result<()> {
    let (inf, outf, stopf) = (fds.ingress.as_raw_fd(), fds.egress.as_raw_fd(), fds.stop.as_raw_fd());
    let DirOptions { epoch, spin_ns, trace, .. } = opts;
    let mut buf = vec![0u8; 65_536];
    let mut delivered: Vec<Delivery> = Vec::with_capacity(64);
    loop {
        // 1. Deliver everything due; lateness = write time − model delivery time.
        delivered.clear();
        let mut now = ns_since(epoch);
        while let Some((at, _)) = link.peek() {
            if at > now {
                now = ns_since(epoch);
                if at > now {
                    break;
                }
            }
            let p = link.poll(at).expect("peeked");
            let t = ns_since(epoch);
            let ok = sys::write_packet(outf, &p.data).is_ok();
            delivered.push((p.key, t, ok, t - at, p.rec));
        }
        if !delivered.is_empty() {
            let mut s = st.lock().expect("state");
            for &(key, t, ok, late, rec) in &delivered {
                if let Some(r) = rec.and_then(|i| s.trace.get_mut(i)) {
                    r.t_out = Some(t);
                }
                if !ok {
                    s.write_errors += 1;
                }
                if let Some(f) = key.and_then(|k| s.flows.get_mut(&k)) {
                    f.delivered += 1;
                    f.last_out = Some(t);
                }
                if s.lateness_ns.len() < MAX_LATENESS_SAMPLES {
                    s.lateness_ns.push(late);
                }
            }
            s.in_flight = link.in_flight() as u64;
        }
        // 2. Sleep until the next delivery, an arrival or the stop signal.
        // Sleep until `spin_ns` before the delivery, then poll without blocking: the last
        // stretch is busy-waited so the wake-up latency of the timer does not add lateness.
        let timeout = link.next_wakeup().map(|w| Duration::from_nanos(w.saturating_sub(ns_since(epoch) + spin_ns)));
        let ready = sys::ppoll_readable(&[inf, stopf], timeout)?;
        if ready[1] {
            st.lock().expect("state").in_flight = link.in_flight() as u64;
            return Ok(());
        }
        if !ready[0] {
            continue;
        }
        // 3. Read every pending packet and push it into the link.
        let mut s = st.lock().expect("state");
        while let Some(n) = sys::read_nb(inf, &mut buf)? {
            if n == 0 {
                break;
            }
            let now = ns_since(epoch);
            let data = buf[..n].to_vec();
            let class = classify(&data);
            let key = match class {
                Class::Control => {
                    s.control_packets += 1;
                    if sys::write_packet(outf, &data).is_err() {
                        s.write_errors += 1;
                    }
                    continue;
                }
                Class::Data(k) => k,
            };
            let rec = (trace && s.trace.len() < MAX_TRACE).then_some(s.trace.len());
            let tr = link.push(now, n as u32, Held { data, key, rec });
            if tr.outcome == Outcome::Oversized {
                s.oversized_packets += 1;
                continue;
            }
            if rec.is_some() {
                s.trace.push(TraceRecord { size: n as u32, t_in: now, outcome: tr.outcome, at: tr.at, t_out: None });
            }
            if let Some(k) = key {
                let full = s.flows.len() >= MAX_FLOWS;
                let f = match s.flows.get_mut(&k) {
                    Some(f) => Some(f),
                    None if !full => Some(s.flows.entry(k).or_default()),
                    None => None,
                };
                if let Some(f) = f {
                    f.packets += 1;
                    f.bytes += n as u64;
                    f.first_in.get_or_insert(now);
                    f.last_in = Some(now);
                    if tr.outcome != Outcome::Delivered {
                        f.dropped += 1;
                    }
                }
            }
        }
        let path = link.path();
        s.counters = path.counters();
        if let Some(r) = path.rate_stage() {
            let rs = r.stats();
            s.serialised_bytes = rs.admitted_bytes;
            s.max_queue_bytes = rs.max_queue_bytes;
            s.busy_ns = r.busy_ns();
        }
        s.in_flight = link.in_flight() as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn udp4(src_port: u16, dst_port: u16) -> Vec<u8> {
        let mut p = vec![0u8; 28];
        p[0] = 0x45;
        p[9] = 17;
        p[12..16].copy_from_slice(&[198, 18, 0, 1]);
        p[16..20].copy_from_slice(&[198, 18, 0, 2]);
        p[20..22].copy_from_slice(&src_port.to_be_bytes());
        p[22..24].copy_from_slice(&dst_port.to_be_bytes());
        p
    }

    #[test]
    fn classifies_udp4_and_ndp() {
        let c = classify(&udp4(40000, 5683));
        let Class::Data(Some(k)) = c else { panic!("{c:?}") };
        assert_eq!(k.proto, 17);
        assert_eq!(k.src.1, 40000);
        assert_eq!(k.dst.1, 5683);
        assert_eq!(k.reversed().src.1, 5683);
        // IPv6 neighbour solicitation.
        let mut p = vec![0u8; 64];
        p[0] = 0x60;
        p[6] = 58;
        p[40] = 135;
        assert_eq!(classify(&p), Class::Control);
        // MLDv2 report behind a hop-by-hop header.
        let mut p = vec![0u8; 64];
        p[0] = 0x60;
        p[6] = 0;
        p[40] = 58;
        p[41] = 0;
        p[48] = 143;
        assert_eq!(classify(&p), Class::Control);
        // ICMPv6 echo is data.
        let mut p = vec![0u8; 64];
        p[0] = 0x60;
        p[6] = 58;
        p[40] = 128;
        assert!(matches!(classify(&p), Class::Data(Some(_))));
        assert_eq!(classify(&[]), Class::Data(None));
    }

    #[test]
    fn lateness_summary() {
        let l = Lateness::of(&[1000, 2000, 3000, 4000, 100_000]);
        assert_eq!(l.count, 5);
        assert_eq!(l.median_us, 3.0);
        assert_eq!(l.max_us, 100.0);
        assert_eq!(Lateness::of(&[]).count, 0);
    }
}
