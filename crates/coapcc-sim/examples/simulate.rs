//! `cargo run -p coapcc-sim --example simulate -- --cc default --clients 50 --buffer 2500`
//!
//! A stand-alone front end for [`coapcc_sim::cli`], for testing without the `coapcc` binary.
use clap::Parser;

#[derive(Parser)]
#[command(name = "simulate", about = "Simulate the Helsinki constrained-link testbed")]
struct Cli {
    #[command(flatten)]
    args: coapcc_sim::cli::SimulateArgs,
}

fn main() {
    let cli = Cli::parse();
    let mut out = std::io::stdout().lock();
    if let Err(e) = coapcc_sim::cli::run(&cli.args, &mut out) {
        eprintln!("error: {e:#}");
        std::process::exit(2);
    }
}
