//! The `coapcc emulate` command: arguments ([`EmulateArgs`], clap derive) and runner
//! ([`emulate_main`]).

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use coapcc_link::{LinkConfig, LossModel, StageConfig, DEFAULT_BUFFER_BYTES};
use serde::Deserialize;

use crate::emulator::{DirectionReport, EmuReport, Emulator, EmulatorConfig, Side, TcpProfile};
use crate::sys;

/// Exit code when the emulator itself fails (setup, bad arguments).
pub const EXIT_EMULATOR_ERROR: i32 = 125;
/// Exit code when `--timeout` expired before the client command ended.
pub const EXIT_TIMEOUT: i32 = 124;
/// Exit code after SIGINT/SIGTERM/SIGHUP (128 + SIGINT).
pub const EXIT_INTERRUPTED: i32 = 130;

coapcc_link::link_args!(
    /// Link flags shared by `coapcc simulate` and `coapcc emulate`, declared once by the link
    /// crate's `link_args!` (their meaning and errors are `coapcc_link::LinkOverrides`'s).
    pub struct LinkArgs
);

/// The parts of a simulator configuration file the emulator uses: the seed and the link.
/// Other fields (clients, workload, ...) are the simulator's and are ignored here; the link
/// itself is checked strictly (unknown fields are errors).
#[derive(Deserialize)]
#[serde(default)]
struct SimFile {
    seed: u64,
    link: LinkConfig,
}

impl Default for SimFile {
    fn default() -> Self {
        SimFile { seed: 1, link: LinkConfig::default() }
    }
}

/// Arguments of `coapcc emulate`. Link flags mirror `coapcc simulate`'s and override
/// `--config`.
#[derive(Args, Clone, Debug, Default, PartialEq)]
pub struct EmulateArgs {
    /// Shell command run in the server namespace (started first, killed at the end).
    /// $COAPCC_EMU_SERVER_ADDR and $COAPCC_EMU_CLIENT_ADDR are set.
    #[arg(long, value_name = "CMD")]
    pub server_cmd: Option<String>,
    /// Shell command run in the client namespace; the emulator ends when it does and exits
    /// with its exit code. Without it, the emulator runs until interrupted or --timeout.
    #[arg(long, value_name = "CMD")]
    pub client_cmd: Option<String>,
    /// Wait this long after starting the server command before starting the client
    /// command, ms (default 300).
    #[arg(long, value_name = "MS", default_value_t = 300)]
    pub server_start_ms: u64,
    /// Stop after this many seconds (the client command is killed; exit code 124).
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<f64>,
    /// Link flags (buffer, errors, rest of path, overhead), shared with `coapcc simulate`.
    #[command(flatten)]
    pub link: LinkArgs,
    /// Seed of the link's random processes (default 1; same streams as the simulator).
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// Uplink rate, bit/s (default 60000).
    #[arg(long, value_name = "BIT/S")]
    pub uplink_rate: Option<u64>,
    /// Downlink rate, bit/s (default 30000).
    #[arg(long, value_name = "BIT/S")]
    pub downlink_rate: Option<u64>,
    /// Uplink one-way propagation delay, ms (default 200).
    #[arg(long, value_name = "MS")]
    pub uplink_delay_ms: Option<f64>,
    /// Downlink one-way propagation delay, ms (default 400).
    #[arg(long, value_name = "MS")]
    pub downlink_delay_ms: Option<f64>,
    /// MTU of both interfaces and of the model (default 296; IPv6 needs >= 1280).
    #[arg(long, value_name = "BYTES")]
    pub mtu: Option<u32>,
    /// Read the link (chains, MTU) and seed from a simulator config (JSON); flags override.
    #[arg(long, value_name = "FILE.json")]
    pub config: Option<PathBuf>,
    /// net.ipv4.tcp_congestion_control in both namespaces, and the route's congctl, e.g.
    /// reno or bbr (default reno; `keep` leaves the kernel's default, which may be bbr).
    #[arg(long, value_name = "NAME", default_value = "reno")]
    pub tcp_cc: String,
    /// TCP settings: helsinki2018 (alias testbed; the CoAP-over-TCP study's: no
    /// SACK/F-RTO/timestamps/TLP/RACK/TFO, SYN retries 40/41, initcwnd 4, rto_min 200 ms;
    /// default) or kernel (kernel defaults).
    #[arg(long, value_name = "helsinki2018|testbed|kernel", default_value = "helsinki2018")]
    pub tcp_profile: String,
    /// Initial RTO of the commands' TCP sockets in ms, set with a BPF sock_ops program on a
    /// cgroup of the commands (default 2000 with --tcp-profile helsinki2018; `kernel` keeps
    /// Linux's 1000 ms, the default with --tcp-profile kernel).
    #[arg(long, value_name = "MS|kernel")]
    pub tcp_init_rto_ms: Option<String>,
    /// Do not ask for SCHED_FIFO for the forwarder threads.
    #[arg(long)]
    pub no_realtime: bool,
    /// Busy-wait this many µs before each delivery instead of sleeping (default 100; 0 =
    /// sleep only, which adds the timer's wake-up latency, typically 50 µs).
    #[arg(long, value_name = "US", default_value_t = 100)]
    pub spin_us: u64,
    /// Include a per-packet trace (entry, model delivery, write time) in the JSON report.
    #[arg(long)]
    pub trace: bool,
    /// Print the final report as one JSON object on stdout (the summary still goes to
    /// stderr).
    #[arg(long)]
    pub json: bool,
    /// Also write the JSON report to FILE.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Print the resolved configuration as JSON and exit.
    #[arg(long)]
    pub print_config: bool,
    /// No setup/summary lines on stderr.
    #[arg(long)]
    pub quiet: bool,
}

