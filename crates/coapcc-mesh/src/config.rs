//! [`MeshConfig`]: every parameter of the mesh model, with its default and, where the
//! published experiments fixed it, the value they used.
//!
//! Every choice the papers do not publish is a named field here (ns-3 style attributes): the
//! defaults are our recommended resolution, and the `ancillotti-cooja` preset
//! ([`MeshConfig::preset`]) sets what Ancillotti & Bruno's Cooja runs used where it is known.
//! Any field can be set from text with [`MeshConfig::set`] (`radio.capture_db=3`), which the
//! command line exposes as `--param KEY=VALUE`.

use serde::{Deserialize, Serialize};

use crate::contiki::NullrdcConfig;
use crate::mote::MoteConfig;
use crate::mrm::MrmConfig;
use crate::rpl::RplConfig;

/// The full configuration of one mesh run. A run is a pure function of this value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MeshConfig {
    /// The preset the configuration started from (informational).
    pub preset: String,
    /// Topology: `grid:N`, `grid:NxM`, `chain:N`, `ring:N`, `dumbbell:K,M` or `file:PATH`
    /// (see [`crate::topology`]).
    pub topology: String,
    /// Distance between neighbouring nodes of the generated topologies, metres.
    pub spacing_m: f64,
    /// Congestion-control algorithm of every client, `NAME[:key=value,...]` (the
    /// `coapcc_cc` registry).
    pub cc: String,
    /// Traffic: `periodic:LOAD_KBPS`, `events:TB_S,SIZE_B` or `none`.
    pub traffic: String,
    /// Size of a periodic monitoring message, bytes (the study: 96).
    pub message_bytes: u32,
    /// Simulated time, seconds (the study: 3 h = 10 800 s).
    pub duration_s: f64,
    /// Master seed; every random stream derives from it.
    pub seed: u64,
    /// Physical layer and radio medium.
    pub radio: RadioConfig,
    /// Unslotted CSMA/CA MAC.
    pub mac: MacConfig,
    /// Header sizes of each layer.
    pub frame: FrameConfig,
    /// DODAG construction and forwarding.
    pub routing: RoutingConfig,
    /// The motes' processor and buffers.
    pub mote: MoteConfig,
    /// The CoAP application: fragmentation, no-caching rule, workload details.
    pub app: AppConfig,
}

/// The network alone, for a host other than the mesh study (the general simulator's
/// `topology.mesh`): positions, radio, MAC, frame sizes and routing, the same fields and
/// defaults as in [`MeshConfig`] (the `ieee802154` preset). The random streams derive from the
/// host's seed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MediumConfig {
    /// Topology: `grid:N`, `grid:NxM`, `chain:N`, `ring:N`, `dumbbell:K,M` or `file:PATH`
    /// (default `grid:3`).
    pub topology: String,
    /// Distance between neighbouring nodes of the generated topologies, metres.
    pub spacing_m: f64,
    /// Physical layer and radio medium.
    pub radio: RadioConfig,
    /// The MAC (`mac.csma = "contiki"` for Contiki's rules, `mac.rdc = "contikimac"` for duty
    /// cycling).
    pub mac: MacConfig,
    /// Header sizes below CoAP (`mac_header_bytes`, `lowpan_*`, `rpl_option_bytes`,
    /// `max_psdu_bytes`; the CoAP fields are the host's own).
    pub frame: FrameConfig,
    /// DODAG construction and forwarding (`sink`: where the server sits, default node 0).
    pub routing: RoutingConfig,
    /// The motes' processor and buffers.
    pub mote: MoteConfig,
}

impl Default for MediumConfig {
    fn default() -> Self {
        MediumConfig::from_mesh(&MeshConfig { topology: "grid:3".into(), ..MeshConfig::default() })
    }
}

impl MediumConfig {
    /// The network fields of a mesh configuration (e.g. of a [`MeshConfig::preset`]).
    pub fn from_mesh(c: &MeshConfig) -> MediumConfig {
        MediumConfig {
            topology: c.topology.clone(),
            spacing_m: c.spacing_m,
            radio: c.radio.clone(),
            mac: c.mac.clone(),
            frame: c.frame.clone(),
            routing: c.routing.clone(),
            mote: c.mote.clone(),
        }
    }

    /// The network of a named mesh preset (`ancillotti-cooja`, `makarem2021`, `ieee802154`)
    /// on `topology`, without RPL's control traffic: a general-simulator run ends when its
    /// traffic has, and RPL's Trickle timers never stop (`routing.rpl.control = true` turns
    /// it back on; the run then lasts until its time bound).
    pub fn preset(name: &str, topology: &str) -> Result<MediumConfig, String> {
        let mut c = MeshConfig::preset(name)?;
        c.topology = topology.into();
        c.routing.rpl.control = false;
        Ok(MediumConfig::from_mesh(&c))
    }

