//! The emulator object: two namespaces, two TUN devices, two forwarder threads.
//!
//! ```text
//!  netns coapcc-emu-<pid>-<n>-c                      netns coapcc-emu-<pid>-<n>-s
//!  ┌──────────────────────────┐                      ┌──────────────────────────┐
//!  │ clients                  │                      │ server                   │
//!  │ emu0 198.18.0.1  (TUN) ──┼─ fd ─► uplink  ─ fd ─┼─► emu0 198.18.0.2 (TUN)  │
//!  │                        ◄─┼─ fd ── downlink ◄ fd ┼──                        │
//!  └──────────────────────────┘   (this process)     └──────────────────────────┘
//! ```
//!
//! Each TUN device is created in the emulator's namespace, moved into its namespace and
//! renamed `emu0`; the emulator keeps the descriptors. Closing them destroys the devices, so
//! even a killed emulator leaves no interface behind (the namespaces themselves are removed
//! by [`Emulator`]'s drop, or by the stale-namespace cleanup of the next run).

use std::net::{Ipv4Addr, Ipv6Addr};
use std::os::fd::{AsRawFd, OwnedFd};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use coapcc_link::{
    self as link, Link, LinkCounters, LossModel, StageConfig, DEFAULT_BUFFER_BYTES, STREAM_DOWNLINK, STREAM_UPLINK,
    TESTBED_MTU,
};
use serde::{Deserialize, Serialize};

use crate::forward::{DirOptions, DirState, Direction, Fds, FlowDir, FlowKey, Lateness, TraceRecord};
use crate::netns::{self, NetnsPair};
use crate::sys;

/// IPv4 address of the client side.
pub const CLIENT_ADDR: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 1);
/// IPv4 address of the server side.
pub const SERVER_ADDR: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 2);
/// IPv6 address of the client side (configured only when the MTU is at least 1280).
pub const CLIENT_ADDR6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0x198, 0x18, 0, 0, 0, 0, 1);
/// IPv6 address of the server side.
pub const SERVER_ADDR6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0x198, 0x18, 0, 0, 0, 0, 2);
/// Name of the emulated interface in both namespaces.
pub const IFNAME: &str = "emu0";
/// Largest busy-wait before a delivery, µs (1 s).
pub const MAX_SPIN_US: u64 = 1_000_000;
/// Linux's minimum MTU for IPv6.
pub const IPV6_MIN_MTU: u32 = 1280;

/// TCP settings applied in both namespaces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TcpProfile {
    /// The Helsinki CoAP-over-TCP study's Linux settings (`helsinki2018`, also called
    /// `testbed`): the sysctls of [`TESTBED_SYSCTLS`] (SACK, F-RTO, timestamps, TLP/RACK and
    /// Fast Open off, no metrics caching, SYN retries 40, SYN/ACK retries 41, exponential SYN
    /// backoff, minimum RTO 200 ms, maximum RTO 120 s) and, on the route to the peer,
    /// `initcwnd 4`, `rto_min 200ms` and `congctl` = the congestion control.
    #[serde(alias = "helsinki2018")]
    Testbed,
    /// Leave the kernel's defaults (only the congestion control is set).
    Kernel,
}

impl TcpProfile {
    /// Parse `helsinki2018` / `testbed` or `kernel`.
    pub fn parse(s: &str) -> Result<TcpProfile> {
        match s {
            "helsinki2018" | "testbed" => Ok(TcpProfile::Testbed),
            "kernel" => Ok(TcpProfile::Kernel),
            o => bail!("TCP profile '{o}' is not helsinki2018 (alias testbed) or kernel"),
        }
    }
}

