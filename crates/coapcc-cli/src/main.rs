//! Standalone Rust build of the `coapcc` command (the Python package's `coapcc` command
//! forwards the same subcommands to [`coapcc_cli::main`]).
fn main() {
    std::process::exit(coapcc_cli::main(std::env::args_os()));
}
