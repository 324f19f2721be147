//! Integration tests of the emulator: they create network namespaces and TUN devices, so they
//! need root, `ip` (iproute2) and /dev/net/tun. Without them every test prints why it is
//! skipped and passes, except where the emulator is required: with `CI=true` (or `CI=1`) or
//! `COAPCC_REQUIRE_EMU=1` in the environment a missing resource fails the test instead.
//! Tests run one at a time (a process-wide lock): the forwarder's timing is what is being
//! measured. All traffic stays inside namespaces the tests create (198.18.0.0/15, fd00::/8);
//! every load is bounded in packets and time.
//!
//! Timing assertions hold on a busy machine: the link model's own delays are checked exactly
//! (integer ns, from the emulator's per-packet trace), and the tolerance of a measured time is
//! derived from the scheduling lateness measured in the same run (the forwarder's, and that of
//! a probe thread woken like the endpoints are); a measurement that still misses is repeated
//! (at most three attempts), since load only ever adds delay.

use std::process::{Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use coapcc_emu::cli::ChildGuard;
use coapcc_emu::netns;
use coapcc_emu::{EmuReport, Emulator, EmulatorConfig, Side, TcpProfile, TESTBED_SYSCTLS};
use coapcc_link::{LinkPath, LossModel, STREAM_DOWNLINK, STREAM_UPLINK};
use serde_json::Value;

const PROBE: &str = env!("CARGO_BIN_EXE_coapcc-emu-probe");
const EMU: &str = env!("CARGO_BIN_EXE_coapcc-emu");

static LOCK: Mutex<()> = Mutex::new(());

/// Whether a missing resource must fail the test instead of skipping it: `CI` is `true` or `1`,
/// or `COAPCC_REQUIRE_EMU=1`.
fn required() -> bool {
    let on =
        |k: &str, vals: &[&str]| std::env::var(k).is_ok_and(|v| vals.contains(&v.trim().to_ascii_lowercase().as_str()));
    on("CI", &["true", "1"]) || on("COAPCC_REQUIRE_EMU", &["1", "true"])
}

/// Skip (print why and return `None`), or panic when the emulator is required.
fn skip(test: &str, why: &str) -> Option<MutexGuard<'static, ()>> {
    if required() {
        panic!("{test}: {why}; the emulator tests are required here (CI or COAPCC_REQUIRE_EMU=1 is set)");
    }
    eprintln!("SKIPPED {test}: {why}");
    None
}

/// The lock, or `None` (with a message) when the machine cannot run namespaces.
fn setup(test: &str) -> Option<MutexGuard<'static, ()>> {
    let root = coapcc_emu::sys::euid() == 0;
    let ip = Command::new("ip").arg("-V").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok();
    let tun = std::path::Path::new("/dev/net/tun").exists();
    if !(root && ip && tun) {
        return skip(test, &format!("needs root, `ip` (iproute2) and /dev/net/tun (root={root}, ip={ip}, tun={tun})"));
    }
    Some(LOCK.lock().unwrap_or_else(|e| e.into_inner()))
}

/// Wake-up lateness of this machine right now, µs (median, p90): a thread under the
/// endpoints' scheduling policy (the probe tools ask for SCHED_FIFO 5) sleeps 1 ms 200 times
/// and records how late it wakes.
fn wakeup_lateness_us() -> (f64, f64) {
    std::thread::spawn(|| {
        let _ = coapcc_emu::sys::set_process_fifo(5);
        let mut late: Vec<f64> = (0..200)
            .map(|_| {
                let t0 = Instant::now();
                std::thread::sleep(Duration::from_millis(1));
                (t0.elapsed().as_secs_f64() * 1e6 - 1000.0).max(0.0)
            })
            .collect();
        late.sort_by(|a, b| a.total_cmp(b));
        (late[100], late[180])
    })
    .join()
    .unwrap()
}

/// Run `attempt` up to three times; pass on the first success. Load only adds delay, so an
/// emulator that is right passes one of them, and a systematic error fails all three.
fn with_retries(name: &str, mut attempt: impl FnMut() -> Result<(), String>) {
    let mut errs = Vec::new();
    for i in 1..=3 {
        match attempt() {
            Ok(()) => return,
            Err(e) => {
                eprintln!("{name}: attempt {i} missed: {e}");
                errs.push(e);
            }
        }
    }
    panic!("{name}: three attempts missed: {errs:#?}");
}

fn probe_server(emu: &Emulator, side: Side, args: &[&str]) -> ChildGuard {
    let mut c = emu.command(side, PROBE, args);
    c.stdout(Stdio::piped()).stdin(Stdio::null());
    let g = ChildGuard::spawn(c).expect("spawn probe");
    std::thread::sleep(Duration::from_millis(300));
    g
}