/// The sysctls of [`TcpProfile::Testbed`], written in both namespaces (each network namespace
/// has its own copy of these on Linux >= 4.15; the host's values are never touched).
/// `tcp_syn_linear_timeouts` (Linux >= 6.5: the first SYN retransmissions at a constant
/// timeout), `tcp_rto_min_us` (>= 6.11) and `tcp_rto_max_ms` (>= 6.15) are set to the 2018
/// kernels' fixed behaviour; on older kernels they do not exist, and a warning says so.
pub const TESTBED_SYSCTLS: &[(&str, &str)] = &[
    ("net.ipv4.tcp_sack", "0"),
    ("net.ipv4.tcp_frto", "0"),
    ("net.ipv4.tcp_no_metrics_save", "1"),
    ("net.ipv4.tcp_timestamps", "0"),
    ("net.ipv4.tcp_early_retrans", "0"),
    ("net.ipv4.tcp_recovery", "0"),
    ("net.ipv4.tcp_fastopen", "0"),
    ("net.ipv4.tcp_syn_retries", "40"),
    ("net.ipv4.tcp_synack_retries", "41"),
    ("net.ipv4.tcp_syn_linear_timeouts", "0"),
    ("net.ipv4.tcp_rto_min_us", "200000"),
    ("net.ipv4.tcp_rto_max_ms", "120000"),
];

/// Route attributes of [`TcpProfile::Testbed`] on the route to the peer (`congctl` is added
/// when a congestion control is set).
pub const TESTBED_ROUTE_ATTRS: &[&str] = &["initcwnd", "4", "rto_min", "200ms"];

/// The TCP settings in effect in one namespace, read back after they were applied.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TcpSettings {
    /// `net.ipv4.tcp_congestion_control` and every key of [`TESTBED_SYSCTLS`] that exists:
    /// (key, value read back).
    pub sysctls: Vec<(String, String)>,
    /// `ip route show <peer>`.
    pub route: String,
}

/// Everything that defines an emulator instance.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EmulatorConfig {
    /// Client → server chain (coapcc-link elements).
    pub uplink: Vec<StageConfig>,
    /// Server → client chain.
    pub downlink: Vec<StageConfig>,
    /// MTU of both interfaces and of the link model, bytes (default 296).
    pub mtu: u32,
    /// Seed of the link's random processes. Uplink element i draws from stream
    /// 0x100 + i and downlink element i from 0x200 + i, as in the simulator.
    pub seed: u64,
    /// `net.ipv4.tcp_congestion_control` in both namespaces (default `reno`; the host's
    /// default may be bbr). `None` leaves it alone.
    pub tcp_cc: Option<String>,
    /// Other TCP settings (default [`TcpProfile::Testbed`]).
    pub tcp_profile: TcpProfile,
    /// Initial RTO of the commands' TCP sockets, ms (the SYN/SYN-ACK timeout and the RTO
    /// before the first RTT sample; Linux's is 1 000), set by a BPF `sock_ops` program on a
    /// cgroup the commands run in ([`crate::bpf`]). Default 2 000 (the study's); `None`
    /// leaves the kernel's. Where BPF or cgroup v2 is unavailable this becomes a warning.
    pub tcp_init_rto_ms: Option<u32>,
    /// Run the forwarder threads with SCHED_FIFO when permitted (default true).
    pub realtime: bool,
    /// Busy-wait this many microseconds before each delivery instead of sleeping
    /// (default 100; 0 sleeps all the way and adds the timer's wake-up latency).
    pub spin_us: u64,
    /// Keep a per-packet record (entry, model delivery, actual write) in each direction's
    /// report (default false; at most 2^20 per direction).
    pub trace: bool,
}

impl Default for EmulatorConfig {
    fn default() -> Self {
        EmulatorConfig::testbed(DEFAULT_BUFFER_BYTES, LossModel::None)
    }
}

impl EmulatorConfig {
    /// The testbed link (spec §1) with `buffer_bytes` in both directions and `loss` on both.
    pub fn testbed(buffer_bytes: u64, loss: LossModel) -> Self {
        EmulatorConfig {
            uplink: link::testbed_uplink(buffer_bytes, loss.clone()),
            downlink: link::testbed_downlink(buffer_bytes, loss),
            mtu: TESTBED_MTU,
            seed: 1,
            tcp_cc: Some("reno".into()),
            tcp_profile: TcpProfile::Testbed,
            tcp_init_rto_ms: Some(2000),
            realtime: true,
            spin_us: 100,
            trace: false,
        }
    }