    /// A mesh configuration carrying this network and `seed` (the application fields at
    /// their defaults, unused by other hosts).
    pub fn to_mesh(&self, seed: u64) -> MeshConfig {
        MeshConfig {
            topology: self.topology.clone(),
            spacing_m: self.spacing_m,
            seed,
            radio: self.radio.clone(),
            mac: self.mac.clone(),
            frame: self.frame.clone(),
            routing: self.routing.clone(),
            mote: self.mote.clone(),
            ..MeshConfig::default()
        }
    }

    /// Set one field from text, as [`MeshConfig::set`] (`mac.csma=contiki`).
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        set_dotted(self, key, value, || format!("unknown mesh parameter {key:?}"))
    }

    /// PSDU of a packet whose UDP payload (the CoAP message) is `coap_bytes`: MAC header and
    /// FCS, compressed IPv6 and UDP headers, RPL option, then the message.
    pub fn psdu_of_coap(&self, coap_bytes: u32) -> u32 {
        let f = &self.frame;
        f.mac_header_bytes + f.lowpan_ipv6_bytes + f.lowpan_udp_bytes + f.rpl_option_bytes + coap_bytes
    }
}

/// Shape of the packet-reception-ratio curve between `range_full_m` and
/// `interference_range_m`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Curve {
    /// PRR falls linearly from 1 at `range_full_m` to 0 at `interference_range_m`.
    Linear,
    /// Unit-disk (Cooja UDGM-like): PRR 1 up to `range_full_m`, 0 beyond.
    Step,
}

/// Physical layer and radio medium.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RadioConfig {
    /// Bit rate, bit/s (802.15.4 at 2.4 GHz: 250 000).
    pub bitrate_bps: u32,
    /// Distance up to which every frame is received (no interference), metres. The study
    /// tuned Cooja's MRM to 100 % success at 10 m.
    pub range_full_m: f64,
    /// Interference range, metres: a transmission from closer than this (inclusive) interferes
    /// with a reception; the study used 20 m. Frames from farther away are neither received nor
    /// heard.
    pub interference_range_m: f64,
    /// Reception curve between the two ranges. The study's curve (its Fig. 1) is not
    /// available numerically; the default is linear.
    pub curve: Curve,
    /// Energy-detection range of clear channel assessment, metres (default: the interference
    /// range, i.e. a node senses every transmission that could disturb its neighbours).
    pub cca_range_m: f64,
    /// Capture threshold, dB: a locked frame survives interference while its power exceeds the
    /// sum of the interferers' by at least this much. `null` disables capture (any overlap
    /// destroys both frames). Default 3 dB (CC2420-class co-channel rejection).
    pub capture_db: Option<f64>,
    /// Path-loss exponent of the log-distance power model used only for capture decisions.
    pub path_loss_exponent: f64,
    /// PHY header: preamble 4 + SFD 1 + length 1 bytes.
    pub phy_header_bytes: u32,
    /// Cooja's MRM reception rules (`null`: the reception curve, `capture_db` and the ranges
    /// above). With MRM, `curve`, `range_full_m`, `interference_range_m`, `cca_range_m`,
    /// `capture_db` and `path_loss_exponent` are not used.
    pub mrm: Option<MrmConfig>,
}

