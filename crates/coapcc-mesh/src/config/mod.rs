//! [`MeshNetConfig`]: the configuration of a mesh network (positions, radio, MAC, frame sizes,
//! routing), with its defaults, the published experiments' presets
//! ([`MeshNetConfig::preset`]), `KEY=VALUE` setting ([`MeshNetConfig::set`]) and its check
//! ([`MeshNetConfig::validate`], typed errors: [`MeshNetError`]). The sections are in
//! [`layers`].
//!
//! Every choice the papers do not publish is a named field (ns-3 style attributes): the
//! defaults are our recommended resolution, and the `ancillotti-cooja` preset sets what
//! Ancillotti & Bruno's Cooja runs used where it is known. What runs over the network (the
//! workload, the CoAP algorithm, the duration, the seed) is the host's configuration
//! (`coapcc-sim`'s `SimConfig`).

use serde::{Deserialize, Serialize};

use crate::mote::MoteConfig;
use crate::mrm::MrmConfig;

pub mod layers;

pub use layers::{CsmaMode, Curve, FrameConfig, MacConfig, Objective, RadioConfig, Rdc, RoutingConfig};

/// Why a mesh configuration cannot run: the key at fault (dotted, relative to the
/// [`MeshNetConfig`]: `mac.min_be`, `topology`) and the problem. `Display` is one line,
/// `key: problem`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MeshNetError {
    /// The dotted key at fault.
    pub key: String,
    /// What is wrong with it.
    pub problem: String,
}

impl MeshNetError {
    /// The problem `problem` with key `key`.
    pub fn new(key: &str, problem: impl Into<String>) -> Self {
        MeshNetError { key: key.into(), problem: problem.into() }
    }
}

impl std::fmt::Display for MeshNetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.key, self.problem)
    }
}

impl std::error::Error for MeshNetError {}

/// A mesh network: positions, radio, MAC, frame sizes and routing. The random streams derive
/// from the host's seed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MeshNetConfig {
    /// Topology: `grid:N`, `grid:NxM`, `chain:N`, `ring:N`, `dumbbell:K,M` or `file:PATH`
    /// (see [`crate::topology`]; default `grid:3`).
    pub topology: String,
    /// Distance between neighbouring nodes of the generated topologies, metres.
    pub spacing_m: f64,
    /// Physical layer and radio medium.
    pub radio: RadioConfig,
    /// The MAC (`mac.csma = "contiki"` for Contiki's rules, `mac.rdc = "contikimac"` for duty
    /// cycling).
    pub mac: MacConfig,
    /// Header sizes of each layer: below CoAP (`mac_header_bytes`, `lowpan_*`,
    /// `rpl_option_bytes`, `max_psdu_bytes`) and of the message workload's CoAP units
    /// (`coap_*`).
    pub frame: FrameConfig,
    /// DODAG construction and forwarding (`sink`: where the server sits, default node 0).
    pub routing: RoutingConfig,
    /// The motes' processor and buffers.
    pub mote: MoteConfig,
}

impl Default for MeshNetConfig {
    fn default() -> Self {
        MeshNetConfig {
            topology: "grid:3".into(),
            spacing_m: 10.0,
            radio: RadioConfig::default(),
            mac: MacConfig::default(),
            frame: FrameConfig::default(),
            routing: RoutingConfig::default(),
            mote: MoteConfig::default(),
        }
    }
}

/// Preset names accepted by [`MeshNetConfig::preset`].
pub const PRESETS: &[&str] = &["ancillotti-cooja", "makarem2021", "ieee802154"];

impl MeshNetConfig {
    /// The network of a named preset on `topology`.
    ///
    /// `ieee802154`: the defaults, with the standard's unslotted CSMA/CA.
    ///
    /// `ancillotti-cooja`: Ancillotti & Bruno's Cooja grids. 250 kbit/s, no duty cycling,
    /// 10 m grid spacing, root at the centre, sink in a corner; Cooja's MRM tuned to 100 %
    /// reception at 10 m and a 20 m interference range ([`crate::mrm`]); the Sky and Z1
    /// motes' Contiki 3.0 stack: `csma.c` over `nullrdc` without link-layer ACKs,
    /// `QUEUEBUF_NUM` 4, 2 neighbour queues ([`crate::contiki`]), the emulated processor and
    /// receive FIFO ([`crate::mote`]), RPL's MRHOF without link ACKs (hop count) and its DIO
    /// and DAO traffic ([`crate::rpl`]).
    ///
    /// `makarem2021`: the same mesh with ContikiMAC-like duty cycling at 8 Hz (phase
    /// optimisation on); pick the topology (grid, ring, chain, dumbbell) per experiment.
    pub fn preset(name: &str, topology: &str) -> Result<MeshNetConfig, MeshNetError> {
        let mut c = MeshNetConfig { topology: topology.into(), ..MeshNetConfig::default() };
        match name.trim().to_ascii_lowercase().as_str() {
            "ieee802154" => {}
            "ancillotti-cooja" => {
                // Cooja's MRM, tuned to 100 % at 10 m and a 20 m interference range (crate::mrm).
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
            }
            "makarem2021" => {
                c.mac.csma = CsmaMode::Contiki;
                c.mac.rdc = Rdc::Contikimac;
            }
            other => {
                return Err(MeshNetError::new(
                    "preset",
                    format!("unknown mesh preset {other:?}; valid: {}", PRESETS.join(", ")),
                ))
            }
        }
        Ok(c)
    }

