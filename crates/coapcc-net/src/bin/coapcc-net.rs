//! `coapcc-net`: stand-alone front end with the same `server` and `client` subcommands the
//! `coapcc` command wires up (`coapcc-net server --bind 127.0.0.1:5683`,
//! `coapcc-net client coap://127.0.0.1:5683/hello`). The interop tests run it as a process so
//! that it can be started inside the link emulator's network namespaces.
use clap::{Parser, Subcommand};
use coapcc_net::{client_main, server_main, ClientArgs, ServerArgs};

#[derive(Parser)]
#[command(name = "coapcc-net", version, about = "coapcc CoAP-over-UDP server and client")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the CoAP test server.
    Server(ServerArgs),
    /// Send requests and log every exchange as JSON lines.
    Client(ClientArgs),
}

fn main() {
    let cli: Cli = coapcc_args::parse("coapcc-net");
    let code = match cli.command {
        Command::Server(a) => server_main(a),
        Command::Client(a) => client_main(a),
    };
    std::process::exit(code);
}