fn probe_json(emu: &Emulator, side: Side, args: &[&str]) -> Value {
    let out: Output = emu.command(side, PROBE, args).stdin(Stdio::null()).output().expect("run probe");
    assert!(out.status.success(), "probe {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.lines().last().unwrap_or("")).unwrap_or_else(|e| panic!("probe output {text:?}: {e}"))
}

fn ours(pid: u32) -> Vec<String> {
    netns::list().into_iter().filter(|n| netns::owner_pid(n) == Some(pid as i32)).collect()
}

fn print_timing(name: &str, r: &EmuReport) {
    for (d, l) in [("uplink", &r.uplink.lateness), ("downlink", &r.downlink.lateness)] {
        eprintln!(
            "{name}: {d} lateness over {} deliveries: median {:.1} us, p90 {:.1} us, p99 {:.1} us, max {:.1} us (realtime {})",
            l.count,
            l.median_us,
            l.p90_us,
            l.p99_us,
            l.max_us,
            r.uplink.realtime
        );
    }
}

#[test]
fn namespaces_are_created_and_torn_down() {
    let Some(_g) = setup("namespaces_are_created_and_torn_down") else { return };
    let me = std::process::id();
    let before = ours(me);
    let emu = Emulator::start(&EmulatorConfig::default()).unwrap();
    let (c, s) = (emu.netns(Side::Client).to_string(), emu.netns(Side::Server).to_string());
    let now = ours(me);
    assert!(now.contains(&c) && now.contains(&s), "{now:?}");
    // The interface is there, with the testbed MTU, and TCP uses reno.
    let out = emu.command(Side::Client, "ip", &["-o", "link", "show", "emu0"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("mtu 296"), "{}", String::from_utf8_lossy(&out.stdout));
    for side in [Side::Client, Side::Server] {
        let out = emu.command(side, "cat", &["/proc/sys/net/ipv4/tcp_congestion_control"]).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "reno");
    }
    let r = emu.stop().unwrap();
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    assert_eq!(ours(me), before);
    // No TUN device leaks into the initial namespace.
    let links = Command::new("ip").args(["-o", "link"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&links.stdout).contains("cemu"), "leftover TUN device");

    // A panic while the emulator runs still tears it down (Drop).
    let res = std::panic::catch_unwind(|| {
        let _emu = Emulator::start(&EmulatorConfig::default()).unwrap();
        panic!("boom");
    });
    assert!(res.is_err());
    assert_eq!(ours(me), before);
}

#[test]
fn stale_namespaces_of_dead_runs_are_removed() {
    let Some(_g) = setup("stale_namespaces_of_dead_runs_are_removed") else { return };
    // 4194305 > PID_MAX_LIMIT: no process can have it.
    let stale = "coapcc-emu-4194305-0-c";
    netns::ip(&["netns", "add", stale]).unwrap();
    let emu = Emulator::start(&EmulatorConfig::default()).unwrap();
    assert!(!netns::list().contains(&stale.to_string()));
    emu.stop().unwrap();
}

#[test]
fn cli_propagates_the_client_exit_code_and_cleans_up() {
    let Some(_g) = setup("cli_propagates_the_client_exit_code_and_cleans_up") else { return };
    let pidfile = std::env::temp_dir().join(format!("coapcc-emu-test-{}.pid", std::process::id()));
    let _ = std::fs::remove_file(&pidfile);
    let server = format!("echo $$ > {}; exec sleep 30", pidfile.display());
    let child = Command::new(EMU)
        .args(["--quiet", "--server-start-ms", "200", "--server-cmd", &server, "--client-cmd", "exit 3"])
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(ours(pid).is_empty(), "leftover namespaces {:?}", ours(pid));
    let spid: i32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
    let _ = std::fs::remove_file(&pidfile);
    std::thread::sleep(Duration::from_millis(100));
    assert!(!std::path::Path::new(&format!("/proc/{spid}")).exists(), "server command still running");

    // Interrupted: SIGINT while the client runs -> 130, everything removed.
    let child = Command::new(EMU).args(["--quiet", "--client-cmd", "sleep 30"]).spawn().unwrap();
    let pid = child.id();
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(ours(pid).len(), 2, "namespaces exist while running");
    Command::new("kill").args(["-INT", &pid.to_string()]).status().unwrap();
    let t0 = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    assert!(t0.elapsed() < Duration::from_secs(5));
    assert!(ours(pid).is_empty());

    // --timeout bounds a client that never ends: 124.
    let out = Command::new(EMU).args(["--quiet", "--timeout", "1", "--client-cmd", "sleep 30"]).output().unwrap();
    assert_eq!(out.status.code(), Some(124));

    // Bad arguments: the emulator's own error code, nothing created.
    let out = Command::new(EMU).args(["--buffer", "10"]).output().unwrap();
    assert_eq!(out.status.code(), Some(125));
    assert!(String::from_utf8_lossy(&out.stderr).contains("smaller than one packet"));
}

/// Whether process `pid` exists and is not a zombie (an orphan's zombie may linger when the
/// machine's init does not reap).
fn running(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.rsplit_once(") ").is_some_and(|(_, rest)| !rest.starts_with('Z')),
        Err(_) => false,
    }
}