    /// Set one field from text: `KEY=VALUE` with a dotted key (`radio.capture_db=6`,
    /// `mac.queue_packets=4`). The value is read as JSON if it parses (numbers, `true`,
    /// `null`), else as a string.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), MeshNetError> {
        set_dotted(self, key, value)
    }

    /// Check every field; the first problem. (The topology, the root, the sink and the DODAG
    /// are checked when the network is built: [`crate::MeshNet::new`].)
    pub fn validate(&self) -> Result<(), MeshNetError> {
        let r = &self.radio;
        let pos = |x: f64| x.is_finite() && x > 0.0;
        if !pos(self.spacing_m) {
            return Err(MeshNetError::new("spacing_m", format!("must be positive, got {}", self.spacing_m)));
        }
        if r.bitrate_bps == 0 {
            return Err(MeshNetError::new("radio.bitrate_bps", "must be positive"));
        }
        if !pos(r.range_full_m) || !pos(r.interference_range_m) || r.interference_range_m < r.range_full_m {
            return Err(MeshNetError::new(
                "radio.range_full_m",
                format!(
                    "need 0 < radio.range_full_m ({}) <= radio.interference_range_m ({})",
                    r.range_full_m, r.interference_range_m
                ),
            ));
        }
        if !(r.cca_range_m.is_finite() && r.cca_range_m >= 0.0) {
            return Err(MeshNetError::new("radio.cca_range_m", "must be >= 0"));
        }
        if let Some(c) = r.capture_db {
            if !c.is_finite() {
                return Err(MeshNetError::new("radio.capture_db", "must be a number or null"));
            }
        }
        if !pos(r.path_loss_exponent) {
            return Err(MeshNetError::new("radio.path_loss_exponent", "must be positive"));
        }
        let m = &self.mac;
        if m.min_be > m.max_be || m.max_be > 16 {
            return Err(MeshNetError::new(
                "mac.min_be",
                format!("need mac.min_be ({}) <= mac.max_be ({}) <= 16", m.min_be, m.max_be),
            ));
        }
        if !(m.channel_check_rate_hz.is_finite() && m.channel_check_rate_hz > 0.0) {
            return Err(MeshNetError::new("mac.channel_check_rate_hz", "must be positive"));
        }
        if m.csma == CsmaMode::Contiki
            && (m.contiki_max_transmissions == 0 || m.contiki_max_backoff_exponent > 16 || m.contiki_timebase_us == 0)
        {
            return Err(MeshNetError::new(
                "mac.csma",
                "contiki CSMA needs contiki_max_transmissions >= 1, a positive time base and an exponent <= 16",
            ));
        }
        if m.queue_packets == 0 {
            return Err(MeshNetError::new("mac.queue_packets", "must be at least 1"));
        }
        if m.ack_wait_us < m.turnaround_us + self.airtime_us(m.ack_frame_bytes) {
            return Err(MeshNetError::new(
                "mac.ack_wait_us",
                format!(
                    "{} is shorter than turnaround + ACK airtime ({} µs)",
                    m.ack_wait_us,
                    m.turnaround_us + self.airtime_us(m.ack_frame_bytes)
                ),
            ));
        }
        if !(0.0..=1.0).contains(&self.routing.min_link_prr) || self.routing.min_link_prr == 0.0 {
            return Err(MeshNetError::new("routing.min_link_prr", "must be in (0, 1]"));
        }
        if let Some(mrm) = &r.mrm {
            mrm.validate().map_err(|e| MeshNetError::new("radio.mrm", e))?;
            if m.rdc == Rdc::Contikimac {
                return Err(MeshNetError::new(
                    "radio.mrm",
                    "MRM with mac.rdc = contikimac is not modelled (strobed frames use the reception curve)",
                ));
            }
        }
        self.mote.validate().map_err(|e| MeshNetError::new("mote", e))?;
        m.nullrdc.validate().map_err(|e| MeshNetError::new("mac.nullrdc", e))?;
        self.routing.rpl.validate(self.frame.max_psdu_bytes).map_err(|e| MeshNetError::new("routing.rpl", e))?;
        if self.mote.cpu && !self.nullrdc_stack() {
            return Err(MeshNetError::new(
                "mote.cpu",
                "needs Contiki's nullrdc stack: mac.csma = contiki and mac.rdc = none",
            ));
        }
        if self.routing.rpl.control && !self.nullrdc_stack() {
            return Err(MeshNetError::new(
                "routing.rpl.control",
                "needs Contiki's nullrdc stack (broadcast DIOs): mac.csma = contiki and mac.rdc = none",
            ));
        }
        Ok(())
    }

    /// Whether the network runs Contiki's `csma.c` over `nullrdc` (`mac.csma = contiki`, `mac.rdc
    /// = none`): per-neighbour queues, `nullrdc`'s sending and, with `mote.cpu`, the motes'
    /// processor and receive FIFO (`net/contiki.rs`).
    pub fn nullrdc_stack(&self) -> bool {
        self.mac.csma == CsmaMode::Contiki && self.mac.rdc == Rdc::None
    }

    /// Airtime of a PSDU of `psdu` bytes plus the PHY header, µs (rounded up).
    pub fn airtime_us(&self, psdu: u32) -> u32 {
        let bits = (psdu + self.radio.phy_header_bytes) as u64 * 8 * 1_000_000;
        bits.div_ceil(self.radio.bitrate_bps as u64) as u32
    }

    /// PSDU of a packet whose UDP payload (the CoAP message) is `coap_bytes`: MAC header and
    /// FCS, compressed IPv6 and UDP headers, RPL option, then the message.
    pub fn psdu_of_coap(&self, coap_bytes: u32) -> u32 {
        let f = &self.frame;
        f.mac_header_bytes + f.lowpan_ipv6_bytes + f.lowpan_udp_bytes + f.rpl_option_bytes + coap_bytes
    }
}