/// Unslotted CSMA/CA (IEEE 802.15.4-2006 §7.5.1.4) with acknowledged unicast frames.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MacConfig {
    /// macMinBE (standard default 3).
    pub min_be: u8,
    /// macMaxBE (standard default 5).
    pub max_be: u8,
    /// macMaxCSMABackoffs (standard default 4): busy CCAs tolerated before a channel access
    /// failure.
    pub max_csma_backoffs: u8,
    /// macMaxFrameRetries (standard default 3): retransmissions after a missing ACK.
    pub max_frame_retries: u8,
    /// aUnitBackoffPeriod, µs (20 symbols = 320 µs).
    pub unit_backoff_us: u32,
    /// CCA duration, µs (8 symbols = 128 µs).
    pub cca_us: u32,
    /// aTurnaroundTime, µs (12 symbols = 192 µs): CCA-to-transmit and receive-to-ACK.
    pub turnaround_us: u32,
    /// macAckWaitDuration, µs after the end of a data frame (54 symbols = 864 µs).
    pub ack_wait_us: u32,
    /// MAC ACK frame without the PHY header: FCF 2 + sequence 1 + FCS 2 bytes.
    pub ack_frame_bytes: u32,
    /// Packets a node can hold (in service included); Contiki's `QUEUEBUF_NUM` default is 8.
    pub queue_packets: u32,
    /// Most distinct next hops with packets queued at once (0: unlimited, the default).
    /// Contiki's `csma.c` keeps one queue per next hop from a fixed pool: 2 in Contiki 3.0
    /// (`CSMA_MAX_NEIGHBOR_QUEUES`), `QUEUEBUF_NUM` = 8 in 2.7; a packet for a further next
    /// hop is dropped. The study's release is not published.
    pub max_neighbor_queues: u32,
    /// Drop duplicate data frames (same sender and sequence number) after a lost MAC ACK, as
    /// Contiki does. With `false` a duplicate is forwarded again.
    pub duplicate_detection: bool,
    /// Channel-access and retransmission rules: `ieee802154` (the standard's unslotted
    /// CSMA/CA with the constants above) or `contiki` (Contiki 3.0's `csma.c` over a radio
    /// that does one CCA before each transmission, the stack of the Cooja firmware).
    pub csma: CsmaMode,
    /// `contiki`: the clock tick, µs (1/128 s = 7 812.5 µs), which is also the retransmission
    /// time base T over `nullrdc`; with ContikiMAC T is the channel check interval and the
    /// random part of a retransmission delay is drawn in ticks.
    pub contiki_timebase_us: u32,
    /// `contiki`: CSMA_MAX_MAC_TRANSMISSIONS (3): transmissions of a frame before it is
    /// dropped (busy-channel rounds count once per `contiki_max_backoff_exponent + 1`).
    pub contiki_max_transmissions: u8,
    /// `contiki`: CSMA_MAX_BACKOFF_EXPONENT (3): a busy CCA retries after T·(1 + U{0..2^c − 1}),
    /// c = busy CCAs so far, up to this exponent.
    pub contiki_max_backoff_exponent: u8,
    /// Radio duty cycling: `none` (the study: radios always on) or `contikimac`.
    pub rdc: Rdc,
    /// ContikiMAC channel check rate, Hz (Contiki's default 8): each node wakes every
    /// 1/rate seconds at its own random phase.
    pub channel_check_rate_hz: f64,
    /// ContikiMAC: gap between two copies of a strobed frame, µs (Contiki: 0.4 ms).
    pub strobe_gap_us: u32,
    /// ContikiMAC phase optimisation: after a first MAC-acknowledged frame to a neighbour the
    /// sender knows its wake-up phase and starts strobing `phase_guard_us` before it.
    pub phase_lock: bool,
    /// Phase optimisation guard time, µs.
    pub phase_guard_us: u32,
    /// With duty cycling and the `ieee802154` rules, the most channel check intervals a backoff
    /// may last: U{0..min(n, max)} whole intervals, n = attempts so far (the first attempt
    /// goes at once), instead of unit periods, since a strobe keeps the channel busy for up to
    /// one interval. Default 3. (The `contiki` rules use the interval as their time base.)
    pub rdc_max_backoff_intervals: u32,
    /// Contiki's `nullrdc` and the release details of its `csma.c` (with `csma = contiki`
    /// and `rdc = none`).
    pub nullrdc: NullrdcConfig,
}

/// Channel access and MAC retransmission rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CsmaMode {
    /// IEEE 802.15.4-2006 unslotted CSMA/CA: random backoff of U{0..2^BE − 1} unit periods
    /// before every CCA, macMaxCSMABackoffs, macMaxFrameRetries.
    Ieee802154,
    /// Contiki 3.0 `csma.c`: a frame is sent at once (one CCA); a busy channel or a missing
    /// ACK retries after T·(1 + U{0..2^c − 1}) (c = busy CCAs, capped; 0 after a missing ACK),
    /// at most `contiki_max_transmissions` transmissions; after a failed frame the next one
    /// waits T.
    Contiki,
}

/// Radio duty cycling.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rdc {
    /// Radios always on (Cooja runs of Ancillotti & Bruno; Contiki's nullrdc).
    None,
    /// ContikiMAC-like: receivers sleep between periodic channel checks; a unicast frame is
    /// strobed (repeated copies) until the receiver's next wake-up, which receives the first
    /// whole copy after it. Makarem's Contiki setups.
    Contikimac,
}

