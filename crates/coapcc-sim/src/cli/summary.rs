//! The human summary `coapcc simulate` prints without `--json`: one line per group, the
//! message workload's metrics, the shared parameters side by side, the links or the mesh.

use std::fmt::Write as _;

use crate::config::{EndpointModel, SimConfig, Transport, WorkloadKind, DEFAULT_BUFFER_BYTES};
use crate::link::{LossModel, StageConfig};
use crate::report::SimReport;

fn describe_chain(chain: &[StageConfig]) -> (Option<u64>, String) {
    let mut buffer = None;
    let mut loss = String::from("none");
    for st in chain {
        match st {
            StageConfig::Rate(r) => {
                buffer.get_or_insert(r.buffer_bytes);
            }
            StageConfig::Loss(m) => {
                loss = match m {
                    LossModel::None => "none".into(),
                    LossModel::Bernoulli { p } => format!("bernoulli {p}"),
                    LossModel::GilbertElliott { p, r, loss_low, loss_burst } => {
                        format!("GE/packet p={p:.4} r={r:.4} loss {loss_low}/{loss_burst}")
                    }
                    LossModel::GilbertElliottTime { low_mean_s, burst_mean_s, loss_low, loss_burst } => {
                        format!("GE/time T_L={low_mean_s:.3}s T_B={burst_mean_s}s loss {loss_low}/{loss_burst}")
                    }
                }
            }
            _ => {}
        }
    }
    (buffer, loss)
}

/// Whether `c` (a run's resolved configuration) ran with the default, work-scaled time bound
/// rather than one the user gave.
pub(super) fn default_bound(c: &SimConfig) -> bool {
    let mut d = c.clone();
    d.max_sim_time_s = crate::config::DEFAULT_MAX_SIM_TIME_S;
    d.scaled_time_bound() == c.max_sim_time_s
}

/// The human summary printed without `--json`.
pub fn summary(r: &SimReport) -> String {
    let c = &r.config;
    let mut s = String::new();
    let (buffer, loss) = describe_chain(&c.link.downlink);
    let kind = match c.workload.kind {
        WorkloadKind::Continuous => "continuous".to_string(),
        WorkloadKind::Random => "random".to_string(),
        WorkloadKind::Bulk(_) => "bulk".to_string(),
        k => k.to_string(),
    };
    let exchanges = match c.workload.kind {
        WorkloadKind::Bulk(b) => format!("one GET of {b} B"),
        k if k.is_messages() => format!("{} s", c.max_sim_time_s),
        _ => format!("{} exchanges", c.workload.exchanges),
    };
    let path = match &c.topology.mesh {
        Some(m) => format!("mesh {}", m.topology),
        None => format!("buffer {} B, errors {}", buffer.unwrap_or(DEFAULT_BUFFER_BYTES), loss),
    };
    let _ = writeln!(
        s,
        "seed {}: {}, {} x {}, {}{}{}",
        c.seed,
        plural(c.total_clients() as u64, "client"),
        kind,
        exchanges,
        path,
        match (c.transport, c.endpoint.model) {
            (Transport::Tcp, _) => ", CoAP over TCP",
            (_, EndpointModel::Full) => ", full endpoints",
            _ => "",
        },
        // An open-loop workload always runs to the bound: its duration.
        if r.truncated && r.messages.is_none() {
            format!(
                " -- TRUNCATED: the run reached max_sim_time_s ({} s) before every flow finished ({})",
                c.max_sim_time_s,
                if default_bound(c) {
                    "the default bound, 20 times the time the bottleneck needs to carry every exchange once: \
                     the population could not finish, not a bound set too short"
                } else {
                    "the bound given; raise --max-sim-time-s to let every flow finish"
                }
            )
        } else {
            String::new()
        }
    );
    let names: Vec<String> = r
        .groups
        .iter()
        .map(|g| g.label.clone().unwrap_or_else(|| g.cc.split(':').next().unwrap_or(&g.cc).to_string()))
        .collect();
    for (g, name) in r.groups.iter().zip(&names) {
        let exchanges = g.completed_exchanges + g.failed_exchanges;
        let _ = write!(s, "group {} {} ({}): ", g.group, name, plural(g.clients as u64, "client"));
        match &g.fct_s {
            Some(f) => {
                let _ = write!(s, "FCT median {:.2} s, p10 {:.2} s, p90 {:.2} s", f.median, f.p10, f.p90);
            }
            None => s.push_str("no flow finished"),
        }
        let _ = writeln!(
            s,
            "; finished {}/{}; {} ({:.3}/exchange, {} unnecessary); {}",
            g.finished_flows,
            g.clients,
            plural(g.retransmissions, "retransmission"),
            if exchanges > 0 { g.retransmissions as f64 / exchanges as f64 } else { 0.0 },
            g.unnecessary_retransmissions,
            plural(g.failed_exchanges, "failed exchange")
        );
    }
    if let Some(m) = &r.messages {
        let _ = writeln!(
            s,
            "messages: PLR mean {:.4} max {:.4}; lost {} to no caching, {} to give-ups; retransmissions/unit mean {:.3}; early retransmissions mean {:.3}{}",
            m.plr_mean,
            m.plr_max,
            m.lost_no_caching,
            m.lost_give_up,
            m.retransmissions_per_unit_mean,
            m.early_retransmissions_mean,
            m.unit_rtt_s.map_or(String::new(), |u| format!("; unit RTT median {:.3} s", u.median))
        );
    }
    s.push_str(&shared_table(r, &names));
    let mut links = vec![("downlink".to_string(), &r.links.downlink), ("uplink".to_string(), &r.links.uplink)];
    for (k, a) in r.access_links.iter().enumerate() {
        let groups: Vec<String> = a.groups.iter().map(|g| g.to_string()).collect();
        let at = format!("access link {} (groups {})", k + 1, groups.join(", "));
        links.push((format!("{at} downlink"), &a.links.downlink));
        links.push((format!("{at} uplink"), &a.links.uplink));
    }
    if let Some(m) = &r.mesh {
        let _ = writeln!(
            s,
            "mesh: {} nodes (sink {}, root {}), clients {}-{} hops away; {} data frames, {} collisions, {} busy CCAs; {} dropped (queue {}, no MAC ACK {}, channel access {})",
            m.nodes,
            m.sink,
            m.root,
            m.client_hops.iter().min().unwrap_or(&0),
            m.client_hops.iter().max().unwrap_or(&0),
            m.mac.data_tx,
            m.mac.collisions,
            m.mac.cca_busy,
            m.conservation.dropped,
            m.drops.buffer_overflow + m.drops.neighbor_queues_full,
            m.drops.mac_no_ack,
            m.drops.mac_channel_access
        );
        links.clear(); // the links carry nothing in a mesh run
    }
    for (name, l) in links {
        let _ = writeln!(
            s,
            "{name}: utilisation {:.1} %, {} offered, {}, {}",
            100.0 * l.busy_fraction,
            plural(l.offered_packets, "packet"),
            plural(l.buffer_drop_packets, "buffer drop"),
            plural(l.error_loss_packets, "error loss")
        );
    }
    let speed = if r.wall_s > 0.0 { r.sim_time_s / r.wall_s } else { 0.0 };
    let _ = writeln!(
        s,
        "{}simulated {:.1} s in {:.3} s ({:.0}x), {}; ended: {}",
        // The links carry nothing in a mesh run.
        if r.mesh.is_some() { String::new() } else { format!("useful downlink fraction {:.3}; ", r.useful_fraction) },
        r.sim_time_s,
        r.wall_s,
        speed,
        plural(r.events, "event"),
        match (r.messages.is_some(), r.truncated) {
            (true, _) => "the run's duration (max_sim_time_s)",
            (false, true) => "max_sim_time_s reached",
            (false, false) => "every flow finished",
        }
    );
    s
}