/// Set the field at dotted `key` of `this` from text: the value is read as JSON if it parses
/// (numbers, `true`, `null`), else as a string. Errors name the key.
pub fn set_dotted<T: Serialize + serde::de::DeserializeOwned>(
    this: &mut T,
    key: &str,
    value: &str,
) -> Result<(), MeshNetError> {
    let key = key.trim();
    let mut root = serde_json::to_value(&*this).map_err(|e| MeshNetError::new(key, e.to_string()))?;
    let mut slot = &mut root;
    for part in key.split('.') {
        slot = slot
            .as_object_mut()
            .and_then(|o| o.get_mut(part))
            .ok_or_else(|| MeshNetError::new(key, "unknown mesh parameter; see --print-config for the valid keys"))?;
    }
    *slot = serde_json::from_str(value.trim()).unwrap_or_else(|_| serde_json::Value::String(value.trim().into()));
    *this = serde_json::from_value(root).map_err(|e| MeshNetError::new(key, format!("bad value {value:?}: {e}")))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_sizes_follow_the_layers() {
        let c = MeshNetConfig::default();
        // 23 MAC + 3 IPHC + 7 UDP + 8 RPL + the CoAP message.
        assert_eq!(c.psdu_of_coap(43), 84);
        // 90 bytes with the PHY header at 32 µs per byte.
        assert_eq!(c.airtime_us(84), 2880);
    }

    #[test]
    fn set_and_validate_give_keyed_errors() {
        let mut c = MeshNetConfig::default();
        c.set("radio.capture_db", "null").unwrap();
        assert_eq!(c.radio.capture_db, None);
        c.set("routing.objective", "hops").unwrap();
        assert_eq!(c.routing.objective, Objective::Hops);
        let e = c.set("radio.nope", "1").unwrap_err();
        assert_eq!(e.key, "radio.nope");
        assert!(e.problem.contains("unknown mesh parameter"), "{e}");
        let e = c.set("mac.min_be", "-1").unwrap_err();
        assert_eq!(e.key, "mac.min_be");
        assert!(e.problem.contains("bad value"), "{e}");
        c.mac.min_be = 6;
        let e = c.validate().unwrap_err();
        assert_eq!(e.key, "mac.min_be");
        assert_eq!(e.to_string().lines().count(), 1);
        assert_eq!(MeshNetConfig::preset("nope", "grid:3").unwrap_err().key, "preset");
        let p = MeshNetConfig::preset("makarem2021", "ring:8").unwrap();
        assert_eq!((p.mac.csma, p.mac.rdc, p.topology.as_str()), (CsmaMode::Contiki, Rdc::Contikimac, "ring:8"));
    }
}