/// Bytes each layer adds to a 32-byte CoAP unit. The defaults describe Contiki's stack:
/// 802.15.4 frames with 64-bit addresses and PAN-ID compression, 6LoWPAN IPHC with
/// context-derived addresses, NHC-compressed UDP with non-compressible ports (5683), the RPL
/// hop-by-hop option (RFC 6553) of storing mode.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FrameConfig {
    /// 802.15.4 MAC header + FCS: FCF 2 + sequence 1 + PAN 2 + destination 8 + source 8 +
    /// FCS 2 = 23 bytes.
    pub mac_header_bytes: u32,
    /// Largest PSDU (aMaxPHYPacketSize = 127). Larger frames are rejected (6LoWPAN
    /// fragmentation is not modelled).
    pub max_psdu_bytes: u32,
    /// 6LoWPAN IPHC-compressed IPv6 header: dispatch/IPHC 2 + context id 1 bytes.
    pub lowpan_ipv6_bytes: u32,
    /// NHC-compressed UDP header: NHC 1 + ports 4 + checksum 2 bytes.
    pub lowpan_udp_bytes: u32,
    /// IPv6 hop-by-hop header with the RPL option (RFC 6553) carried by data packets in
    /// storing mode: 8 bytes (0 to omit).
    pub rpl_option_bytes: u32,
    /// CoAP fixed header (4 bytes).
    pub coap_header_bytes: u32,
    /// CoAP token length (Contiki Erbium's client: 2 bytes).
    pub coap_token_bytes: u32,
    /// Options of a request other than Block1 (Uri-Path "res": 1 + 3 bytes).
    pub coap_request_option_bytes: u32,
}

/// Objective function of the DODAG.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Objective {
    /// Expected transmission count, link ETX = 1 / PRR² (data and ACK directions): like
    /// Contiki's MRHOF.
    Etx,
    /// Hop count over links of PRR ≥ `min_link_prr` (like OF0), ties to the lowest parent
    /// index.
    Hops,
    /// Hop count over links of PRR ≥ `min_link_prr`, ties to the link of higher PRR: Contiki's
    /// MRHOF when links are not acknowledged (`rpl-mrhof.c`: every new neighbour starts at the
    /// same link metric, and an unacknowledged transmission always reports one attempt, so a
    /// link's ETX never grows with its losses).
    HopsLink,
}

/// DODAG construction and storing-mode forwarding.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RoutingConfig {
    /// Objective function (default ETX, as Contiki's MRHOF).
    pub objective: Objective,
    /// Links with a PRR below this are never used as routes.
    pub min_link_prr: f64,
    /// DODAG root (border router) node index; `null`: the node nearest the geometric centre
    /// of the topology, lowest index on ties (never the sink).
    pub root: Option<usize>,
    /// CoAP sink (server) node index; `null`: node 0 (a corner of a grid).
    pub sink: Option<usize>,
    /// Processing delay per hop before a received packet is queued for forwarding, µs.
    pub forward_delay_us: u32,
    /// RPL control traffic (DIO Trickle, DAO).
    pub rpl: RplConfig,
}

/// How a CoAP message is cut into reliable exchanges.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UnitMode {
    /// Each `unit_bytes` unit is an independent Confirmable PUT (per-frame congestion
    /// control, the study's rule).
    Frames,
    /// Each unit is one Block1 block of a PUT (adds the Block1 option to every request and
    /// response); `unit_bytes` must be a Block1 size (16..1024, a power of two).
    Block1,
    /// The whole message is one exchange (must fit one 802.15.4 frame).
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

/// The CoAP application on the clients and the sink.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AppConfig {
    /// Unit of congestion control.
    pub unit_mode: UnitMode,
    /// Bytes of CoAP payload per unit (the study: 32).
    pub unit_bytes: u32,
    /// "No caching": a message generated while the previous one is still in flight is lost
    /// (the study). With `false` it waits in an unbounded client queue.
    pub no_caching: bool,
    /// Periodic monitoring: each client starts at a uniformly random phase in [0, T) (`true`,
    /// our reading of "asynchronous") or all at t = 0.
    pub random_phase: bool,
    /// Global events: inter-event distribution.
    pub event_dist: EventDist,
    /// Global events: background message period per client, seconds (the study: 60).
    pub background_period_s: f64,
    /// Global events: background message size, bytes (not published; default one unit).
    pub background_bytes: u32,
    /// Sink processing delay before it answers, µs.
    pub server_delay_us: u32,
}

/// Preset names accepted by [`MeshConfig::preset`].
pub const PRESETS: &[&str] = &["ancillotti-cooja", "makarem2021", "ieee802154"];

/// Default algorithm of the `ancillotti-cooja` preset: Contiki Erbium's CoAP (CoAP-CC).
pub const DEFAULT_CC: &str = "default:preset=ancillotti-cooja";

impl Default for MeshConfig {
    fn default() -> Self {
        MeshConfig {
            preset: "ieee802154".into(),
            topology: "grid:6".into(),
            spacing_m: 10.0,
            cc: DEFAULT_CC.into(),
            traffic: "periodic:1".into(),
            message_bytes: 96,
            duration_s: 10_800.0,
            seed: 1,
            radio: RadioConfig::default(),
            mac: MacConfig::default(),
            frame: FrameConfig::default(),
            routing: RoutingConfig::default(),
            mote: MoteConfig::default(),
            app: AppConfig::default(),
        }
    }
}

