//! The mote: its processor and buffers, as Cooja's emulated Contiki motes have them
//! ([`MoteConfig`]).
//!
//! Cooja emulates the MSP430 of a Sky or Z1 mote instruction by instruction (MSPSim) with its
//! CC2420 radio, so a mote spends real time on every packet and does one thing at a time.
//! With `mote.cpu = true` the network models what that does to the radio (`net/contiki.rs`):
//!
//! - **Receive FIFO** (`rx_fifo_bytes`, 128: the CC2420's RXFIFO, MSPSim `CC2420.java`): the
//!   radio writes each frame for the node (length byte + PSDU) into it on its own; a frame
//!   that does not fit overflows it, is lost, and the radio receives nothing more until the
//!   processor has read what is there and flushed it (Contiki `cc2420.c`: `cc2420_read` ends
//!   with `flushrx()` when FIFOP is set and FIFO is not).
//! - **One packet at a time** (one `packetbuf`, one `uip_buf`): the processor reads a frame
//!   out of the FIFO over SPI and runs it through the stack (6LoWPAN, IPv6, RPL, CSMA
//!   queueing, or the application) before it looks at the next; the radio's interrupt only
//!   polls the driver's process.
//! - **Synchronous sending** (Contiki `nullrdc.c` `send_list`, `cc2420.c`
//!   `cc2420_transmit`): a neighbour queue's packets are written to the TX FIFO over SPI and
//!   sent one after the other while the processor waits for each transmission to end; frames
//!   that arrive meanwhile wait in the receive FIFO.
//!
//! The processing times are not published and cannot be read off the code: they are
//! estimates (the Z1's 8 MHz MSP430, SPI at SMCLK/2; the Sky border router at 3.9 MHz,
//! `platform/{z1,sky}/platform-conf.h` `F_CPU`), swept in the study's sensitivity figures.

use serde::{Deserialize, Serialize};

/// The processor and buffers of every mote (the DODAG root's processor runs
/// `root_cpu_factor` times slower).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MoteConfig {
    /// Model the processor and the receive FIFO (`false`: packets take no processing time and
    /// the radio never overflows; the `ieee802154` and `makarem2021` presets).
    pub cpu: bool,
    /// Receive FIFO, bytes (CC2420 RXFIFO: 128). A frame takes its PSDU + 1 (length byte).
    pub rx_fifo_bytes: u32,
    /// SPI time per byte read from or written to the radio, µs (Z1: 8 MHz MSP430, SPI at
    /// SMCLK/2 = 2 µs per byte plus the driver's loop; estimate 4).
    pub spi_byte_us: f64,
    /// Processing of one received packet after it has been read, µs: 6LoWPAN decompression,
    /// the IPv6/RPL input and forwarding decision, compression and CSMA queueing (or the hand
    /// over to the application). Not published; estimate 2 000 for the Z1 (8 MHz).
    pub rx_process_us: f64,
    /// Preparing one frame for transmission before its CCA, µs, besides writing it over SPI
    /// (framer, `cc2420_prepare`, `SRXON`; the CC2420's RSSI-valid wait of 8 symbols is the
    /// MAC's `cca_us`). Estimate 300.
    pub tx_prepare_us: f64,
    /// The DODAG root's processor is this many times slower (a Tmote Sky at 3.9 MHz against
    /// the Z1 clients' 8 MHz: 2.05).
    pub root_cpu_factor: f64,
}

impl Default for MoteConfig {
    fn default() -> Self {
        MoteConfig {
            cpu: false,
            rx_fifo_bytes: 128,
            spi_byte_us: 4.0,
            rx_process_us: 2000.0,
            tx_prepare_us: 300.0,
            root_cpu_factor: 8.0 / 3.9,
        }
    }
}

impl MoteConfig {
    /// Check the parameters; the first problem as a one-line message.
    pub fn validate(&self) -> Result<(), String> {
        for (k, v) in [
            ("spi_byte_us", self.spi_byte_us),
            ("rx_process_us", self.rx_process_us),
            ("tx_prepare_us", self.tx_prepare_us),
        ] {
            if !(v.is_finite() && (0.0..=1e7).contains(&v)) {
                return Err(format!("mote.{k} must be between 0 and 1e7 µs, got {v}"));
            }
        }
        if !(self.root_cpu_factor.is_finite() && self.root_cpu_factor > 0.0 && self.root_cpu_factor <= 100.0) {
            return Err(format!("mote.root_cpu_factor must be in (0, 100], got {}", self.root_cpu_factor));
        }
        if self.cpu && self.rx_fifo_bytes < 8 {
            return Err(format!("mote.rx_fifo_bytes must be at least 8, got {}", self.rx_fifo_bytes));
        }
        Ok(())
    }
}
