//! Standalone `coapcc-emu` binary: the `coapcc emulate` subcommand on its own.
use clap::Parser;

#[derive(Parser)]
#[command(name = "coapcc-emu", about = "Emulate the Helsinki constrained link between two network namespaces")]
struct Cli {
    #[command(flatten)]
    args: coapcc_emu::EmulateArgs,
}

fn main() {
    let cli: Cli = coapcc_args::parse("coapcc-emu");
    std::process::exit(coapcc_emu::emulate_main(&cli.args));
}