impl Default for RadioConfig {
    fn default() -> Self {
        RadioConfig {
            bitrate_bps: 250_000,
            range_full_m: 10.0,
            interference_range_m: 20.0,
            curve: Curve::Linear,
            cca_range_m: 20.0,
            capture_db: Some(3.0),
            path_loss_exponent: 3.0,
            phy_header_bytes: 6,
            mrm: None,
        }
    }
}

impl Default for MacConfig {
    fn default() -> Self {
        MacConfig {
            min_be: 3,
            max_be: 5,
            max_csma_backoffs: 4,
            max_frame_retries: 3,
            unit_backoff_us: 320,
            cca_us: 128,
            turnaround_us: 192,
            ack_wait_us: 864,
            ack_frame_bytes: 5,
            queue_packets: 8,
            max_neighbor_queues: 0,
            duplicate_detection: true,
            csma: CsmaMode::Ieee802154,
            contiki_timebase_us: 7_813,
            contiki_max_transmissions: 3,
            contiki_max_backoff_exponent: 3,
            rdc: Rdc::None,
            channel_check_rate_hz: 8.0,
            strobe_gap_us: 400,
            phase_lock: true,
            phase_guard_us: 2_000,
            rdc_max_backoff_intervals: 3,
            nullrdc: NullrdcConfig::default(),
        }
    }
}

impl Default for FrameConfig {
    fn default() -> Self {
        FrameConfig {
            mac_header_bytes: 23,
            max_psdu_bytes: 127,
            lowpan_ipv6_bytes: 3,
            lowpan_udp_bytes: 7,
            rpl_option_bytes: 8,
            coap_header_bytes: 4,
            coap_token_bytes: 2,
            coap_request_option_bytes: 4,
        }
    }
}

impl Default for RoutingConfig {
    fn default() -> Self {
        RoutingConfig {
            objective: Objective::Etx,
            min_link_prr: 0.1,
            root: None,
            sink: None,
            forward_delay_us: 0,
            rpl: RplConfig::default(),
        }
    }
}

impl Default for AppConfig {
    fn default() -> Self {
        AppConfig {
            unit_mode: UnitMode::Frames,
            unit_bytes: 32,
            no_caching: true,
            random_phase: true,
            event_dist: EventDist::Exponential,
            background_period_s: 60.0,
            background_bytes: 32,
            server_delay_us: 0,
        }
    }
}

/// The traffic pattern, parsed from [`MeshConfig::traffic`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Traffic {
    /// No application traffic (tests inject frames themselves).
    None,
    /// Continuous monitoring: `load_kbps` network-wide, one message of `message_bytes` per
    /// client every T = N_clients · message_bytes · 8 / load.
    Periodic {
        /// Network-wide offered load, kbit/s.
        load_kbps: f64,
    },
    /// Global event detection: every client sends `size_bytes` on each event (mean
    /// inter-event time `tb_s`), plus background messages.
    Events {
        /// Mean time between events, seconds.
        tb_s: f64,
        /// Event message size, bytes.
        size_bytes: u32,
    },
}

impl Traffic {
    /// Parse `periodic:LOAD_KBPS`, `events:TB_S,SIZE_B` or `none`.
    pub fn parse(s: &str) -> Result<Traffic, String> {
        let s = s.trim();
        let bad = || format!("bad traffic {s:?}: expected periodic:LOAD_KBPS, events:TB_S,SIZE_B or none");
        if s.eq_ignore_ascii_case("none") {
            return Ok(Traffic::None);
        }
        let (kind, rest) = s.split_once(':').ok_or_else(bad)?;
        match kind.trim().to_ascii_lowercase().as_str() {
            "periodic" => {
                let load_kbps: f64 = rest.trim().parse().map_err(|_| bad())?;
                if !(load_kbps.is_finite() && load_kbps > 0.0) {
                    return Err(format!("traffic load must be a positive number of kbit/s, got {rest:?}"));
                }
                Ok(Traffic::Periodic { load_kbps })
            }
            "events" => {
                let (tb, size) = rest.split_once(',').ok_or_else(bad)?;
                let tb_s: f64 = tb.trim().parse().map_err(|_| bad())?;
                let size_bytes: u32 = size.trim().parse().map_err(|_| bad())?;
                if !(tb_s.is_finite() && tb_s >= 0.001) || size_bytes == 0 {
                    return Err(format!("events:TB_S,SIZE_B needs TB_S >= 0.001 and SIZE_B > 0, got {rest:?}"));
                }
                Ok(Traffic::Events { tb_s, size_bytes })
            }
            _ => Err(bad()),
        }
    }
}

