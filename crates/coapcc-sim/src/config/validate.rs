//! The checks of a [`SimConfig`]: every field's range, the algorithms, the topology (access
//! links, mesh), the message workload, the memory a run needs. The first problem is a
//! [`ConfigError`] naming its field.

use coapcc_cc::AlgorithmConfig;

use super::*;
use crate::link;

/// Largest message of the message workload, bytes (1 MiB: thousands of 802.15.4 frames).
pub const MAX_MESSAGE_BYTES: u32 = 1 << 20;

/// A finite number in [0, `hi`], with the bound worded as Python words it (`must be finite`,
/// `must be >= 0`, `must be <= hi`).
fn check_range(field: &str, v: f64, hi: f64) -> Result<(), ConfigError> {
    if !v.is_finite() {
        return Err(invalid(field, format!("must be finite, got {v}")));
    }
    let shown = crate::params::json::py_g(v);
    if v < 0.0 {
        return Err(invalid(field, format!("must be >= 0, got {shown}")));
    }
    if v > hi {
        return Err(invalid(field, format!("must be <= {hi:e}, got {shown}")));
    }
    Ok(())
}

impl SimConfig {
    /// Check the whole configuration; the error names the field and the problem.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.topology.mesh.is_some() && self.transport == Transport::Tcp {
            return Err(invalid("topology.mesh", "the mesh topology carries CoAP over UDP (transport = udp)"));
        }
        if self.transport == Transport::Tcp {
            return crate::engine::tcp_configs(self).map(|_| ());
        }
        self.algorithms().map(|_| ())
    }

    /// Parse every group's algorithm and check everything else: the algorithms, in group
    /// order.
    pub fn algorithms(&self) -> Result<Vec<AlgorithmConfig>, ConfigError> {
        let algs = self.group_algorithms(&CustomAlgorithms::new())?;
        Ok(algs.iter().map(GroupAlg::config).collect())
    }

    /// As [`SimConfig::algorithms`], with the custom algorithms of `custom` (a group whose
    /// `cc` is a custom name gets that algorithm).
    pub(crate) fn group_algorithms(&self, custom: &CustomAlgorithms) -> Result<Vec<GroupAlg>, ConfigError> {
        if self.groups.is_empty() {
            return Err(invalid("groups", "at least one client group is needed"));
        }
        let mut algs = Vec::with_capacity(self.groups.len());
        for (i, g) in self.groups.iter().enumerate() {
            if let Some(f) = custom.get(&g.cc) {
                algs.push(GroupAlg::Custom(f.clone()));
                continue;
            }
            let alg_err = |message: String| ConfigError::Algorithm { group: i, message };
            let (label, spec) = split_label(&g.cc);
            if label.is_some_and(|l| l.is_empty() || l.contains(',')) {
                return Err(alg_err(format!("bad label in '{}': expected LABEL=NAME[:key=value,...]", g.cc)));
            }
            if let Some((_, params)) = spec.split_once(':') {
                if !params.trim().is_empty() && params.split(',').any(|p| p.trim().is_empty()) {
                    return Err(alg_err(format!(
                        "empty key=value item in '{spec}': expected NAME[:key=value,...] without empty items"
                    )));
                }
            }
            let a = AlgorithmConfig::parse(spec).map_err(|e| alg_err(e.to_string()))?;
            if let Some(t) = a.shared_value("ack_timeout").and_then(|v| v.to_string().parse::<f64>().ok()) {
                if t.is_nan() || t < MIN_ACK_TIMEOUT_S {
                    return Err(alg_err(format!(
                        "ack_timeout {t:e} s: must be >= {MIN_ACK_TIMEOUT_S} s (a shorter timer fires before any packet crosses the link)"
                    )));
                }
            }
            algs.push(GroupAlg::Registry(a));
        }
        let total: u64 = self.groups.iter().map(|g| g.clients as u64).sum();
        if total == 0 {
            return Err(invalid("groups", "zero clients: at least one group needs clients > 0"));
        }
        if total > MAX_CLIENTS {
            return Err(invalid("groups", format!("clients in total must be <= {MAX_CLIENTS}, got {total}")));
        }
        let w = &self.workload;
        if w.exchanges == 0 {
            return Err(invalid("workload.exchanges", "must be >= 1, got 0"));
        }
        if w.batch_min == 0 || w.batch_min > w.batch_max {
            return Err(invalid(
                "workload.batch_min",
                format!("batch sizes need 1 <= batch_min <= batch_max (got {}..{})", w.batch_min, w.batch_max),
            ));
        }
        check_range("workload.start_jitter_ms", w.start_jitter_ms, 1e12)?;
        if let WorkloadKind::Bulk(b) = w.kind {
            // Block2 numbers blocks with 20 bits: at most 2^20 blocks of 256 B.
            if b == 0 || b > 1 << 28 {
                return Err(invalid("workload.kind", format!("bulk:{b}: over UDP the size must be 1 to 2^28 bytes")));
            }
        }
        let c = &self.coap;
        if c.ip_version != 4 && c.ip_version != 6 {
            return Err(invalid("coap.ip_version", format!("{} is not 4 or 6", c.ip_version)));
        }
        if c.token_len > 8 {
            return Err(invalid("coap.token_len", format!("{} exceeds the CoAP maximum of 8", c.token_len)));
        }
        if c.token_len == 0 && self.endpoint.model == EndpointModel::Full {
            return Err(invalid("coap.token_len", "the full endpoint model needs a token of 1 to 8 bytes"));
        }
        if c.clock_tick_ns > 0 && (self.endpoint.model == EndpointModel::Full || self.transport != Transport::Udp) {
            return Err(invalid("coap.clock_tick_ns", "a clock tick needs the compact endpoint model over UDP"));
        }
        if c.clock_tick_ns > 1_000_000_000 {
            return Err(invalid("coap.clock_tick_ns", format!("{} ns is more than a second", c.clock_tick_ns)));
        }
        let mtu = self.link.mtu_bytes;
        let (req, resp) = (c.request_bytes() as u64, c.response_bytes() as u64);
        if req > mtu as u64 {
            return Err(invalid("coap.uri_path", format!("the request is {req} B, larger than the {mtu} B MTU")));
        }
        if resp > mtu as u64 {
            return Err(invalid(
                "coap.response_payload_bytes",
                format!("the response is {resp} B, larger than the {mtu} B MTU"),
            ));
        }
        for (name, chain) in [("link.uplink", &self.link.uplink), ("link.downlink", &self.link.downlink)] {
            link::validate_chain(chain, req.max(resp) as u32).map_err(|e| invalid(name, e))?;
        }
        self.validate_access_links(req.max(resp) as u32)?;
        if let Some(m) = &self.topology.mesh {
            self.validate_mesh(m, req as u32, resp as u32)?;
        }
        self.validate_messages()?;
        let s = &self.server;
        check_range("server.processing_delay_ms", s.processing_delay_ms, 1e12)?;
        if self.max_sim_time_s <= 0.0 {
            return Err(invalid("max_sim_time_s", format!("must be > 0, got {}", self.max_sim_time_s)));
        }
        check_range("max_sim_time_s", self.max_sim_time_s, 1e9)?;
        if self.max_events == Some(0) {
            return Err(invalid("max_events", "must be >= 1"));
        }
        let need = self.memory_estimate();
        if need > MAX_MEMORY_BYTES {
            return Err(invalid(
                "groups",
                format!(
                    "{total} clients x {} exchanges with the {} endpoint model need about {} MB of memory, more than the limit of {} MB; use fewer clients or exchanges{}",
                    w.exchanges,
                    if self.endpoint.model == EndpointModel::Full { "full" } else { "compact" },
                    need >> 20,
                    MAX_MEMORY_BYTES >> 20,
                    if self.endpoint.model == EndpointModel::Full { ", or the compact endpoint model" } else { "" }
                ),
            ));
        }
        Ok(algs)
    }

    /// Check `topology.access_links`: each group behind at most one, every chain valid for
    /// packets of up to `largest` IP bytes (both transports).
    pub(crate) fn validate_access_links(&self, largest: u32) -> Result<(), ConfigError> {
        let access = &self.topology.access_links;
        if access.len() > MAX_ACCESS_LINKS {
            return Err(invalid("topology.access_links", format!("at most {MAX_ACCESS_LINKS} access links")));
        }
        let mut placed = vec![false; self.groups.len()];
        for (k, a) in access.iter().enumerate() {
            for &g in &a.groups {
                let field = format!("topology.access_links[{k}].groups");
                match placed.get_mut(g as usize) {
                    None => return Err(invalid(&field, format!("group {g} does not exist"))),
                    Some(true) => return Err(invalid(&field, format!("group {g} is already placed"))),
                    Some(p) => *p = true,
                }
            }
            for (dir, chain) in [("uplink", &a.uplink), ("downlink", &a.downlink)] {
                link::validate_chain(chain, largest)
                    .map_err(|e| invalid(&format!("topology.access_links[{k}].{dir}"), e))?;
            }
        }
        Ok(())
    }

    /// Check `topology.mesh` (the flow workloads' request and response of `req`/`resp` IP
    /// bytes; the message workload's units are checked with it, [`SimConfig::validate_messages`]).
    fn validate_mesh(&self, m: &coapcc_mesh::MeshNetConfig, req: u32, resp: u32) -> Result<(), ConfigError> {
        let field = "topology.mesh";
        if !self.topology.access_links.is_empty() {
            return Err(invalid(field, "a mesh topology has no access links (topology.access_links must be empty)"));
        }
        if self.endpoint.model != EndpointModel::Compact {
            return Err(invalid(field, "the mesh topology runs the compact endpoint model (endpoint.model = compact)"));
        }
        let net = coapcc_mesh::MeshNet::<u32>::new(m, self.seed).map_err(mesh_error)?;
        let (n, root, sink) = (net.topology().len(), net.dodag().root, net.sink());
        if (0..n).all(|v| v == root || v == sink) {
            return Err(invalid(
                "topology.mesh.topology",
                format!("the topology has no node for a client besides the root ({root}) and the sink ({sink})"),
            ));
        }
        if self.workload.kind.is_messages() {
            return Ok(());
        }
        for (what, ip) in [("request", req), ("response", resp)] {
            let psdu = m.psdu_of_coap(ip - crate::message_sizes::ip_len(0, self.coap.ip_version) as u32);
            if psdu > m.frame.max_psdu_bytes {
                return Err(invalid(
                    "topology.mesh.frame.max_psdu_bytes",
                    format!("the {what} needs a {psdu}-byte 802.15.4 frame, above frame.max_psdu_bytes = {} (6LoWPAN fragmentation is not modelled)", m.frame.max_psdu_bytes),
                ));
            }
        }
        Ok(())
    }

    /// Check the message workload (`workload.kind` = `periodic`, `events` or `none`, and
    /// `workload.messages`).
    fn validate_messages(&self) -> Result<(), ConfigError> {
        let kind = self.workload.kind;
        let Some(mc) = self.workload.messages.as_ref().filter(|_| kind.is_messages()) else {
            if self.workload.messages.is_some() {
                return Err(invalid(
                    "workload.messages",
                    format!("applies to the message workloads (periodic, events, none), not to {kind}"),
                ));
            }
            return if kind.is_messages() { self.with_messages_defaults().validate_messages() } else { Ok(()) };
        };
        let Some(m) = &self.topology.mesh else {
            return Err(invalid(
                "workload.kind",
                format!("{kind} runs over a mesh (topology.mesh): its units are sized as the mesh's frames"),
            ));
        };
        if self.transport != Transport::Udp {
            return Err(invalid("workload.kind", format!("{kind} runs over UDP (transport = udp)")));
        }
        match kind {
            WorkloadKind::Periodic { load_kbps } if !(load_kbps.is_finite() && load_kbps > 0.0) => {
                return Err(invalid(
                    "workload.kind",
                    format!("periodic: the load must be a positive number of kbit/s, got {load_kbps}"),
                ));
            }
            WorkloadKind::Events { tb_s, size_bytes } if !(tb_s.is_finite() && tb_s >= 0.001) || size_bytes == 0 => {
                return Err(invalid(
                    "workload.kind",
                    format!("events: needs tb_s >= 0.001 and size_bytes > 0, got {tb_s}, {size_bytes}"),
                ));
            }
            _ => {}
        }
        let key = |k: &str| format!("workload.messages.{k}");
        if mc.unit_bytes == 0 {
            return Err(invalid(&key("unit_bytes"), "must be positive"));
        }
        if mc.unit_mode == UnitMode::Block1
            && !(mc.unit_bytes.is_power_of_two() && (16..=1024).contains(&mc.unit_bytes))
        {
            return Err(invalid(
                &key("unit_bytes"),
                format!("Block1 units must be 16, 32, ..., 1024 bytes, got {}", mc.unit_bytes),
            ));
        }
        if !(mc.background_period_s.is_finite() && mc.background_period_s >= 0.001) {
            return Err(invalid(&key("background_period_s"), "must be at least 0.001 s"));
        }
        // A message is cut into units, each with its state: bound the size before any count
        // is derived from it.
        for (name, v) in [("message_bytes", mc.message_bytes), ("background_bytes", mc.background_bytes)] {
            if !(1..=MAX_MESSAGE_BYTES).contains(&v) {
                return Err(invalid(&key(name), format!("must be 1 to {MAX_MESSAGE_BYTES} bytes, got {v}")));
            }
        }
        let rng = coapcc_cc::SplitMix64::new(0);
        crate::workload::messages::Messages::new(kind, mc, self.total_clients() as usize, rng)
            .map_err(|e| invalid("workload.kind", e))?;
        // The largest request must fit one 802.15.4 frame.
        let largest = crate::workload::messages::Messages::largest_unit(mc, kind);
        let sizes = crate::workload::messages::UnitSizes::new(mc, &m.frame);
        let psdu = m.psdu_of_coap(sizes.request_len(largest, 4096));
        if psdu > m.frame.max_psdu_bytes {
            return Err(invalid(
                &key(if mc.unit_mode == UnitMode::Message { "unit_mode" } else { "unit_bytes" }),
                format!(
                    "a request of {largest} payload bytes needs a {psdu}-byte 802.15.4 frame, above the {}-byte limit \
                     (6LoWPAN fragmentation is not modelled): use smaller units",
                    m.frame.max_psdu_bytes
                ),
            ));
        }
        Ok(())
    }
}
