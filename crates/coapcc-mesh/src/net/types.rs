//! The network's data types: frames, events, the event queue's entries, transmissions, the
//! per-node state, and what the MAC log and drop counters record.

use std::cmp::Ordering;
use std::collections::VecDeque;

use super::{contiki, control, medium, Ns};

/// What a frame carries.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Kind<P> {
    /// A host packet (or a test frame).
    Host(P),
    /// An RPL DIO (link-local broadcast).
    Dio,
    /// An RPL DAO (to the root).
    Dao,
}

/// A packet in the network: its destination node, the next hop chosen at the node holding it,
/// its PSDU size and what it carries.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Frame<P> {
    pub(crate) dst: u16,
    pub(crate) next: u16,
    pub(crate) psdu: u32,
    /// Routed by the DODAG (every host packet); `false` for a test frame sent to a neighbour
    /// and for a DIO.
    pub(crate) routed: bool,
    pub(crate) kind: Kind<P>,
}

/// A packet delivered at its destination node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delivery<P> {
    /// The destination node.
    pub node: u16,
    /// Its PSDU size, bytes.
    pub psdu: u32,
    /// The host's payload.
    pub payload: P,
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum Ev {
    CcaEnd {
        node: u16,
        token: u32,
    },
    TxStart {
        node: u16,
        token: u32,
    },
    TxEnd {
        tx: u32,
    },
    StrobeRx {
        tx: u32,
    },
    AckStart {
        node: u16,
        to: u16,
        seq: u8,
    },
    AckTimeout {
        node: u16,
        token: u32,
    },
    /// A packet parked in `MeshNet::parked` reaches `node`'s network layer (after the
    /// forwarding delay).
    Arrive {
        node: u16,
        slot: u32,
    },
    /// A test frame parked in `MeshNet::parked` is handed to `node`'s MAC.
    Inject {
        node: u16,
        slot: u32,
    },
    /// A parked packet with no route from its node is delivered there.
    Deliver {
        node: u16,
        slot: u32,
    },
    /// Contiki: a neighbour queue's timer (`ctimer`) fired.
    QueueTimer {
        node: u16,
        next: u16,
        token: u32,
    },
    /// Contiki: the processor finished its current step.
    Cpu {
        node: u16,
        token: u32,
    },
    /// RPL: a node's Trickle timer fires (send a DIO unless suppressed).
    DioFire {
        node: u16,
    },
    /// RPL: a node's Trickle interval ends (double it).
    DioInterval {
        node: u16,
    },
    /// RPL: a node sends its DAO.
    DaoSend {
        node: u16,
    },
}

/// A scheduled event of the network's queue; ordered by (time, insertion sequence) packed into
/// one key, earliest first (the heap is a max-heap, so the key is inverted).
pub(crate) struct Entry<E> {
    key: u128,
    pub(crate) ev: E,
}

impl<E> Entry<E> {
    pub(crate) fn new(t: Ns, seq: u64, ev: E) -> Self {
        Entry { key: !(((t as u128) << 64) | seq as u128), ev }
    }

    pub(crate) fn time(&self) -> Ns {
        ((!self.key) >> 64) as Ns
    }

    pub(crate) fn seq(&self) -> u64 {
        (!self.key) as u64
    }
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, o: &Self) -> bool {
        self.key == o.key
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, o: &Self) -> Ordering {
        self.key.cmp(&o.key)
    }
}

/// A transmission on the channel.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Tx<P> {
    pub(crate) sender: u16,
    pub(crate) dst: u16,
    pub(crate) ack: bool,
    pub(crate) seq: u8,
    pub(crate) pkt: Option<Frame<P>>,
    pub(crate) start: Ns,
    /// The addressee's reception draw failed (MRM): a loss to fading, not to a collision.
    pub(crate) dst_faded: bool,
}

/// Per node: the MAC state of the 802.15.4 and ContikiMAC rules, the medium's reception
/// state, and the Contiki stack's queues, processor and FIFO.
pub(crate) struct Node<P> {
    // 802.15.4 / ContikiMAC MAC (one FIFO).
    pub(crate) queue: VecDeque<Frame<P>>,
    pub(crate) in_service: bool,
    pub(crate) nb: u8,
    pub(crate) be: u8,
    pub(crate) retries: u8,
    pub(crate) token: u32,
    pub(crate) dsn: u8,
    pub(crate) awaiting_ack: bool,
    pub(crate) head_accepted: bool,
    /// The previous frame was dropped (Contiki waits one time base before the next).
    pub(crate) last_failed: bool,
    // Medium.
    pub(crate) tx: Option<u32>,
    pub(crate) rx: Option<medium::Rx>,
    pub(crate) cca_count: u32,
    pub(crate) cca_last_end: Ns,
    pub(crate) mrm: medium::MrmRadio,
    // Contiki nullrdc stack.
    pub(crate) ck: contiki::Stack<P>,
    // RPL.
    pub(crate) rpl: control::Trickle,
}

impl<P> Default for Node<P> {
    fn default() -> Self {
        Node {
            queue: VecDeque::new(),
            in_service: false,
            nb: 0,
            be: 0,
            retries: 0,
            token: 0,
            dsn: 0,
            awaiting_ack: false,
            head_accepted: false,
            last_failed: false,
            tx: None,
            rx: None,
            cca_count: 0,
            cca_last_end: 0,
            mrm: medium::MrmRadio::default(),
            ck: contiki::Stack::default(),
            rpl: control::Trickle::default(),
        }
    }
}

/// Why a packet left the network without arriving.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropCause {
    /// The node's queue (buffer pool) was full.
    BufferOverflow,
    /// Every neighbour queue was taken by other next hops (`mac.max_neighbor_queues`).
    NeighborQueues,
    /// macMaxFrameRetries retransmissions without a MAC ACK.
    NoAck,
    /// macMaxCSMABackoffs busy CCAs.
    ChannelAccess,
    /// Lost on the air without link-layer ACKs: a collision at the next hop.
    AirCollision,
    /// Lost on the air without link-layer ACKs: the reception draw failed at the next hop.
    AirFading,
    /// The next hop's receive FIFO overflowed (or was flushed after an overflow).
    FifoOverflow,
}

/// One MAC-level event, recorded when the MAC log is enabled (tests, debugging).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MacWhat {
    /// CCA found the channel idle (at the end of the CCA window).
    CccIdle,
    /// CCA found the channel busy.
    CcaBusy,
    /// A data frame transmission started.
    TxData {
        /// Link-layer destination.
        to: u16,
        /// Retry number (0 = first attempt).
        retry: u8,
    },
    /// A MAC ACK transmission started.
    TxAck {
        /// The acknowledged sender.
        to: u16,
    },
    /// A data frame was received correctly by its addressee.
    RxData {
        /// Sender.
        from: u16,
        /// Dropped as a duplicate.
        duplicate: bool,
    },
    /// A data frame was lost at its addressee.
    RxLost {
        /// Sender.
        from: u16,
        /// Lost to a collision (else to the reception curve).
        collision: bool,
    },
    /// The MAC ACK of the head frame arrived.
    AckReceived,
    /// macAckWaitDuration expired without an ACK.
    AckTimeout,
    /// A packet was dropped.
    Drop(DropCause),
    /// A raw (injected) frame reached its destination.
    Delivered,
    /// A received frame did not fit the receive FIFO (Contiki motes).
    FifoOverflow,
}

/// A MAC log record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MacRecord {
    /// Time, ns.
    pub t_ns: u64,
    /// The node it happened at.
    pub node: u16,
    /// What happened.
    pub what: MacWhat,
}
