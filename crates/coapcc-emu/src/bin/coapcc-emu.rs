//! Standalone `coapcc-emu` binary: the `coapcc emulate` subcommand on its own.
use clap::Parser;

#[derive(Parser)]
#[command(name = "coapcc-emu", about = "Emulate the Helsinki constrained link between two network namespaces")]
struct Cli {
    #[command(flatten)]
    args: coapcc_emu::EmulateArgs,
}

fn main() {
    let cli = Cli::parse();
    std::process::exit(coapcc_emu::emulate_main(&cli.args));
}