impl MeshConfig {
    /// The configuration of a named preset (see [`PRESETS`]).
    ///
    /// `ancillotti-cooja`: Ancillotti & Bruno's Cooja grids. 250 kbit/s, no duty cycling,
    /// 100 % reception at 10 m and 20 m interference range, 10 m grid spacing, root at the
    /// centre, sink in a corner, 32-byte units with per-frame congestion control, no caching,
    /// 96-byte monitoring messages, 3-hour runs, Contiki Erbium's default CoAP, and Contiki
    /// 3.0's CSMA rules (`mac.csma = contiki`) since the motes ran Contiki firmware.
    ///
    /// `ieee802154`: the defaults, the same scenario with the standard's unslotted CSMA/CA.
    ///
    /// `makarem2021`: the same mesh with ContikiMAC-like duty cycling at 8 Hz (phase
    /// optimisation on) and Makarem's default-CoAP parameters; pick the topology (grid, ring,
    /// chain, dumbbell) per experiment.
    pub fn preset(name: &str) -> Result<MeshConfig, String> {
        match name.trim().to_ascii_lowercase().as_str() {
            "ieee802154" => Ok(MeshConfig::default()),
            "ancillotti-cooja" => {
                let mut c = MeshConfig { preset: "ancillotti-cooja".into(), ..MeshConfig::default() };
                // Cooja's MRM, tuned to 100 % at 10 m and 0 at 20 m (crate::mrm).
                c.radio.mrm = Some(MrmConfig::default());
                // Contiki's csma.c over nullrdc, no link-layer ACKs (Sky and Z1 builds):
                // QUEUEBUF_CONF_NUM 4 (Z1 with IPv6, rpl-border-router), 2 neighbour queues.
                c.mac.csma = CsmaMode::Contiki;
                c.mac.queue_packets = 4;
                c.mac.max_neighbor_queues = 2;
                // Emulated motes: processing time, one packet at a time, the CC2420's FIFO.
                c.mote.cpu = true;
                // MRHOF without link-layer ACKs ranks by hops; RPL's DIOs and DAOs are sent.
                c.routing.objective = Objective::HopsLink;
                c.routing.rpl.control = true;
                Ok(c)
            }
            "makarem2021" => {
                let mut c = MeshConfig { preset: "makarem2021".into(), ..MeshConfig::default() };
                c.cc = "default:preset=makarem2021".into();
                c.mac.csma = CsmaMode::Contiki;
                c.mac.rdc = Rdc::Contikimac;
                Ok(c)
            }
            other => Err(format!("unknown mesh preset {other:?}; valid: {}", PRESETS.join(", "))),
        }
    }

