//! Stand-in endpoints for the emulator's tests and validation (see `coapcc_emu::probe`).
fn main() {
    std::process::exit(coapcc_emu::probe::main(std::env::args()));
}