    /// Whether IPv6 is configured (it needs an MTU of at least 1280).
    pub fn ipv6(&self) -> bool {
        self.mtu >= IPV6_MIN_MTU
    }

    /// Check the chains (a buffer must hold one MTU-sized packet) and the MTU.
    pub fn validate(&self) -> Result<()> {
        if !(68..=65_535).contains(&self.mtu) {
            bail!("mtu = {} must be in 68..=65535 (IPv4 minimum 68)", self.mtu);
        }
        link::validate_chain(&self.uplink, self.mtu).map_err(|e| anyhow::anyhow!("uplink: {e}"))?;
        link::validate_chain(&self.downlink, self.mtu).map_err(|e| anyhow::anyhow!("downlink: {e}"))?;
        if self.spin_us > MAX_SPIN_US {
            bail!("spin_us = {} must be at most {MAX_SPIN_US} (1 s)", self.spin_us);
        }
        Ok(())
    }
}

/// Which namespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The clients' namespace (IoT devices, behind the constrained link).
    Client,
    /// The server's namespace (fixed host).
    Server,
}

/// Counters and timing of one direction.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DirectionReport {
    /// Packet and byte counters by fate (IP sizes), the link model's own: offered,
    /// delivered (or scheduled for delivery: fates are decided on entry), tail-dropped by the
    /// buffer, lost to link errors. Flattened into this object in JSON.
    #[serde(flatten)]
    pub counters: LinkCounters,
    /// Bytes serialised by the rate stage (including packets later lost to errors).
    pub serialised_bytes: u64,
    /// Serialisation time, seconds.
    pub busy_s: f64,
    /// busy_s / elapsed.
    pub utilisation: f64,
    /// Largest buffer occupancy, bytes.
    pub max_queue_bytes: u64,
    /// Packets larger than the MTU, refused (not offered).
    pub oversized_packets: u64,
    /// IPv6 ND/MLD packets forwarded outside the model.
    pub control_packets: u64,
    /// Packets still held by the link when the report was made.
    pub in_flight: u64,
    /// Failed writes to the far side.
    pub write_errors: u64,
    /// Whether the forwarder thread runs with SCHED_FIFO.
    pub realtime: bool,
    /// Delivery lateness: write time − model delivery time.
    pub lateness: Lateness,
    /// The error that stopped the forwarder, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Per-packet records, with `trace` on.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub trace: Vec<TraceRecord>,
}

impl DirectionReport {
    fn from_state(s: &DirState, elapsed_s: f64) -> Self {
        let c = s.counters;
        let busy_s = s.busy_ns as f64 * 1e-9;
        DirectionReport {
            counters: c,
            serialised_bytes: s.serialised_bytes,
            busy_s,
            utilisation: if elapsed_s > 0.0 { (busy_s / elapsed_s).min(1.0) } else { 0.0 },
            max_queue_bytes: s.max_queue_bytes,
            oversized_packets: s.oversized_packets,
            control_packets: s.control_packets,
            in_flight: s.in_flight,
            write_errors: s.write_errors,
            realtime: s.realtime,
            lateness: Lateness::of(&s.lateness_ns),
            error: s.error.clone(),
            trace: s.trace.clone(),
        }
    }
}

/// One transport flow, oriented client → server, as the link saw it. Times are seconds
/// since the emulator started.
#[derive(Clone, Debug, Serialize)]
pub struct FlowReport {
    /// `udp`, `tcp`, `icmp`, `icmpv6` or the protocol number.
    pub proto: String,
    /// Client-side address:port.
    pub client: String,
    /// Server-side address:port.
    pub server: String,
    /// Uplink packets offered.
    pub up_packets: u64,
    /// Uplink bytes offered.
    pub up_bytes: u64,
    /// Uplink packets dropped (buffer or error).
    pub up_dropped: u64,
    /// Downlink packets offered.
    pub down_packets: u64,
    /// Downlink bytes offered.
    pub down_bytes: u64,
    /// Downlink packets dropped.
    pub down_dropped: u64,
    /// When the flow's first packet entered the uplink.
    pub first_up_s: Option<f64>,
    /// When the flow's last packet entered the uplink.
    pub last_up_s: Option<f64>,
    /// When the flow's last downlink packet was delivered to the client side.
    pub last_down_s: Option<f64>,
    /// `last_down_s − first_up_s`: for a request/response flow, its completion time as the
    /// link saw it (first request in → last response out).
    pub link_fct_s: Option<f64>,
}