    /// Set one field from text: `KEY=VALUE` with a dotted key (`radio.capture_db=6`,
    /// `mac.queue_packets=4`, `duration_s=600`). The value is read as JSON if it parses
    /// (numbers, `true`, `null`), else as a string.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        set_dotted(self, key, value, || format!("unknown parameter {key:?}; see --print-config for the valid keys"))
    }

    /// Check every field; the first problem as a one-line message.
    pub fn validate(&self) -> Result<(), String> {
        let pos = |x: f64| x.is_finite() && x > 0.0;
        if !pos(self.duration_s) || self.duration_s > 1e9 {
            return Err(format!("duration_s must be in (0, 1e9] seconds, got {}", self.duration_s));
        }
        self.validate_medium()?;
        self.validate_app()
    }

    /// Check the fields of the network itself (`spacing_m`, `radio`, `mac`, `routing`): what
    /// [`crate::MeshNet`] needs, whichever host carries traffic over it.
    pub fn validate_medium(&self) -> Result<(), String> {
        let r = &self.radio;
        let pos = |x: f64| x.is_finite() && x > 0.0;
        if !pos(self.spacing_m) {
            return Err(format!("spacing_m must be positive, got {}", self.spacing_m));
        }
        if r.bitrate_bps == 0 {
            return Err("radio.bitrate_bps must be positive".into());
        }
        if !pos(r.range_full_m) || !pos(r.interference_range_m) || r.interference_range_m < r.range_full_m {
            return Err(format!(
                "need 0 < radio.range_full_m ({}) <= radio.interference_range_m ({})",
                r.range_full_m, r.interference_range_m
            ));
        }
        if !(r.cca_range_m.is_finite() && r.cca_range_m >= 0.0) {
            return Err("radio.cca_range_m must be >= 0".into());
        }
        if let Some(c) = r.capture_db {
            if !c.is_finite() {
                return Err("radio.capture_db must be a number or null".into());
            }
        }
        if !pos(r.path_loss_exponent) {
            return Err("radio.path_loss_exponent must be positive".into());
        }
        let m = &self.mac;
        if m.min_be > m.max_be || m.max_be > 16 {
            return Err(format!("need mac.min_be ({}) <= mac.max_be ({}) <= 16", m.min_be, m.max_be));
        }
        if !(m.channel_check_rate_hz.is_finite() && m.channel_check_rate_hz > 0.0) {
            return Err("mac.channel_check_rate_hz must be positive".into());
        }
        if m.csma == CsmaMode::Contiki
            && (m.contiki_max_transmissions == 0 || m.contiki_max_backoff_exponent > 16 || m.contiki_timebase_us == 0)
        {
            return Err(
                "contiki CSMA needs contiki_max_transmissions >= 1, a positive time base and an exponent <= 16".into(),
            );
        }
        if m.queue_packets == 0 {
            return Err("mac.queue_packets must be at least 1".into());
        }
        if m.ack_wait_us < m.turnaround_us + self.airtime_us(m.ack_frame_bytes) {
            return Err(format!(
                "mac.ack_wait_us ({}) is shorter than turnaround + ACK airtime ({} µs)",
                m.ack_wait_us,
                m.turnaround_us + self.airtime_us(m.ack_frame_bytes)
            ));
        }
        if !(0.0..=1.0).contains(&self.routing.min_link_prr) || self.routing.min_link_prr == 0.0 {
            return Err("routing.min_link_prr must be in (0, 1]".into());
        }
        if let Some(mrm) = &r.mrm {
            mrm.validate()?;
        }
        self.mote.validate()?;
        m.nullrdc.validate()?;
        self.routing.rpl.validate(self.frame.max_psdu_bytes)?;
        let nullrdc_stack = m.csma == CsmaMode::Contiki && m.rdc == Rdc::None;
        if r.mrm.is_some() && m.rdc == Rdc::Contikimac {
            return Err(
                "radio.mrm with mac.rdc = contikimac is not modelled (strobed frames use the reception curve)".into()
            );
        }
        if self.mote.cpu && !nullrdc_stack {
            return Err("mote.cpu needs Contiki's nullrdc stack: mac.csma = contiki and mac.rdc = none".into());
        }
        if self.routing.rpl.control && !nullrdc_stack {
            return Err(
                "routing.rpl.control needs Contiki's nullrdc stack (broadcast DIOs): mac.csma = contiki and mac.rdc = none"
                    .into(),
            );
        }
        Ok(())
    }

    /// Whether the network runs Contiki's `csma.c` over `nullrdc` (`mac.csma = contiki`, `mac.rdc
    /// = none`): per-neighbour queues, `nullrdc`'s sending and, with `mote.cpu`, the motes'
    /// processor and receive FIFO (`net/contiki.rs`).
    pub fn nullrdc_stack(&self) -> bool {
        self.mac.csma == CsmaMode::Contiki && self.mac.rdc == Rdc::None
    }

    /// Check the mesh study's application fields (`app`, `traffic`, `cc`, sizes).
    fn validate_app(&self) -> Result<(), String> {
        let a = &self.app;
        if a.unit_bytes == 0 {
            return Err("app.unit_bytes must be positive".into());
        }
        if a.unit_mode == UnitMode::Block1 && !(a.unit_bytes.is_power_of_two() && (16..=1024).contains(&a.unit_bytes)) {
            return Err(format!("Block1 units must be 16, 32, ..., 1024 bytes, got {}", a.unit_bytes));
        }
        if !(a.background_period_s.is_finite() && a.background_period_s >= 0.001) {
            return Err("app.background_period_s must be at least 0.001 s".into());
        }
        if self.message_bytes == 0 || a.background_bytes == 0 {
            return Err("message sizes must be positive".into());
        }
        let traffic = Traffic::parse(&self.traffic)?;
        coapcc_cc::AlgorithmConfig::parse(&self.cc).map_err(|e| format!("bad --cc {:?}: {e}", self.cc))?;
        // The largest request must fit one 802.15.4 frame.
        let largest = match (a.unit_mode, traffic) {
            (UnitMode::Message, Traffic::Events { size_bytes, .. }) => size_bytes.max(a.background_bytes),
            (UnitMode::Message, _) => self.message_bytes,
            _ => a.unit_bytes,
        };
        let psdu = self.request_psdu(largest, 4096);
        if psdu > self.frame.max_psdu_bytes {
            return Err(format!(
                "a request of {largest} payload bytes needs a {psdu}-byte 802.15.4 frame, above the {}-byte limit \
                 (6LoWPAN fragmentation is not modelled): use smaller units",
                self.frame.max_psdu_bytes
            ));
        }
        Ok(())
    }

    /// Airtime of a PSDU of `psdu` bytes plus the PHY header, µs (rounded up).
    pub fn airtime_us(&self, psdu: u32) -> u32 {
        let bits = (psdu + self.radio.phy_header_bytes) as u64 * 8 * 1_000_000;
        bits.div_ceil(self.radio.bitrate_bps as u64) as u32
    }

    /// Bytes below CoAP: MAC header and FCS, 6LoWPAN IPv6 and UDP, RPL option.
    fn lower_bytes(&self) -> u32 {
        let f = &self.frame;
        f.mac_header_bytes + f.lowpan_ipv6_bytes + f.lowpan_udp_bytes + f.rpl_option_bytes
    }

    /// Size of the Block1 option carrying block `num` (option header with extended delta,
    /// plus the minimal-length value), bytes; 0 unless `unit_mode` is `block1`.
    fn block1_bytes(&self, num: u32) -> u32 {
        if self.app.unit_mode != UnitMode::Block1 {
            return 0;
        }
        let value = (num << 4) | 0x8 | (self.app.unit_bytes.trailing_zeros() - 4);
        let len = if value == 0 { 0 } else { 4 - value.leading_zeros() / 8 };
        2 + len
    }

    /// PSDU of a request carrying `payload` bytes as unit `num`.
    pub fn request_psdu(&self, payload: u32, num: u32) -> u32 {
        let f = &self.frame;
        self.lower_bytes()
            + f.coap_header_bytes
            + f.coap_token_bytes
            + f.coap_request_option_bytes
            + self.block1_bytes(num)
            + 1
            + payload
    }

    /// PSDU of the piggybacked response (2.04 Changed or 2.31 Continue, no payload) to unit
    /// `num`.
    pub fn response_psdu(&self, num: u32) -> u32 {
        let f = &self.frame;
        self.lower_bytes() + f.coap_header_bytes + f.coap_token_bytes + self.block1_bytes(num)
    }
}