fn set_rate(chain: &mut [StageConfig], bits: u64) {
    for st in chain {
        if let StageConfig::Rate(r) = st {
            r.bits_per_s = bits;
        }
    }
}

fn set_delay(chain: &mut [StageConfig], ms: f64) {
    for st in chain {
        if let StageConfig::Delay(d) = st {
            d.ms = ms;
        }
    }
}

/// Largest `--timeout`, seconds (a year).
pub const MAX_TIMEOUT_S: f64 = 365.0 * 86_400.0;
/// Largest `--server-start-ms` (an hour).
pub const MAX_SERVER_START_MS: u64 = 3_600_000;

/// Build the emulator configuration the arguments describe.
pub fn build_config(args: &EmulateArgs) -> Result<EmulatorConfig> {
    if args.server_start_ms > MAX_SERVER_START_MS {
        bail!("--server-start-ms must be at most {MAX_SERVER_START_MS} (got {})", args.server_start_ms);
    }
    if let Some(t) = args.timeout {
        if !(t.is_finite() && t > 0.0 && t <= MAX_TIMEOUT_S) {
            bail!(
                "--timeout must be a positive number of seconds, at most {MAX_TIMEOUT_S} (got {})",
                coapcc_args::show(t)
            );
        }
    }
    let sim = match &args.config {
        Some(path) => {
            let text =
                std::fs::read_to_string(path).with_context(|| format!("cannot read config {}", path.display()))?;
            let bad = |e: String| anyhow::anyhow!("config {}: {e}", path.display());
            let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
            if !v.is_object() {
                return Err(bad("expected a JSON object (a simulator configuration)".into()));
            }
            serde_json::from_value::<SimFile>(v).map_err(|e| bad(e.to_string()))?
        }
        None => SimFile::default(),
    };
    let mut link = sim.link;
    args.link.overrides().apply(&mut link).map_err(anyhow::Error::msg)?;
    if let Some(r) = args.uplink_rate {
        set_rate(&mut link.uplink, r);
    }
    if let Some(r) = args.downlink_rate {
        set_rate(&mut link.downlink, r);
    }
    if let Some(d) = args.uplink_delay_ms {
        set_delay(&mut link.uplink, d);
    }
    if let Some(d) = args.downlink_delay_ms {
        set_delay(&mut link.downlink, d);
    }
    let tcp_profile = TcpProfile::parse(&args.tcp_profile).context("--tcp-profile")?;
    if !args.tcp_cc.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') || args.tcp_cc.is_empty() {
        bail!("--tcp-cc: '{}' is not a congestion-control name (reno, bbr, cubic, ...) or keep", args.tcp_cc);
    }
    let cfg = EmulatorConfig {
        uplink: link.uplink,
        downlink: link.downlink,
        mtu: args.mtu.unwrap_or(link.mtu_bytes),
        seed: args.seed.unwrap_or(sim.seed),
        tcp_cc: if args.tcp_cc == "keep" { None } else { Some(args.tcp_cc.clone()) },
        tcp_profile,
        tcp_init_rto_ms: match args.tcp_init_rto_ms.as_deref() {
            None if tcp_profile == TcpProfile::Testbed => Some(2000),
            None | Some("kernel") => None,
            Some(v) => match v.parse::<u32>() {
                Ok(ms) if (1..=120_000).contains(&ms) => Some(ms),
                _ => bail!("--tcp-init-rto-ms: '{v}' is not a number of ms in 1..=120000 or kernel"),
            },
        },
        realtime: !args.no_realtime,
        spin_us: args.spin_us,
        trace: args.trace,
    };
    cfg.validate()?;
    Ok(cfg)
}