/// The emulator's report.
#[derive(Clone, Debug, Serialize)]
pub struct EmuReport {
    /// The configuration.
    pub config: EmulatorConfig,
    /// Client namespace.
    pub client_netns: String,
    /// Server namespace.
    pub server_netns: String,
    /// Client address.
    pub client_addr: String,
    /// Server address.
    pub server_addr: String,
    /// Seconds since the forwarders started.
    pub elapsed_s: f64,
    /// CLOCK_MONOTONIC (ns) of the epoch: report times + this = the machine's monotonic
    /// clock, which endpoints in any namespace can read too.
    pub epoch_monotonic_ns: u64,
    /// Client → server.
    pub uplink: DirectionReport,
    /// Server → client.
    pub downlink: DirectionReport,
    /// Transport flows, by first appearance.
    pub flows: Vec<FlowReport>,
    /// Settings that could not be applied (e.g. a sysctl this kernel lacks).
    pub warnings: Vec<String>,
    /// TCP settings read back in the (client, server) namespaces after they were applied.
    pub tcp_settings: [TcpSettings; 2],
    /// The initial RTO in effect for the commands' sockets, when set: "2000 ms = 500 jiffies
    /// (HZ 250), BPF sock_ops on cgroup PATH".
    pub tcp_init_rto: Option<String>,
}

/// A running emulator. Dropping it stops the forwarders, destroys the TUN devices and deletes
/// the namespaces; [`Emulator::stop`] does the same and returns the final report.
pub struct Emulator {
    cfg: EmulatorConfig,
    netns: NetnsPair,
    tuns: Vec<Arc<OwnedFd>>,
    stop: Arc<OwnedFd>,
    dirs: Vec<Direction>,
    epoch: Instant,
    epoch_mono: u64,
    warnings: Vec<String>,
    tcp_settings: [TcpSettings; 2],
    init_rto: Option<crate::bpf::InitRto>,
    stopped: Option<(f64, Vec<DirectionReport>, Vec<FlowReport>)>,
}

fn proto_name(p: u8) -> String {
    match p {
        1 => "icmp".into(),
        6 => "tcp".into(),
        17 => "udp".into(),
        58 => "icmpv6".into(),
        n => n.to_string(),
    }
}

fn endpoint(a: (std::net::IpAddr, u16)) -> String {
    match a.0 {
        std::net::IpAddr::V4(v4) => format!("{v4}:{}", a.1),
        std::net::IpAddr::V6(v6) => format!("[{v6}]:{}", a.1),
    }
}

