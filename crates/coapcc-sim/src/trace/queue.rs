//! The queue trace: every change of the bottleneck queue of every link direction
//! ([`QueueTrace`] records), followed by the engine ([`QueueTracer`]).

use std::collections::VecDeque;

use coapcc_link::{LinkPath, Nanos, Transit};
use serde::Serialize;

use super::{Direction, TraceSink};

/// What changed the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum QueueEvent {
    /// A packet was admitted into the buffer (`bytes` and `packets` grew by it).
    Enqueue,
    /// A packet was tail-dropped at arrival: it did not fit (`bytes` + its counted size would
    /// exceed the buffer); the queue is unchanged.
    Drop,
    /// A packet stopped counting in the buffer: its last bit left the serialiser (with
    /// `buffer_counts_in_service`, the default), or its serialisation started (without).
    Leave,
}

/// One change of the bottleneck queue of a link direction (record kind `queue`).
///
/// The bottleneck is the direction's first rate stage (the testbed's 60 / 30 kbit/s
/// serialiser and its tail-drop buffer). Occupancy is exactly what that stage's admission
/// test sees: the counted bytes (IP size + the stage's `per_packet_overhead_bytes`) of the
/// admitted packets that arrived at or before `time_s` and have not left yet, where a packet
/// leaves at its departure (last bit out, rounded up to the whole nanosecond) when
/// `buffer_counts_in_service` is on, and when its serialisation starts otherwise (at its
/// arrival on an idle link, else at the departure of the packet before it). Events at the
/// same time are in the order the stage applies them: leaves, then the arrival. The records
/// of one direction are in time order; a record is written when its packet enters the link,
/// so across directions and record kinds they are not: sort by `time_s`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct QueueTrace {
    /// Always `"queue"`.
    pub kind: &'static str,
    /// When, seconds.
    pub time_s: f64,
    /// 0: the main link (`link.uplink` / `link.downlink`); k ≥ 1: the extra access link
    /// `topology.access_links[k - 1]`.
    pub link: u32,
    /// `uplink` or `downlink`.
    pub direction: Direction,
    /// What happened.
    pub event: QueueEvent,
    /// The packet's IP size, bytes.
    pub size: u32,
    /// Queue occupancy after the event, counted bytes.
    pub bytes: u64,
    /// Queue occupancy after the event, packets.
    pub packets: u32,
}
/// Follows the bottleneck queue of every link direction of a traced run and writes a
/// [`QueueTrace`] record at every change (engine side of the queue trace).
///
/// The engine calls [`QueueTracer::observe`] after every push into a direction; the tracer
/// learns from the direction's first rate stage whether it admitted or dropped the packet
/// (its counters moved) and when the packet leaves it ([`RateStage::last_departure`]).
/// Leaves are written lazily: at the next arrival in that direction, and at the end.
///
/// [`RateStage::last_departure`]: coapcc_link::RateStage::last_departure
#[derive(Debug)]
pub(crate) struct QueueTracer {
    pub(super) dirs: Vec<DirQueue>,
}

#[derive(Debug)]
pub(super) struct DirQueue {
    link: u32,
    direction: Direction,
    /// Whether the direction has a rate stage (else it never queues: no records).
    has_stage: bool,
    in_service: bool,
    overhead: u64,
    /// Packets still counted: (leave time, counted bytes, IP size), leave times non-decreasing.
    pub(super) held: VecDeque<(Nanos, u64, u32)>,
    pub(super) bytes: u64,
    pub(super) packets: u32,
    /// Departure of the last admitted packet.
    last_departure: Nanos,
    /// The stage's (admitted, dropped) packet counters at the last observation.
    seen: (u64, u64),
}

impl QueueTracer {
    /// A tracer for the directions `paths`, indexed as given (the engine uses 2·k for link
    /// k's uplink and 2·k + 1 for its downlink).
    pub(crate) fn new<'a>(paths: impl IntoIterator<Item = (u32, Direction, &'a LinkPath)>) -> Self {
        let dirs = paths
            .into_iter()
            .map(|(link, direction, path)| {
                let cfg = path.rate_stage().map(|r| r.config());
                DirQueue {
                    link,
                    direction,
                    has_stage: cfg.is_some(),
                    in_service: cfg.map_or(true, |c| c.buffer_counts_in_service),
                    overhead: cfg.map_or(0, |c| c.per_packet_overhead_bytes as u64),
                    held: VecDeque::new(),
                    bytes: 0,
                    packets: 0,
                    last_departure: 0,
                    seen: (0, 0),
                }
            })
            .collect();
        QueueTracer { dirs }
    }

    /// Direction `dir` (whose path is `path`) was just handed a packet of `size` IP bytes,
    /// with fate `tr`.
    pub(crate) fn observe(&mut self, dir: usize, path: &LinkPath, tr: &Transit, size: u32, sink: &mut dyn TraceSink) {
        let d = &mut self.dirs[dir];
        let Some(stage) = path.rate_stage().filter(|_| d.has_stage) else { return };
        let st = stage.stats();
        let (admitted, dropped) = (st.admitted_packets != d.seen.0, st.dropped_packets != d.seen.1);
        d.seen = (st.admitted_packets, st.dropped_packets);
        if !admitted && !dropped {
            return; // never reached the stage (oversized, or lost in front of it)
        }
        // The arrival at the first rate stage.
        let t = tr.enqueued;
        d.leave_until(t, sink);
        let counted = size as u64 + d.overhead;
        if admitted {
            let departure = stage.last_departure().expect("an admitted packet is held by its stage");
            let leave = if d.in_service { departure } else { t.max(d.last_departure) };
            d.last_departure = departure;
            d.bytes += counted;
            d.packets += 1;
            d.held.push_back((leave, counted, size));
            d.emit(t, QueueEvent::Enqueue, size, sink);
        } else {
            d.emit(t, QueueEvent::Drop, size, sink);
        }
    }

    /// The run ended: write the leaves up to `end` (every one when `end` is `None`: a run that
    /// was not truncated serialises every admitted packet, even those a loss element drops
    /// afterwards, which leave no event behind).
    pub(crate) fn finish(&mut self, end: Option<Nanos>, sink: &mut dyn TraceSink) {
        for d in &mut self.dirs {
            d.leave_until(end.unwrap_or(Nanos::MAX), sink);
        }
    }
}

impl DirQueue {
    fn leave_until(&mut self, t: Nanos, sink: &mut dyn TraceSink) {
        while let Some(&(at, counted, size)) = self.held.front() {
            if at > t {
                break;
            }
            self.held.pop_front();
            self.bytes -= counted;
            self.packets -= 1;
            self.emit(at, QueueEvent::Leave, size, sink);
        }
    }

    fn emit(&self, t: Nanos, event: QueueEvent, size: u32, sink: &mut dyn TraceSink) {
        sink.queue(&QueueTrace {
            kind: "queue",
            time_s: t as f64 / 1e9,
            link: self.link,
            direction: self.direction,
            event,
            size,
            bytes: self.bytes,
            packets: self.packets,
        });
    }
}