fn read_pid(path: &std::path::Path) -> Option<i32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

#[test]
fn commands_die_with_the_emulator_even_on_sigkill() {
    let Some(_g) = setup("commands_die_with_the_emulator_even_on_sigkill") else { return };
    for sig in ["KILL", "TERM"] {
        let dir = std::env::temp_dir().join(format!("coapcc-emu-orphans-{}-{sig}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (ps, pc) = (dir.join("server.pid"), dir.join("client.pid"));
        // The shells stay (no exec): their children are what the parent-death signal misses.
        let server = format!("sleep 300 & echo $! > {}; wait", ps.display());
        let client = format!("sleep 300 & echo $! > {}; wait", pc.display());
        let mut emu = Command::new(EMU)
            .args(["--quiet", "--server-start-ms", "100", "--server-cmd", &server, "--client-cmd", &client])
            .spawn()
            .unwrap();
        let t0 = Instant::now();
        let pids = loop {
            if let (Some(a), Some(b)) = (read_pid(&ps), read_pid(&pc)) {
                break [a, b];
            }
            assert!(t0.elapsed() < Duration::from_secs(20), "commands did not start");
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(pids.iter().all(|&p| running(p)), "{pids:?}");
        Command::new("kill").args([&format!("-{sig}"), &emu.id().to_string()]).status().unwrap();
        let status = emu.wait().unwrap();
        let t0 = Instant::now();
        while pids.iter().any(|&p| running(p)) && t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let left: Vec<i32> = pids.iter().copied().filter(|&p| running(p)).collect();
        for &p in &left {
            Command::new("kill").args(["-KILL", &p.to_string()]).status().unwrap();
        }
        assert!(left.is_empty(), "SIG{sig}: commands still running after the emulator ended: {left:?}");
        eprintln!("SIG{sig}: emulator {status}, both commands gone after {:?}", t0.elapsed());
        if sig == "TERM" {
            assert_eq!(status.code(), Some(130));
            assert!(ours(emu.id()).is_empty());
        } else {
            // A killed emulator cannot remove its namespaces: the next start does.
            assert_eq!(ours(emu.id()).len(), 2);
            netns::cleanup_stale();
            assert!(ours(emu.id()).is_empty());
        }
        std::fs::remove_dir_all(&dir).ok();
    }
}

/// One-way times of the packets a stop-and-wait ping sends, from the link model alone.
fn model_rtts(cfg: &EmulatorConfig, n: usize, req: u32, resp: u32) -> Vec<f64> {
    let mut up = LinkPath::new(&cfg.uplink, cfg.mtu, cfg.seed, STREAM_UPLINK).unwrap();
    let mut down = LinkPath::new(&cfg.downlink, cfg.mtu, cfg.seed, STREAM_DOWNLINK).unwrap();
    let mut t = 0u64;
    (0..n)
        .map(|_| {
            let a = up.transmit(t, req).at;
            let b = down.transmit(a, resp).at;
            let rtt = (b - t) as f64 * 1e-6;
            t = b + 1_000_000;
            rtt
        })
        .collect()
}

/// Ping through the emulator and compare with the link model.
///
/// Exact part: each packet's model delay as the emulator computed it (`at − t_in`, from the
/// trace) is the offline model's, to the nanosecond, and the sum of both directions is the
/// model RTT. Timed part: measured RTT − model RTT = ingress + uplink lateness + server
/// turnaround + downlink lateness + egress. The forwarder's lateness is measured per packet;
/// the endpoints' share is three wake-ups. So each RTT must lie within
/// `base_ms` + the two measured latenesses + 3 × the machine's p90 wake-up lateness of the model
/// (one outlier tolerated), and the median error within `base_ms / 2` + 3 × the median wake-up
/// lateness.
fn ping_attempt(cfg: &EmulatorConfig, server: &str, count: usize, ip_size: u32, base_ms: f64) -> Result<(), String> {
    let emu = Emulator::start(cfg).unwrap();
    let _echo = probe_server(&emu, Side::Server, &["udp-echo", "--bind", server, "--max-seconds", "60"]);
    let (w50, w90) = wakeup_lateness_us();
    let target = if server.starts_with('[') { "[fd00:198:18::2]:7000" } else { "198.18.0.2:7000" };
    let n = count.to_string();
    let v = probe_json(&emu, Side::Client, &["udp-ping", "--server", target, "--count", &n, "--size", "11"]);
    let r = emu.stop().unwrap();
    let rtts: Vec<f64> = v["rtts_ms"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
    assert_eq!(rtts.len(), count);
    let model = model_rtts(cfg, count, ip_size, ip_size);
    let (up, down) = (&r.uplink.trace, &r.downlink.trace);
    assert_eq!((up.len(), down.len()), (count, count), "only the pings cross the model");
    // Exact: the emulator ran the model (load cannot change this).
    let mut offline_up = LinkPath::new(&cfg.uplink, cfg.mtu, cfg.seed, STREAM_UPLINK).unwrap();
    let mut offline_down = LinkPath::new(&cfg.downlink, cfg.mtu, cfg.seed, STREAM_DOWNLINK).unwrap();
    for i in 0..count {
        let (u, d) = (&up[i], &down[i]);
        assert_eq!((u.size, d.size), (ip_size, ip_size));
        let (ou, od) = (offline_up.transmit(u.t_in, u.size), offline_down.transmit(d.t_in, d.size));
        assert_eq!((u.at, d.at), (ou.at, od.at), "ping {i}: model delivery times");
        assert_eq!((u.at - u.t_in + d.at - d.t_in) as f64 * 1e-6, model[i], "ping {i}: model RTT");
    }
    let err: Vec<f64> = rtts.iter().zip(&model).map(|(m, e)| m - e).collect();
    eprintln!("ping: measured {rtts:.3?} ms\nping: model    {model:.3?} ms\nping: error    {err:.3?} ms");
    eprintln!("ping: machine wake-up lateness median {w50:.0} us, p90 {w90:.0} us");
    // Where the difference comes from, per ping (µs).
    let e0 = r.epoch_monotonic_ns as i64;
    let ns = |k: &str| -> Vec<i64> { v[k].as_array().unwrap().iter().map(|x| x.as_i64().unwrap() - e0).collect() };
    let (sent, recv) = (ns("sent_monotonic_ns"), ns("recv_monotonic_ns"));
    let mut misses = Vec::new();
    for i in 0..count {
        let (u, d) = (&up[i], &down[i]);
        let us = |x: i64| x as f64 / 1000.0;
        let (lu, ld) = (us(u.t_out.unwrap() as i64 - u.at as i64), us(d.t_out.unwrap() as i64 - d.at as i64));
        eprintln!(
            "ping {i}: client send -> uplink read {:.0} us, uplink lateness {lu:.0} us, uplink write -> downlink read (server) {:.0} us, downlink lateness {ld:.0} us, downlink write -> client receive {:.0} us",
            us(u.t_in as i64 - sent[i]),
            us(d.t_in as i64 - u.t_out.unwrap() as i64),
            us(recv[i] - d.t_out.unwrap() as i64)
        );
        let tol = base_ms + (lu + ld + 3.0 * w90) * 1e-3;
        if err[i].abs() >= tol {
            misses.push(format!("ping {i}: error {:.3} ms, tolerance {tol:.3} ms", err[i]));
        }
    }
    print_timing("ping", &r);
    assert_eq!(r.uplink.counters.delivered_packets, count as u64);
    assert_eq!(r.flows.len(), 1);
    assert_eq!(r.flows[0].proto, "udp");
    if server.starts_with('[') {
        assert!(r.flows[0].client.starts_with("[fd00:198:18::1]"), "{:?}", r.flows[0]);
    }
    if misses.len() > count / 10 {
        return Err(misses.join("; "));
    }
    let mut sorted = err.clone();
    sorted.sort_by(|a, b| a.total_cmp(b));
    let median = sorted[count / 2];
    let tol = base_ms / 2.0 + 3.0 * w50 * 1e-3;
    if median.abs() >= tol {
        return Err(format!("median error {median:.3} ms, tolerance {tol:.3} ms"));
    }
    Ok(())
}

#[test]
fn udp_ping_rtt_matches_the_model() {
    let Some(_g) = setup("udp_ping_rtt_matches_the_model") else { return };
    let cfg = EmulatorConfig { seed: 7, trace: true, ..EmulatorConfig::default() };
    // 39-byte packets both ways: 0.6 s + 5.2 ms + 10.4 ms + two rest-of-path draws.
    for e in model_rtts(&cfg, 10, 39, 39) {
        assert!((630.0..670.0).contains(&e));
    }
    with_retries("udp_ping_rtt_matches_the_model", || ping_attempt(&cfg, "0.0.0.0:7000", 10, 39, 2.0));
}

fn rate_of(v: &Value, size: f64) -> (usize, f64) {
    let arr: Vec<f64> = v["arrivals_s"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
    let n = arr.len();
    (n, (n - 1) as f64 * size * 8.0 / (arr[n - 1] - arr[0]))
}

#[test]
fn rates_match_both_directions() {
    let Some(_g) = setup("rates_match_both_directions") else { return };
    with_retries("rates_match_both_directions", rates_attempt);
}

/// 40 back-to-back full-size packets each way: the rates at the receivers, and the forwarder's
/// lateness against the machine's own wake-up lateness measured right after (a forwarder that
/// sleeps too long or spins wrongly shows up; a busy machine does not).
fn rates_attempt() -> Result<(), String> {
    let cfg = EmulatorConfig::testbed(1_410_000, LossModel::None);
    let emu = Emulator::start(&cfg).unwrap();
    let mut misses = Vec::new();
    for (name, rx, tx, addr, port, bps) in [
        ("downlink", Side::Client, Side::Server, "198.18.0.1", "9000", 30_000.0),
        ("uplink", Side::Server, Side::Client, "198.18.0.2", "9001", 60_000.0),
    ] {
        let bind = format!("0.0.0.0:{port}");
        let sink = probe_server(&emu, rx, &["udp-sink", "--bind", &bind, "--count", "40"]);
        let to = format!("{addr}:{port}");
        let st = emu.command(tx, PROBE, &["udp-blast", "--server", &to, "--count", "40", "--size", "268"]).status();
        assert!(st.unwrap().success());
        let out = wait_output(sink);
        let (n, rate) = rate_of(&out, 296.0);
        eprintln!("{name}: {n} packets, {rate:.1} bit/s");
        assert_eq!(n, 40);
        if (rate - bps).abs() / bps >= 0.01 {
            misses.push(format!("{name} rate {rate:.1} bit/s"));
        }
    }
    let r = emu.stop().unwrap();
    print_timing("rate", &r);
    assert_eq!(r.downlink.counters.offered_bytes, 40 * 296);
    let (w50, w90) = wakeup_lateness_us();
    eprintln!("rate: machine wake-up lateness median {w50:.0} us, p90 {w90:.0} us");
    for l in [&r.uplink.lateness, &r.downlink.lateness] {
        if l.median_us >= 500.0 + w50 {
            misses.push(format!("median lateness {} us (machine: {w50:.0} us)", l.median_us));
        }
        if l.p99_us >= 5_000.0 + 3.0 * w90 {
            misses.push(format!("p99 lateness {} us (machine p90: {w90:.0} us)", l.p99_us));
        }
    }
    if misses.is_empty() {
        Ok(())
    } else {
        Err(misses.join("; "))
    }
}

#[test]
fn a_rate_schedule_runs_in_real_time() {
    let Some(_g) = setup("a_rate_schedule_runs_in_real_time") else { return };
    // The downlink switches from 30 to 60 kbit/s at 0.5 s after the start; 40 full-size packets
    // sent after that arrive at 60 kbit/s.
    let mut cfg = EmulatorConfig::testbed(1_410_000, LossModel::None);
    let mut link = coapcc_link::LinkConfig { mtu_bytes: cfg.mtu, uplink: cfg.uplink.clone(), downlink: cfg.downlink };
    link.set_schedule(false, coapcc_link::RateSchedule::parse("0.5 60000").unwrap()).unwrap();
    cfg.downlink = link.downlink;
    let emu = Emulator::start(&cfg).unwrap();
    let sink = probe_server(&emu, Side::Client, &["udp-sink", "--bind", "0.0.0.0:9000", "--count", "40"]);
    while emu.now_ns() < 600_000_000 {
        std::thread::sleep(Duration::from_millis(10));
    }
    let st = emu
        .command(Side::Server, PROBE, &["udp-blast", "--server", "198.18.0.1:9000", "--count", "40", "--size", "268"])
        .status()
        .unwrap();
    assert!(st.success());
    let out = wait_output(sink);
    let r = emu.stop().unwrap();
    let (n, rate) = rate_of(&out, 296.0);
    eprintln!("scheduled downlink: {n} packets, {rate:.1} bit/s");
    assert_eq!(n, 40);
    assert!((rate - 60_000.0).abs() / 60_000.0 < 0.02, "downlink rate {rate}");
    assert_eq!(r.downlink.counters.delivered_packets, 40);
}

fn wait_output(mut g: ChildGuard) -> Value {
    let t0 = Instant::now();
    loop {
        if let Some(_s) = g.try_wait().unwrap() {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "sink did not finish");
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = g.take_stdout();
    serde_json::from_str(out.lines().last().unwrap_or("")).unwrap_or_else(|e| panic!("sink output {out:?}: {e}"))
}

#[test]
fn small_buffer_tail_drops() {
    let Some(_g) = setup("small_buffer_tail_drops") else { return };
    let cfg = EmulatorConfig::testbed(2_500, LossModel::None);
    let emu = Emulator::start(&cfg).unwrap();
    let sink =
        probe_server(&emu, Side::Client, &["udp-sink", "--bind", "0.0.0.0:9000", "--count", "30", "--idle-ms", "1500"]);
    let st = emu
        .command(Side::Server, PROBE, &["udp-blast", "--server", "198.18.0.1:9000", "--count", "30", "--size", "268"])
        .status()
        .unwrap();
    assert!(st.success());
    let out = wait_output(sink);
    let r = emu.stop().unwrap();
    // 2500 B holds 8 packets of 296 B (the one in service included); the burst arrives within
    // one serialisation time (78.9 ms), so the other 22 are dropped at the tail.
    assert_eq!(out["received"], 8);
    assert_eq!(r.downlink.counters.delivered_packets, 8);
    assert_eq!(r.downlink.counters.buffer_drop_packets, 22);
    assert_eq!(r.downlink.counters.buffer_drop_bytes, 22 * 296);
    assert_eq!(r.downlink.max_queue_bytes, 8 * 296);
    let seqs: Vec<u64> = out["seqs"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect();
    assert_eq!(seqs, (0..8).collect::<Vec<_>>(), "the head of the burst gets through");
}

#[test]
fn bernoulli_loss_is_the_models() {
    let Some(_g) = setup("bernoulli_loss_is_the_models") else { return };
    let mut cfg = EmulatorConfig::testbed(1_410_000, LossModel::Bernoulli { p: 0.2 });
    cfg.seed = 11;
    let n = 300u32;
    let emu = Emulator::start(&cfg).unwrap();
    let sink = probe_server(
        &emu,
        Side::Server,
        &["udp-sink", "--bind", "0.0.0.0:9000", "--count", "300", "--idle-ms", "1500"],
    );
    let st = emu
        .command(Side::Client, PROBE, &["udp-blast", "--server", "198.18.0.2:9000", "--count", "300", "--size", "12"])
        .status()
        .unwrap();
    assert!(st.success());
    let out = wait_output(sink);
    let r = emu.stop().unwrap();
    let lost = r.uplink.counters.error_loss_packets;
    // The same loss stage with the same seed, offline: Bernoulli draws do not depend on time,
    // so the emulator must lose exactly as many.
    let mut path = LinkPath::new(&cfg.uplink, cfg.mtu, cfg.seed, STREAM_UPLINK).unwrap();
    for i in 0..n as u64 {
        path.transmit(i * 10_000_000, 40);
    }
    assert_eq!(lost, path.counters().error_loss_packets);
    assert_eq!(r.uplink.counters.offered_packets, n as u64);
    assert_eq!(out["received"].as_u64().unwrap(), n as u64 - lost);
    // And within 4.5 sigma of p = 0.2 (sigma = sqrt(p(1-p)/n) = 0.023).
    let rate = lost as f64 / n as f64;
    eprintln!("bernoulli: lost {lost}/{n} = {rate:.3}");
    assert!((rate - 0.2).abs() < 4.5 * (0.2f64 * 0.8 / n as f64).sqrt(), "{rate}");
}

#[test]
fn kernel_tcp_reno_transfer() {
    let Some(_g) = setup("kernel_tcp_reno_transfer") else { return };
    let cfg = EmulatorConfig::default();
    let emu = Emulator::start(&cfg).unwrap();
    let bytes = 20_480usize;
    let sink = probe_server(&emu, Side::Client, &["tcp-sink", "--bind", "0.0.0.0:9000", "--max-seconds", "60"]);
    let st = emu
        .command(
            Side::Server,
            PROBE,
            &["tcp-send", "--server", "198.18.0.1:9000", "--bytes", &bytes.to_string(), "--max-seconds", "60"],
        )
        .status()
        .unwrap();
    assert!(st.success());
    let out = wait_output(sink);
    let r = emu.stop().unwrap();
    assert_eq!(out["bytes"].as_u64().unwrap() as usize, bytes);
    let marks: Vec<(f64, f64)> =
        out["marks"].as_array().unwrap().iter().map(|m| (m[0].as_f64().unwrap(), m[1].as_f64().unwrap())).collect();
    // Steady state: from a quarter of the object to the end (slow start is over by then).
    let q = marks.iter().find(|m| m.0 >= bytes as f64 / 4.0).unwrap();
    let last = marks.last().unwrap();
    let goodput = (last.0 - q.0) * 8.0 / (last.1 - q.1);
    // MSS 256 in 296-byte packets: payload rate = 30 kbit/s * 256/296.
    let expect = 30_000.0 * 256.0 / 296.0;
    eprintln!("tcp: {bytes} B in {:.3} s, steady goodput {goodput:.0} bit/s (expected {expect:.0})", last.1);
    assert!((goodput - expect).abs() / expect < 0.04, "goodput {goodput}");
    // Every downlink data packet was a full 296-byte segment or smaller; none oversized.
    assert_eq!(r.downlink.oversized_packets + r.uplink.oversized_packets, 0);
    assert!(r.downlink.counters.offered_bytes >= (bytes as u64 / 256) * 296);
    assert_eq!(r.flows.iter().filter(|f| f.proto == "tcp").count(), 1);
}

/// `ss -tin` of the TCP connection to `peer` in a namespace once its handshake is over, polled
/// (at most 5 s).
fn ss_connection(emu: &Emulator, side: Side, peer: &str) -> String {
    let mut last = String::new();
    for _ in 0..50 {
        let out = emu.command(side, "ss", &["-tin"]).output().expect("ss (iproute2)");
        last = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        // Past the handshake: ESTAB, or FIN-WAIT-1 once the sender has written everything
        // and closed while its data drains. The state line and the info line under it.
        let lines: Vec<&str> = last.lines().collect();
        for (i, l) in lines.iter().enumerate() {
            if (l.starts_with("ESTAB") || l.starts_with("FIN-WAIT-1")) && l.contains(peer) && i + 1 < lines.len() {
                return format!("{l} {}", lines[i + 1]);
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("no TCP connection to {peer} in the {side:?} namespace: {last}");
}

#[test]
fn helsinki2018_tcp_settings_are_in_effect() {
    let Some(_g) = setup("helsinki2018_tcp_settings_are_in_effect") else { return };
    let host_cc = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control").unwrap();
    let host_sack = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_sack").unwrap();
    // reno with the study's 2 s initial RTO (BPF sock_ops), bbr with the kernel's 1 s: two
    // emulators at once (nothing here measures time; each has its own namespaces).
    std::thread::scope(|s| {
        let hs =
            [("reno", Some(2000)), ("bbr", None)].map(|(cc, rto)| s.spawn(move || tcp_settings_in_effect(cc, rto)));
        for h in hs {
            if let Err(e) = h.join() {
                std::panic::resume_unwind(e);
            }
        }
    });
    // The host's own settings are untouched.
    assert_eq!(std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control").unwrap(), host_cc);
    assert_eq!(std::fs::read_to_string("/proc/sys/net/ipv4/tcp_sack").unwrap(), host_sack);
}

/// One emulator with the testbed's TCP settings and `cc`: the settings read back in both
/// namespaces, the initial RTO of a SYN, and a live connection using them.
fn tcp_settings_in_effect(cc: &'static str, init_rto: Option<u32>) {
    let cfg = EmulatorConfig {
        tcp_cc: Some(cc.into()),
        tcp_profile: TcpProfile::Testbed,
        tcp_init_rto_ms: init_rto,
        ..Default::default()
    };
    let emu = Emulator::start(&cfg).unwrap();
    let r = emu.report();
    assert!(r.warnings.is_empty(), "{cc}: {:?}", r.warnings);
    assert_eq!(r.tcp_init_rto.is_some(), init_rto.is_some(), "{:?}", r.tcp_init_rto);
    // The initial RTO of a socket in SYN-SENT: a SYN to an address behind the link that
    // nobody answers stays unanswered, and `ss` shows the socket's current RTO.
    let st = emu.command(Side::Client, "ip", &["route", "add", "198.18.0.9/32", "dev", "emu0"]).status().unwrap();
    assert!(st.success());
    let mut syn = emu.command(
        Side::Client,
        PROBE,
        &["tcp-send", "--server", "198.18.0.9:9", "--bytes", "1", "--max-seconds", "5"],
    );
    syn.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    let syn = ChildGuard::spawn(syn).unwrap();
    let mut line = String::new();
    for _ in 0..40 {
        let out = emu.command(Side::Client, "ss", &["-tinH", "state", "syn-sent"]).output().unwrap();
        line = String::from_utf8_lossy(&out.stdout).split_whitespace().collect::<Vec<_>>().join(" ");
        if line.contains("rto:") {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(syn);
    let want = format!("rto:{}", init_rto.unwrap_or(1000));
    eprintln!("{cc}: SYN-SENT: {line}");
    assert!(line.split_whitespace().any(|w| w == want), "{cc}: want {want}: {line}");
    for (side, peer) in [(Side::Client, "198.18.0.2"), (Side::Server, "198.18.0.1")] {
        // Read back with sysctl(8) inside the namespace, independently of the emulator.
        let keys: Vec<&str> =
            std::iter::once("net.ipv4.tcp_congestion_control").chain(TESTBED_SYSCTLS.iter().map(|kv| kv.0)).collect();
        for key in keys {
            let want = if key.ends_with("congestion_control") {
                cc
            } else {
                TESTBED_SYSCTLS.iter().find(|kv| kv.0 == key).unwrap().1
            };
            let path = format!("/proc/sys/{}", key.replace('.', "/"));
            let out = emu.command(side, "cat", &[&path]).output().unwrap();
            assert!(out.status.success(), "{key} missing in the {side:?} namespace on this kernel");
            assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), want, "{cc} {side:?} {key}");
        }
        let out = emu.command(side, "ip", &["route", "show", peer]).output().unwrap();
        let route = String::from_utf8_lossy(&out.stdout).to_string();
        // iproute2 prints `rto_min lock 200ms` (the attribute is locked against the
        // per-socket value).
        for attr in ["initcwnd 4", "200ms", &format!("congctl {cc}")] {
            assert!(route.contains(attr), "{cc} {side:?}: route '{route}' lacks '{attr}'");
        }
        assert!(route.contains("rto_min"), "{cc} {side:?}: route '{route}' lacks rto_min");
        let idx = usize::from(side == Side::Server);
        assert_eq!(r.tcp_settings[idx].route, route.trim());
    }
    // A live connection uses them: the congestion control, MSS 256 from the MTU, and
    // neither timestamps nor SACK were negotiated (`ss` lists `ts` and `sack` when they are).
    let sink = probe_server(&emu, Side::Client, &["tcp-sink", "--bind", "0.0.0.0:9001", "--max-seconds", "20"]);
    let mut send = emu.command(
        Side::Server,
        PROBE,
        &["tcp-send", "--server", "198.18.0.1:9001", "--bytes", "3000", "--max-seconds", "20"],
    );
    send.stdin(Stdio::null()).stdout(Stdio::null());
    let mut sender = ChildGuard::spawn(send).unwrap();
    let info = ss_connection(&emu, Side::Server, "198.18.0.1:9001");
    eprintln!("{cc}: ss -tin: {}", info.trim());
    let words: Vec<&str> = info.split_whitespace().collect();
    assert!(words.contains(&cc), "{cc}: {info}");
    assert!(!words.contains(&"ts") && !words.contains(&"sack"), "{cc}: {info}");
    assert!(words.contains(&"mss:256"), "{cc}: {info}");
    // Initial window 4: until the first data ACK (bytes_acked:1 counts only the SYN), the
    // sender has sent exactly 4 data segments (it had 3 000 B, 12 segments, to send; the first ACK comes
    // one 0.64 s round trip later, so the first poll normally sees this).
    let field = |name: &str| words.iter().find_map(|w| w.strip_prefix(name)).and_then(|v| v.parse::<u64>().ok());
    if field("bytes_acked:") == Some(1) {
        assert_eq!(field("data_segs_out:"), Some(4), "{cc}: {info}");
    }
    let mut sent = None;
    for _ in 0..300 {
        sent = sender.try_wait().unwrap();
        if sent.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(sent.is_some_and(|s| s.success()), "{cc}: tcp-send did not finish: {sent:?}");
    let out = wait_output(sink);
    assert_eq!(out["bytes"].as_u64(), Some(3000));
    drop(sender);
    emu.stop().unwrap();
}

#[test]
fn ipv6_with_a_large_mtu() {
    let Some(_g) = setup("ipv6_with_a_large_mtu") else { return };
    if !std::path::Path::new("/proc/sys/net/ipv6").exists() {
        skip("ipv6_with_a_large_mtu", "IPv6 is disabled in this kernel");
        return;
    }
    // 59-byte IPv6 packets both ways; the model sees only the pings (ND/MLD bypass it: the
    // attempt checks that exactly the pings crossed it).
    let cfg = EmulatorConfig { mtu: 1500, seed: 3, trace: true, ..EmulatorConfig::default() };
    with_retries("ipv6_with_a_large_mtu", || ping_attempt(&cfg, "[::]:7000", 5, 59, 2.0));
}
