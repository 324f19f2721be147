//! The Rust half of the `coapcc` command line.
//!
//! `coapcc` is one command for users: the Python package installs it, handles the
//! experiment-level subcommands (`sweep`, `report`, `reproduce`) itself and forwards every
//! other subcommand here, so that `coapcc simulate` starts in milliseconds and never imports
//! pandas. The same parser is also built as the standalone binary `coapcc-rs`.

use std::ffi::OsString;
use std::io::Write;

use clap::{Parser, Subcommand};

mod algorithms;

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
    /// List every congestion-control algorithm with its parameters and defaults.
    Algorithms(algorithms::AlgorithmsArgs),
    /// Simulate N CoAP clients over the constrained-link testbed (deterministic, seeded).
    Simulate(coapcc_sim::cli::SimulateArgs),
    /// Run the CoAP-over-UDP test server (/hello, /large, /echo, /slow, /.well-known/core).
    Server(coapcc_net::ServerArgs),
    /// Send CoAP requests with any congestion-control algorithm; one JSON line per exchange.
    Client(coapcc_net::ClientArgs),
    /// Run commands in two network namespaces joined by the emulated constrained link (root).
    Emulate(coapcc_emu::EmulateArgs),
}

/// Run the command line with `args` (including the program name). Returns the exit code;
/// errors are printed as one line on stderr, never as a panic.
pub fn main<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return code;
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
    e.chain().any(|c| c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe))
}
