//! What the clients do: the workload kinds ([`WorkloadKind`]: the closed-loop flows and the
//! open-loop message workload) and the message workload's parameters ([`MessagesConfig`]).

use serde::{Deserialize, Serialize};

/// Which workload the clients run: a closed-loop flow (spec §2: `continuous`, `random`,
/// `bulk`), or the open-loop message workload (`periodic`, `events`, `none`: application
/// messages arriving on their own schedule, cut into units, [`MessagesConfig`]; the workload
/// of Ancillotti & Bruno's Cooja scenarios).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkloadKind {
    /// `exchanges` exchanges back to back, congestion-control state kept throughout.
    Continuous,
    /// The exchanges split into batches of random size; `reset()` before each batch.
    Random,
    /// One GET of a resource of this many bytes per client (`bulk:BYTES` on the command
    /// line; `exchanges` is not used). Over UDP a Block2 transfer, over TCP one RFC 8323
    /// response message.
    Bulk(u64),
    /// Continuous monitoring (`periodic:LOAD_KBPS`): `load_kbps` network-wide, every client
    /// sends a `messages.message_bytes` message every T = clients · message_bytes · 8 / load.
    Periodic {
        /// Network-wide offered load, kbit/s.
        load_kbps: f64,
    },
    /// Global event detection (`events:TB_S,SIZE_B`): on each event (mean inter-event time
    /// `tb_s`, `messages.event_dist`) every client sends `size_bytes` at once, plus one
    /// `messages.background_bytes` message every `messages.background_period_s`.
    Events {
        /// Mean time between events, seconds.
        tb_s: f64,
        /// Event message size, bytes.
        size_bytes: u32,
    },
    /// No application traffic (the clients never send).
    None,
}

impl WorkloadKind {
    /// Whether this is one of the open-loop message workloads.
    pub fn is_messages(&self) -> bool {
        matches!(self, WorkloadKind::Periodic { .. } | WorkloadKind::Events { .. } | WorkloadKind::None)
    }

    /// Parse the command line's form: `continuous`, `random`, `bulk:BYTES`,
    /// `periodic:LOAD_KBPS`, `events:TB_S,SIZE_B` or `none`.
    pub fn parse(s: &str) -> Result<WorkloadKind, String> {
        let s = s.trim();
        let (kind, arg) = match s.split_once(':') {
            Some((k, a)) => (k.trim().to_ascii_lowercase(), Some(a.trim())),
            None => (s.to_ascii_lowercase(), None),
        };
        let expected = "expected continuous, random, bulk:BYTES, periodic:LOAD_KBPS, events:TB_S,SIZE_B or none";
        match (kind.as_str(), arg) {
            ("continuous", None) => Ok(WorkloadKind::Continuous),
            ("random", None) => Ok(WorkloadKind::Random),
            ("none", None) => Ok(WorkloadKind::None),
            ("bulk", Some(n)) => match n.parse::<u64>() {
                Ok(b) if b > 0 => Ok(WorkloadKind::Bulk(b)),
                _ => Err(format!("bulk:BYTES needs a positive number of bytes, got '{n}'")),
            },
            ("bulk", None) => Err("bulk needs a size: bulk:BYTES (e.g. bulk:102400)".into()),
            ("periodic", Some(a)) => match a.parse::<f64>() {
                Ok(load_kbps) if load_kbps.is_finite() && load_kbps > 0.0 => Ok(WorkloadKind::Periodic { load_kbps }),
                _ => Err(format!("periodic:LOAD_KBPS needs a positive load in kbit/s, got '{a}'")),
            },
            ("events", Some(a)) => {
                let bad = || format!("events:TB_S,SIZE_B needs TB_S >= 0.001 and SIZE_B > 0, got '{a}'");
                let (tb, size) = a.split_once(',').ok_or_else(bad)?;
                let tb_s: f64 = tb.trim().parse().map_err(|_| bad())?;
                let size_bytes: u32 = size.trim().parse().map_err(|_| bad())?;
                if !(tb_s.is_finite() && tb_s >= 0.001) || size_bytes == 0 {
                    return Err(bad());
                }
                Ok(WorkloadKind::Events { tb_s, size_bytes })
            }
            _ => Err(format!("unknown workload '{s}': {expected}")),
        }
    }
}

impl std::fmt::Display for WorkloadKind {
    /// The command line's form ([`WorkloadKind::parse`] reads it back).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WorkloadKind::Continuous => write!(f, "continuous"),
            WorkloadKind::Random => write!(f, "random"),
            WorkloadKind::Bulk(b) => write!(f, "bulk:{b}"),
            WorkloadKind::Periodic { load_kbps } => write!(f, "periodic:{load_kbps}"),
            WorkloadKind::Events { tb_s, size_bytes } => write!(f, "events:{tb_s},{size_bytes}"),
            WorkloadKind::None => write!(f, "none"),
        }
    }
}

/// How a message of the message workload is cut into reliable exchanges.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UnitMode {
    /// Each `unit_bytes` unit is an independent Confirmable PUT (per-frame congestion
    /// control, Ancillotti & Bruno's rule).
    Frames,
    /// Each unit is one Block1 block of a PUT (adds the Block1 option to every request and
    /// response); `unit_bytes` must be a Block1 size (16..1024, a power of two).
    Block1,
    /// The whole message is one exchange (over a mesh it must fit one 802.15.4 frame).
    Message,
}

/// Distribution of the time between global events.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EventDist {
    /// Exponential with mean T_b (recommended; not published).
    Exponential,
    /// Exactly T_b.
    Fixed,
}

/// The message workload's parameters (`workload.kind` = `periodic`, `events` or `none`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MessagesConfig {
    /// Size of a periodic monitoring message, bytes (Ancillotti & Bruno: 96).
    pub message_bytes: u32,
    /// Unit of congestion control.
    pub unit_mode: UnitMode,
    /// Bytes of CoAP payload per unit (Ancillotti & Bruno: 32).
    pub unit_bytes: u32,
    /// "No caching": a message generated while the previous one is still in flight is lost
    /// (Ancillotti & Bruno). With `false` it waits in an unbounded client queue.
    pub no_caching: bool,
    /// Periodic monitoring: each client starts at a uniformly random phase in [0, T) (`true`,
    /// our reading of "asynchronous") or all at t = 0.
    pub random_phase: bool,
    /// Global events: inter-event distribution.
    pub event_dist: EventDist,
    /// Global events: background message period per client, seconds (Ancillotti & Bruno: 60).
    pub background_period_s: f64,
    /// Global events: background message size, bytes (not published; default one unit).
    pub background_bytes: u32,
}

impl Default for MessagesConfig {
    fn default() -> Self {
        MessagesConfig {
            message_bytes: 96,
            unit_mode: UnitMode::Frames,
            unit_bytes: 32,
            no_caching: true,
            random_phase: true,
            event_dist: EventDist::Exponential,
            background_period_s: 60.0,
            background_bytes: 32,
        }
    }
}