impl Emulator {
    /// Create the namespaces and devices and start forwarding. Removes stale namespaces of
    /// dead earlier runs first. Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN) and `ip`.
    pub fn start(cfg: &EmulatorConfig) -> Result<Emulator> {
        cfg.validate()?;
        if sys::euid() != 0 {
            bail!("the emulator needs root (network namespaces and TUN devices)");
        }
        for name in netns::cleanup_stale() {
            eprintln!("coapcc emulate: removed stale namespace {name}");
        }
        for path in crate::bpf::cleanup_stale() {
            eprintln!("coapcc emulate: removed stale cgroup {}", path.display());
        }
        let netns = NetnsPair::create()?;
        let mut warnings = Vec::new();
        let init_rto = match cfg.tcp_init_rto_ms {
            Some(ms) => {
                let name = netns.client.strip_suffix("-c").unwrap_or(&netns.client).to_string();
                match crate::bpf::InitRto::install(&name, ms) {
                    Ok(r) => Some(r),
                    Err(e) => {
                        warnings.push(format!("initial RTO {ms} ms not set: {e:#}"));
                        None
                    }
                }
            }
            None => None,
        };
        let mut tuns = Vec::new();
        let sides = [
            (netns.client.clone(), CLIENT_ADDR, SERVER_ADDR, CLIENT_ADDR6),
            (netns.server.clone(), SERVER_ADDR, CLIENT_ADDR, SERVER_ADDR6),
        ];
        let mtu = cfg.mtu.to_string();
        for (ns, local, peer, local6) in &sides {
            let (fd, name) = sys::open_tun("cemu%d").context("cannot create a TUN device (/dev/net/tun)")?;
            tuns.push(Arc::new(fd));
            netns::ip(&["link", "set", "dev", &name, "netns", ns])?;
            netns::ip(&["-n", ns, "link", "set", "dev", &name, "name", IFNAME])?;
            netns::ip(&["-n", ns, "link", "set", "dev", IFNAME, "mtu", &mtu])?;
            if cfg.ipv6() {
                // No link-local address: no router solicitations or DAD on the link.
                let _ = netns::ip(&["-n", ns, "link", "set", "dev", IFNAME, "addrgenmode", "none"]);
            }
            let (l, p) = (format!("{local}/32"), format!("{peer}/32"));
            netns::ip(&["-n", ns, "addr", "add", &l, "peer", &p, "dev", IFNAME])?;
            if cfg.ipv6() {
                let l6 = format!("{local6}/64");
                netns::ip(&["-n", ns, "-6", "addr", "add", &l6, "dev", IFNAME, "nodad"])?;
            }
            netns::ip(&["-n", ns, "link", "set", "dev", IFNAME, "up"])?;
            warnings.extend(apply_tcp(cfg, ns, &local.to_string(), &peer.to_string()));
        }
        let tcp_settings =
            [read_tcp(&sides[0].0, &sides[0].2.to_string()), read_tcp(&sides[1].0, &sides[1].2.to_string())];
        let up: Link<_> =
            Link::new(&cfg.uplink, cfg.mtu, cfg.seed, STREAM_UPLINK).map_err(|e| anyhow::anyhow!("uplink: {e}"))?;
        let down: Link<_> = Link::new(&cfg.downlink, cfg.mtu, cfg.seed, STREAM_DOWNLINK)
            .map_err(|e| anyhow::anyhow!("downlink: {e}"))?;
        let stop = Arc::new(sys::eventfd()?);
        let epoch = Instant::now();
        let epoch_mono = sys::monotonic_ns();
        let opts = DirOptions { epoch, realtime: cfg.realtime, spin_ns: cfg.spin_us * 1000, trace: cfg.trace };
        let fds = |i: usize, o: usize| Fds { ingress: tuns[i].clone(), egress: tuns[o].clone(), stop: stop.clone() };
        let d_up = Direction::spawn("emu-uplink", up, fds(0, 1), opts)?;
        let d_down = Direction::spawn("emu-downlink", down, fds(1, 0), opts)?;
        Ok(Emulator {
            cfg: cfg.clone(),
            netns,
            tuns,
            stop,
            dirs: vec![d_up, d_down],
            epoch,
            epoch_mono,
            warnings,
            tcp_settings,
            init_rto,
            stopped: None,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &EmulatorConfig {
        &self.cfg
    }

    /// Namespace name of a side.
    pub fn netns(&self, side: Side) -> &str {
        match side {
            Side::Client => &self.netns.client,
            Side::Server => &self.netns.server,
        }
    }

    /// IPv4 address of a side.
    pub fn addr(&self, side: Side) -> Ipv4Addr {
        match side {
            Side::Client => CLIENT_ADDR,
            Side::Server => SERVER_ADDR,
        }
    }

    /// The environment given to commands: `COAPCC_EMU_{CLIENT,SERVER}_{ADDR,NETNS}` (and
    /// `..._ADDR6` with IPv6).
    pub fn env(&self) -> Vec<(String, String)> {
        let mut v = vec![
            ("COAPCC_EMU_CLIENT_ADDR".to_string(), CLIENT_ADDR.to_string()),
            ("COAPCC_EMU_SERVER_ADDR".to_string(), SERVER_ADDR.to_string()),
            ("COAPCC_EMU_CLIENT_NETNS".to_string(), self.netns.client.clone()),
            ("COAPCC_EMU_SERVER_NETNS".to_string(), self.netns.server.clone()),
        ];
        if self.cfg.ipv6() {
            v.push(("COAPCC_EMU_CLIENT_ADDR6".to_string(), CLIENT_ADDR6.to_string()));
            v.push(("COAPCC_EMU_SERVER_ADDR6".to_string(), SERVER_ADDR6.to_string()));
        }
        v
    }

    /// `program args...` to run inside a side's namespace (`ip netns exec`), with [`Self::env`].
    ///
    /// With an initial RTO set, the process joins the emulator's cgroup before it execs, so
    /// its sockets (and its children's) get that initial RTO.
    pub fn command(&self, side: Side, program: &str, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", self.netns(side), program]).args(args).envs(self.env());
        if let Some(r) = &self.init_rto {
            let fd = r.procs_fd();
            // SAFETY: the closure only calls write(2), which is async-signal-safe; the
            // descriptor stays open as long as the emulator (and so this Command's use).
            unsafe {
                std::os::unix::process::CommandExt::pre_exec(&mut c, move || {
                    if libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        c
    }

    /// A shell command line (`sh -c`) to run inside a side's namespace.
    pub fn shell(&self, side: Side, cmdline: &str) -> Command {
        self.command(side, "sh", &["-c", cmdline])
    }

    /// Nanoseconds since the forwarders' epoch (the link model's time 0).
    pub fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    fn collect(&self) -> (f64, Vec<DirectionReport>, Vec<FlowReport>) {
        if let Some(s) = &self.stopped {
            return s.clone();
        }
        let elapsed = self.epoch.elapsed().as_secs_f64();
        let mut reports = Vec::new();
        let mut flows: Vec<(FlowKey, FlowDir, FlowDir)> = Vec::new();
        for (i, d) in self.dirs.iter().enumerate() {
            let s = d.state.lock().expect("state");
            reports.push(DirectionReport::from_state(&s, elapsed));
            for (k, f) in &s.flows {
                let key = if i == 0 { *k } else { k.reversed() };
                let entry = match flows.iter_mut().position(|e| e.0 == key) {
                    Some(p) => &mut flows[p],
                    None => {
                        flows.push((key, FlowDir::default(), FlowDir::default()));
                        flows.last_mut().expect("pushed")
                    }
                };
                if i == 0 {
                    entry.1 = *f;
                } else {
                    entry.2 = *f;
                }
            }
        }
        let first = |e: &(FlowKey, FlowDir, FlowDir)| e.1.first_in.or(e.2.first_in).unwrap_or(u64::MAX);
        flows.sort_by_key(|e| (first(e), e.0.src.1));
        let s = |t: Option<u64>| t.map(|n| n as f64 * 1e-9);
        let flows = flows
            .into_iter()
            .map(|(k, u, d)| FlowReport {
                proto: proto_name(k.proto),
                client: endpoint(k.src),
                server: endpoint(k.dst),
                up_packets: u.packets,
                up_bytes: u.bytes,
                up_dropped: u.dropped,
                down_packets: d.packets,
                down_bytes: d.bytes,
                down_dropped: d.dropped,
                first_up_s: s(u.first_in),
                last_up_s: s(u.last_in),
                last_down_s: s(d.last_out),
                link_fct_s: match (u.first_in, d.last_out) {
                    (Some(a), Some(b)) if b >= a => Some((b - a) as f64 * 1e-9),
                    _ => None,
                },
            })
            .collect();
        (elapsed, reports, flows)
    }

    /// The error that stopped a forwarder thread, if one did.
    pub fn failed(&self) -> Option<String> {
        self.dirs.iter().find_map(|d| d.state.lock().expect("state").error.clone())
    }

    /// A snapshot of the counters so far.
    pub fn report(&self) -> EmuReport {
        let (elapsed_s, dirs, flows) = self.collect();
        EmuReport {
            config: self.cfg.clone(),
            client_netns: self.netns.client.clone(),
            server_netns: self.netns.server.clone(),
            client_addr: CLIENT_ADDR.to_string(),
            server_addr: SERVER_ADDR.to_string(),
            elapsed_s,
            epoch_monotonic_ns: self.epoch_mono,
            uplink: dirs[0].clone(),
            downlink: dirs[1].clone(),
            flows,
            warnings: self.warnings.clone(),
            tcp_settings: self.tcp_settings.clone(),
            tcp_init_rto: self.init_rto.as_ref().map(|r| {
                format!(
                    "{} ms = {} jiffies (HZ {}), BPF sock_ops on cgroup {}",
                    self.cfg.tcp_init_rto_ms.unwrap_or(0),
                    r.jiffies,
                    r.hz,
                    r.dir().display()
                )
            }),
        }
    }

    fn shutdown(&mut self) -> Result<()> {
        if self.stopped.is_none() {
            sys::eventfd_signal(self.stop.as_raw_fd());
            for d in &mut self.dirs {
                d.join();
            }
            self.stopped = Some(self.collect());
        }
        // Close the TUN devices before deleting the namespaces: a device still alive in a
        // deleted namespace would be moved back to the initial one.
        self.tuns.clear();
        self.netns.teardown()
    }

    /// Stop forwarding, tear everything down and return the final report.
    pub fn stop(mut self) -> Result<EmuReport> {
        let r = self.shutdown();
        let report = self.report();
        r.map(|_| report)
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        if let Err(e) = self.shutdown() {
            eprintln!("coapcc emulate: warning: teardown: {e:#}");
        }
    }
}

/// Apply the TCP settings in namespace `ns`; returns warnings for settings that failed.
fn apply_tcp(cfg: &EmulatorConfig, ns: &str, local: &str, peer: &str) -> Vec<String> {
    let mut warn = Vec::new();
    let mut set = |k: &str, v: &str| {
        if let Err(e) = netns::sysctl(ns, k, v) {
            warn.push(format!("{e:#}"));
        }
    };
    if let Some(cc) = &cfg.tcp_cc {
        set("net.ipv4.tcp_congestion_control", cc);
    }
    if cfg.tcp_profile == TcpProfile::Testbed {
        for (k, v) in TESTBED_SYSCTLS {
            set(k, v);
        }
        let dst = format!("{peer}/32");
        let mut args = vec!["-n", ns, "route", "replace", &dst, "dev", IFNAME, "src", local];
        args.extend_from_slice(TESTBED_ROUTE_ATTRS);
        if let Some(cc) = &cfg.tcp_cc {
            args.extend_from_slice(&["congctl", cc]);
        }
        if let Err(e) = netns::ip(&args) {
            warn.push(format!("{e:#}"));
        }
    }
    warn
}

/// Read back the TCP sysctls and the route to `peer` in namespace `ns`.
fn read_tcp(ns: &str, peer: &str) -> TcpSettings {
    let keys: Vec<String> = std::iter::once("net.ipv4.tcp_congestion_control")
        .chain(TESTBED_SYSCTLS.iter().map(|kv| kv.0))
        .map(str::to_string)
        .collect();
    let sysctls = sys::in_netns(&NetnsPair::path(ns), move || {
        Ok(keys
            .into_iter()
            .filter_map(|k| {
                let v = std::fs::read_to_string(format!("/proc/sys/{}", k.replace('.', "/"))).ok()?;
                Some((k, v.trim().to_string()))
            })
            .collect())
    })
    .unwrap_or_default();
    let route = std::process::Command::new("ip")
        .args(["-n", ns, "route", "show", peer])
        .stdin(std::process::Stdio::null())
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    TcpSettings { sysctls, route }
}