/// A command's process group, killed (TERM, then KILL) when dropped, and also when this
/// process dies without dropping it (SIGKILL, abort).
///
/// The command is the leader of its own process group and gets SIGKILL when this process
/// dies (parent-death signal), but that reaches only the leader (`ip netns exec … sh -c`),
/// not what the shell started. So each group has a **watchdog**: a small `sh` in its own
/// process group that blocks reading a pipe whose only writer is this process. When this
/// process ends in any way the kernel closes the pipe; the watchdog then sends SIGTERM to the
/// command's group and SIGKILL one second later (the same grace as a normal stop, so the
/// commands can flush their logs). On a normal stop the guard terminates the group itself and
/// then kills the watchdog.
pub struct ChildGuard {
    child: Option<Child>,
    pgid: i32,
    watchdog: Option<Child>,
}

/// The watchdog's script: `$1` is the process group to kill once stdin reaches end of file.
const WATCHDOG_SCRIPT: &str =
    "read _ || true; kill -s TERM -- -\"$1\" 2>/dev/null || exit 0; sleep 1; kill -s KILL -- -\"$1\" 2>/dev/null; exit 0";

fn spawn_watchdog(pgid: i32) -> std::io::Result<Child> {
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    // The pipe to its stdin is close-on-exec here, so no other child holds it open.
    Command::new("sh")
        .args(["-c", WATCHDOG_SCRIPT, "coapcc-emu-watchdog", &pgid.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
}

impl ChildGuard {
    /// Spawn `cmd` in its own process group, with a watchdog that kills the group if this
    /// process dies first.
    pub fn spawn(mut cmd: std::process::Command) -> Result<ChildGuard> {
        let mut child = sys::spawn_group(&mut cmd).context("cannot start command")?;
        let pgid = child.id() as i32;
        let watchdog = match spawn_watchdog(pgid) {
            Ok(w) => w,
            Err(e) => {
                sys::kill_group(pgid, libc::SIGKILL);
                let _ = child.wait();
                return Err(e).context("cannot start the watchdog (sh)");
            }
        };
        Ok(ChildGuard { child: Some(child), pgid, watchdog: Some(watchdog) })
    }

    /// The command's process group id (its leader's pid).
    pub fn pgid(&self) -> i32 {
        self.pgid
    }

    /// Exit status if the process has ended.
    pub fn try_wait(&mut self) -> Result<Option<ExitStatus>> {
        match &mut self.child {
            Some(c) => Ok(c.try_wait()?),
            None => Ok(None),
        }
    }

    /// Everything the process wrote to its stdout (when spawned with a piped stdout); call
    /// after it ended.
    pub fn take_stdout(&mut self) -> String {
        let mut s = String::new();
        if let Some(out) = self.child.as_mut().and_then(|c| c.stdout.as_mut()) {
            use std::io::Read;
            let _ = out.read_to_string(&mut s);
        }
        s
    }

    /// SIGTERM the group, wait up to `grace`, then SIGKILL it. Returns the leader's status.
    pub fn terminate(&mut self, grace: Duration) -> Option<ExitStatus> {
        let status = self.terminate_group(grace);
        // The group is gone: stop the watchdog before its pipe closes (killing it first keeps it
        // from signalling a process group id that could be reused later).
        if let Some(mut w) = self.watchdog.take() {
            let _ = w.kill();
            let _ = w.wait();
        }
        status
    }

    fn terminate_group(&mut self, grace: Duration) -> Option<ExitStatus> {
        let mut child = self.child.take()?;
        if let Ok(Some(s)) = child.try_wait() {
            sys::kill_group(self.pgid, libc::SIGKILL); // stragglers of the group
            return Some(s);
        }
        sys::kill_group(self.pgid, libc::SIGTERM);
        let t0 = Instant::now();
        while t0.elapsed() < grace {
            if let Ok(Some(s)) = child.try_wait() {
                sys::kill_group(self.pgid, libc::SIGKILL);
                return Some(s);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        sys::kill_group(self.pgid, libc::SIGKILL);
        child.wait().ok()
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        self.terminate(Duration::from_millis(500));
    }
}

/// Exit code of a status: the code, or 128 + the signal.
pub fn exit_code(s: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0))
}

/// Run `coapcc emulate`. Returns the exit code: the client command's, 124 on `--timeout`,
/// 130 when interrupted, 125 when the emulator itself failed (one line on stderr).
pub fn emulate_main(args: &EmulateArgs) -> i32 {
    match run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("coapcc emulate: error: {e:#}");
            EXIT_EMULATOR_ERROR
        }
    }
}