/// `1 client`, `2 clients` (`loss` -> `losses`).
fn plural(n: u64, noun: &str) -> String {
    match (n, noun.ends_with('s')) {
        (1, _) => format!("{n} {noun}"),
        (_, true) => format!("{n} {noun}es"),
        _ => format!("{n} {noun}s"),
    }
}

/// The resolved shared transmission parameters of every group side by side, one row per
/// parameter of [`coapcc_cc::SHARED_PARAMS`]; a row whose values differ is marked. A group
/// that is not a registry algorithm shows `-`.
fn shared_table(r: &SimReport, names: &[String]) -> String {
    let algs: Vec<Option<coapcc_cc::AlgorithmConfig>> =
        r.groups.iter().map(|g| coapcc_cc::AlgorithmConfig::parse(&g.cc).ok()).collect();
    let mut rows: Vec<Vec<String>> = vec![std::iter::once("shared parameters".to_string())
        .chain(r.groups.iter().zip(names).map(|(g, n)| format!("{} {n}", g.group)))
        .collect()];
    let mut differs = vec![false];
    for p in coapcc_cc::SHARED_PARAMS {
        let vals: Vec<String> = algs
            .iter()
            .map(|a| a.as_ref().and_then(|a| a.shared_value(p.name)).map_or("-".into(), |v| v.to_string()))
            .collect();
        differs.push(vals.iter().any(|v| v != &vals[0]));
        rows.push(std::iter::once(p.name.to_string()).chain(vals).collect());
    }
    let widths: Vec<usize> =
        (0..rows[0].len()).map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0)).collect();
    let mut s = String::new();
    for (row, d) in rows.iter().zip(differs) {
        let mut line = String::new();
        for (i, (cell, w)) in row.iter().zip(&widths).enumerate() {
            let _ = write!(line, "{}{cell:<w$}", if i > 0 { "  " } else { "" });
        }
        let line = line.trim_end();
        let _ = writeln!(s, "{line}{}", if d { "  <- differs" } else { "" });
    }
    s
}
