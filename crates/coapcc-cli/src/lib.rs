//! The Rust half of the `coapcc` command line.
//!
//! `coapcc` is one command for users: the Python package installs it, handles the
//! experiment-level subcommands (`sweep`, `report`, `reproduce`) itself and forwards every
//! other subcommand here, so that `coapcc simulate` starts in milliseconds and never imports
//! pandas. The same parser is also built as the standalone binary `coapcc-rs`.

use std::ffi::OsString;
use std::io::Write;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

mod algorithms;
pub use coapcc_args as args;
mod tcp_algorithms;

pub use algorithms::registry_json;

/// Version string shared by every front end.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

#[derive(Parser, Debug)]
#[command(name = "coapcc", version = VERSION, about = "CoAP congestion control: algorithms, simulation, real endpoints", long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// List every congestion-control algorithm (CoAP over UDP, and TCP: newreno, bbr) with its
    /// parameters and defaults.
    Algorithms(algorithms::AlgorithmsArgs),
    /// Simulate N CoAP clients over the constrained-link testbed (deterministic, seeded).
    Simulate(Box<coapcc_sim::cli::SimulateArgs>),
    /// Run the CoAP-over-UDP test server (/hello, /large, /echo, /slow, /.well-known/core).
    Server(coapcc_net::ServerArgs),
    /// Send CoAP requests with any congestion-control algorithm; one JSON line per exchange.
    Client(coapcc_net::ClientArgs),
    /// Run commands in two network namespaces joined by the emulated constrained link (root).
    Emulate(coapcc_emu::EmulateArgs),
    /// Simulate CoAP over a multi-hop 802.15.4 mesh (CSMA/CA, RPL grid; deterministic, seeded).
    Mesh(coapcc_sim::mesh_command::MeshArgs),
    /// Replay the RTT scenarios of Makarem's Table 5.1 through RTO algorithms: spurious
    /// retransmissions and RMSE(RTO, RTT) per scenario.
    RttScenarios(coapcc_studies::cli::RttScenariosArgs),
    /// One sender under a varying residual bandwidth (Makarem, chapter 6): goodput, overhead,
    /// application loss ratio.
    Resbw(coapcc_studies::cli::ResBwArgs),
}

/// The Rust command line's subcommands: (name, one-line help), in declaration order. Front
/// ends (the Python `coapcc` command) list and forward exactly these.
pub fn subcommands() -> Vec<(String, String)> {
    Cli::command()
        .get_subcommands()
        .map(|c| (c.get_name().to_string(), c.get_about().map(|a| a.to_string()).unwrap_or_default()))
        .collect()
}

/// The `coapcc` command line as clap builds it, every argument hardened by [`args::harden`].
pub fn command() -> clap::Command {
    args::harden(Cli::command())
}

/// The one-line usage error of `args` (including the program name), or `None` when they
/// parse (`--help` and `--version` included). Runs nothing.
pub fn usage_error<I, T>(args: I) -> Option<String>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    match command().try_get_matches_from(args).and_then(|m| Cli::from_arg_matches(&m)) {
        Err(e) if e.use_stderr() => Some(args::one_line("coapcc", &e)),
        _ => None,
    }
}

/// Run the command line with `args` (including the program name). Returns the exit code;
/// errors are printed as one line on stderr, never as a panic.
pub fn main<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let parsed = command().try_get_matches_from(args).and_then(|m| Cli::from_arg_matches(&m));
    let cli = match parsed {
        Ok(cli) => cli,
        // --help and --version: clap's own text on stdout.
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            return 0;
        }
        Err(e) => {
            eprintln!("{}", args::one_line("coapcc", &e));
            return 2;
        }
    };
    // The network commands own their runtime, output and error reporting.
    match &cli.command {
        Command::Server(a) => return coapcc_net::server_main(a.clone()),
        Command::Client(a) => return coapcc_net::client_main(a.clone()),
        Command::Emulate(a) => return coapcc_emu::emulate_main(a),
        _ => {}
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let result = match &cli.command {
        Command::Algorithms(a) => algorithms::run(a, &mut out),
        Command::Simulate(a) => coapcc_sim::cli::run(a, &mut out),
        Command::Mesh(a) => coapcc_sim::mesh_command::run(a, &mut out),
        Command::RttScenarios(a) => coapcc_studies::cli::run_rtt_scenarios(a, &mut out),
        Command::Resbw(a) => coapcc_studies::cli::run_resbw(a, &mut out),
        Command::Server(_) | Command::Client(_) | Command::Emulate(_) => unreachable!("handled above"),
    };
    let _ = out.flush();
    match result {
        Ok(()) => 0,
        // The reader of our output went away (`coapcc algorithms | head`): end quietly.
        Err(e) if is_broken_pipe(&e) => 0,
        Err(e) => {
            eprintln!("coapcc: error: {e:#}");
            1
        }
    }
}

/// Whether `e` comes from writing to a closed pipe.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    use std::io::ErrorKind::BrokenPipe;
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == BrokenPipe)
            // serde_json keeps the io::Error to itself (its source() skips it).
            || c.downcast_ref::<serde_json::Error>().is_some_and(|j| j.io_error_kind() == Some(BrokenPipe))
    })
}