fn run(args: &EmulateArgs) -> Result<i32> {
    let cfg = build_config(args)?;
    if args.print_config {
        println!("{}", serde_json::to_string_pretty(&cfg)?);
        return Ok(0);
    }
    // Checked by build_config.
    let deadline = args.timeout.map(|t| Instant::now() + Duration::from_secs_f64(t));
    let _signals = sys::install_signal_handlers();
    let emu = Emulator::start(&cfg)?;
    if !args.quiet {
        eprintln!("{}", describe(&emu));
    }
    let mut server = match &args.server_cmd {
        Some(c) => {
            let mut cmd = emu.shell(Side::Server, c);
            cmd.stdin(std::process::Stdio::null());
            Some(ChildGuard::spawn(cmd)?)
        }
        None => None,
    };
    let mut code: Option<i32> = None;
    // Let the server come up (interruptible).
    if server.is_some() {
        let until = Instant::now() + Duration::from_millis(args.server_start_ms);
        while Instant::now() < until && sys::signalled().is_none() {
            std::thread::sleep(Duration::from_millis(5));
        }
        if let Some(s) = server.as_mut().and_then(|s| s.try_wait().ok().flatten()) {
            eprintln!("coapcc emulate: warning: the server command exited early ({})", exit_code(s));
        }
    }
    let mut client = match (&args.client_cmd, sys::signalled()) {
        (Some(c), None) => Some(ChildGuard::spawn(emu.shell(Side::Client, c))?),
        _ => None,
    };
    while code.is_none() {
        if let Some(sig) = sys::signalled() {
            if !args.quiet {
                eprintln!("coapcc emulate: interrupted (signal {sig}), tearing down");
            }
            code = Some(EXIT_INTERRUPTED);
            break;
        }
        if let Some(e) = emu.failed() {
            eprintln!("coapcc emulate: error: forwarder stopped: {e}");
            code = Some(EXIT_EMULATOR_ERROR);
            break;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            if !args.quiet {
                eprintln!("coapcc emulate: --timeout expired, tearing down");
            }
            code = Some(if client.is_some() { EXIT_TIMEOUT } else { 0 });
            break;
        }
        if let Some(c) = client.as_mut() {
            if let Some(s) = c.try_wait()? {
                code = Some(exit_code(s));
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    if let Some(mut c) = client.take() {
        c.terminate(Duration::from_millis(1000));
    }
    if let Some(mut s) = server.take() {
        s.terminate(Duration::from_millis(1000));
    }
    let report = emu.stop()?;
    if !args.quiet {
        eprint!("{}", summary(&report));
    }
    let json = serde_json::to_string(&report)?;
    if let Some(path) = &args.report {
        std::fs::write(path, format!("{json}\n")).with_context(|| format!("cannot write {}", path.display()))?;
    }
    if args.json {
        println!("{json}");
    }
    Ok(code.unwrap_or(0))
}

fn describe(emu: &Emulator) -> String {
    let c = emu.config();
    format!(
        "coapcc emulate: client netns {} ({}), server netns {} ({}), mtu {}, seed {}\n  uplink   {}\n  downlink {}",
        emu.netns(Side::Client),
        emu.addr(Side::Client),
        emu.netns(Side::Server),
        emu.addr(Side::Server),
        c.mtu,
        c.seed,
        chain_text(&c.uplink),
        chain_text(&c.downlink)
    )
}

/// One-line description of a chain.
pub fn chain_text(chain: &[StageConfig]) -> String {
    chain
        .iter()
        .map(|st| match st {
            StageConfig::Rate(r) => match &r.schedule {
                None => format!("rate {} bit/s buffer {} B", r.bits_per_s, r.buffer_bytes),
                Some(s) => format!(
                    "rate {} bit/s then {} scheduled changes, buffer {} B",
                    r.bits_per_s,
                    s.points.len(),
                    r.buffer_bytes
                ),
            },
            StageConfig::Delay(d) => format!("delay {} ms", d.ms),
            StageConfig::Jitter(j) => format!("rest-of-path U[{}, {}] ms", j.min_ms, j.max_ms),
            StageConfig::Loss(m) => match m {
                LossModel::None => "no loss".into(),
                LossModel::Bernoulli { p } => format!("bernoulli {p}"),
                LossModel::GilbertElliott { p, r, loss_low, loss_burst } => {
                    format!("GE/packet p={p:.4} r={r:.4} loss {loss_low}/{loss_burst}")
                }
                LossModel::GilbertElliottTime { low_mean_s, burst_mean_s, loss_low, loss_burst } => {
                    format!("GE/time T_L={low_mean_s:.3}s T_B={burst_mean_s}s loss {loss_low}/{loss_burst}")
                }
            },
        })
        .collect::<Vec<_>>()
        .join(" -> ")
}

fn dir_line(name: &str, d: &DirectionReport) -> String {
    format!(
        "{name}: offered {} pkt / {} B, delivered {} / {} B, buffer drops {} / {} B, error losses {} / {} B, utilisation {:.1} %, lateness median {:.0} us p99 {:.0} us max {:.0} us\n",
        d.counters.offered_packets,
        d.counters.offered_bytes,
        d.counters.delivered_packets,
        d.counters.delivered_bytes,
        d.counters.buffer_drop_packets,
        d.counters.buffer_drop_bytes,
        d.counters.error_loss_packets,
        d.counters.error_loss_bytes,
        100.0 * d.utilisation,
        d.lateness.median_us,
        d.lateness.p99_us,
        d.lateness.max_us
    )
}

/// The human summary printed at the end.
pub fn summary(r: &EmuReport) -> String {
    let mut s = String::new();
    let _ = write!(s, "{}", dir_line("uplink  ", &r.uplink));
    let _ = write!(s, "{}", dir_line("downlink", &r.downlink));
    let extra: u64 = r.uplink.oversized_packets + r.downlink.oversized_packets;
    if extra > 0 {
        let _ = writeln!(s, "oversized packets refused: {extra}");
    }
    for w in &r.warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    let _ = writeln!(s, "emulated {:.3} s, {} flows", r.elapsed_s, r.flows.len());
    s
}

/// The default buffer, re-exported for documentation.
pub const DEFAULT_BUFFER: u64 = DEFAULT_BUFFER_BYTES;

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        a: EmulateArgs,
    }

    fn parse(v: &[&str]) -> EmulateArgs {
        T::try_parse_from(std::iter::once("x").chain(v.iter().copied())).unwrap().a
    }

    #[test]
    fn flags_build_the_testbed_config() {
        let c = build_config(&parse(&[])).unwrap();
        assert_eq!(c, EmulatorConfig::default());
        assert!(build_config(&parse(&["--spin-us", "0"])).unwrap().spin_us == 0);
        let c = build_config(&parse(&[
            "--buffer",
            "2500",
            "--errors",
            "bernoulli:0.1",
            "--uplink-rate",
            "1000000",
            "--downlink-delay-ms",
            "50",
            "--mtu",
            "1500",
            "--seed",
            "9",
        ]))
        .unwrap();
        assert_eq!(c.seed, 9);
        assert_eq!(c.mtu, 1500);
        assert!(c.ipv6());
        let t = chain_text(&c.uplink);
        assert!(t.contains("rate 1000000 bit/s buffer 2500 B") && t.contains("bernoulli 0.1"), "{t}");
        assert!(chain_text(&c.downlink).contains("delay 50 ms"));
        assert!(build_config(&parse(&["--buffer", "100"]))
            .unwrap_err()
            .to_string()
            .contains("smaller than one packet"));
        assert!(build_config(&parse(&["--errors", "wifi"])).is_err());
        assert!(build_config(&parse(&["--error-clock", "packet"])).is_err());
        assert!(build_config(&parse(&["--tcp-profile", "x"])).is_err());
        assert!(build_config(&parse(&["--rest-of-path-ms", "1"])).is_err());
        let c = build_config(&parse(&["--downlink-schedule", "0 30000; 5 10000 0.1"])).unwrap();
        assert!(chain_text(&c.downlink).contains("then 2 scheduled changes"), "{}", chain_text(&c.downlink));
        assert!(build_config(&parse(&["--uplink-schedule", "0 1; 1 0"])).is_err());
        // Extreme values are errors, not panics.
        assert!(build_config(&parse(&["--spin-us", "18446744073709551615"])).is_err());
        assert!(build_config(&parse(&["--server-start-ms", "18446744073709551615"])).is_err());
        for t in ["1e300", "inf", "-1e-3", "0"] {
            let code = emulate_main(&parse(&[&format!("--timeout={t}"), "--print-config"]));
            assert_eq!(code, EXIT_EMULATOR_ERROR, "--timeout {t}");
        }
    }

    #[test]
    fn a_simulator_config_file_gives_link_and_seed() {
        let dir = std::env::temp_dir().join(format!("coapcc-emu-cli-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("sim.json");
        let mut sim = coapcc_sim::SimConfig { seed: 5, ..Default::default() };
        sim.workload.exchanges = 2;
        sim.link.set_buffer_bytes(2500);
        sim.link.set_loss(&LossModel::Bernoulli { p: 0.25 });
        std::fs::write(&path, serde_json::to_string(&sim).unwrap()).unwrap();
        let p = path.to_str().unwrap();
        let c = build_config(&parse(&["--config", p])).unwrap();
        assert_eq!((c.seed, &c.uplink, &c.downlink), (5, &sim.link.uplink, &sim.link.downlink));
        let c = build_config(&parse(&["--config", p, "--seed", "6", "--errors", "none"])).unwrap();
        assert_eq!(c.seed, 6);
        assert!(chain_text(&c.uplink).contains("no loss"));
        std::fs::write(&path, r#"{"link": {"uplink": [{"teleport": {}}]}}"#).unwrap();
        let e = build_config(&parse(&["--config", p])).unwrap_err().to_string();
        assert!(e.contains("teleport") && !e.contains('\n'), "{e}");
        std::fs::write(&path, "[5]").unwrap();
        assert!(build_config(&parse(&["--config", p])).unwrap_err().to_string().contains("JSON object"));
        std::fs::remove_dir_all(&dir).ok();
        // The link model's stream constants are the simulator's.
        assert_eq!(
            (coapcc_link::STREAM_UPLINK, coapcc_link::STREAM_DOWNLINK),
            (coapcc_sim::STREAM_UPLINK, coapcc_sim::STREAM_DOWNLINK)
        );
    }
}