/// Set the field at dotted `key` of `this` from text: the value is read as JSON if it parses
/// (numbers, `true`, `null`), else as a string; `unknown` words the error for a key that
/// names no field.
fn set_dotted<T: Serialize + serde::de::DeserializeOwned>(
    this: &mut T,
    key: &str,
    value: &str,
    unknown: impl Fn() -> String,
) -> Result<(), String> {
    let mut root = serde_json::to_value(&*this).map_err(|e| e.to_string())?;
    let mut slot = &mut root;
    for part in key.trim().split('.') {
        slot = slot.as_object_mut().and_then(|o| o.get_mut(part)).ok_or_else(&unknown)?;
    }
    *slot = serde_json::from_str(value.trim()).unwrap_or_else(|_| serde_json::Value::String(value.trim().into()));
    *this = serde_json::from_value(root).map_err(|e| format!("bad value {value:?} for {key}: {e}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_sizes_follow_the_layers() {
        let c = MeshConfig::default();
        // 23 MAC + 3 IPHC + 7 UDP + 8 RPL + 4 CoAP + 2 token + 4 Uri-Path + 1 marker + 32.
        assert_eq!(c.request_psdu(32, 0), 84);
        assert_eq!(c.response_psdu(0), 47);
        // 90 bytes with the PHY header at 32 µs per byte.
        assert_eq!(c.airtime_us(84), 2880);
        let mut b = c.clone();
        b.app.unit_mode = UnitMode::Block1;
        // Block1 NUM 0, M, SZX 1 (32 B): value 0x09, one byte, plus a 2-byte option header.
        assert_eq!(b.request_psdu(32, 0), 87);
        assert_eq!(b.request_psdu(32, 16), 88);
    }

    #[test]
    fn set_and_validate_give_clear_errors() {
        let mut c = MeshConfig::default();
        c.set("radio.capture_db", "null").unwrap();
        assert_eq!(c.radio.capture_db, None);
        c.set("routing.objective", "hops").unwrap();
        assert_eq!(c.routing.objective, Objective::Hops);
        assert!(c.set("radio.nope", "1").unwrap_err().contains("unknown parameter"));
        assert!(c.set("mac.min_be", "-1").unwrap_err().contains("bad value"));
        c.mac.min_be = 6;
        assert!(c.validate().unwrap_err().contains("min_be"));
        let mut c = MeshConfig::default();
        c.app.unit_mode = UnitMode::Message;
        c.message_bytes = 96;
        assert!(c.validate().unwrap_err().contains("fragmentation"));
        assert!(Traffic::parse("periodic:-1").is_err());
        assert!(Traffic::parse("events:600").is_err());
        assert_eq!(Traffic::parse("events:600,192"), Ok(Traffic::Events { tb_s: 600.0, size_bytes: 192 }));
    }
}
