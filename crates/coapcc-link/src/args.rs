//! The link flags of the command lines, declared once.

/// Declare the clap struct of the link flags shared by `coapcc simulate` and `coapcc emulate`
/// (`--buffer`, `--errors`, `--error-clock`, `--burst-packets`, `--rest-of-path-ms`,
/// `--overhead-bytes`, `--uplink-schedule`, `--downlink-schedule`) in the calling crate, with `fn overrides(&self) -> LinkOverrides`.
///
/// This crate does not depend on clap: the macro expands in the command-line crate that
/// invokes it (which must depend on clap with the `derive` feature), so the flags are written
/// once and live with each command line. What the flags mean, their parsing and their errors
/// are [`LinkOverrides::apply`](crate::LinkOverrides::apply)'s.
///
/// ```ignore
/// coapcc_link::link_args!(
///     /// Link flags.
///     pub struct LinkArgs
/// );
/// ```
#[macro_export]
macro_rules! link_args {
    ($(#[$meta:meta])* $vis:vis struct $name:ident) => {
        $(#[$meta])*
        #[derive(::clap::Args, Clone, Debug, Default, PartialEq)]
        $vis struct $name {
            /// Bottleneck buffer in bytes, both directions (spec sizes: 2500, 14100, 28200,
            /// 1410000). Default 28200.
            #[arg(long, value_name = "BYTES")]
            pub buffer: Option<u64>,
            /// Link errors, both directions (independent processes): none | low | medium | high |
            /// bernoulli:P | ge:P,R,K,H | ge-time:T_L,T_B,K,H (K, H = loss probabilities in the
            /// low-error and burst states). Default none.
            #[arg(long, value_name = "MODEL")]
            pub errors: Option<String>,
            /// Clock of the medium/high profiles' error chain: time (default; exponential sojourns,
            /// T_B = 1 s inferred, or the preset's fitted T_B with --preset helsinki2018) or packet.
            #[arg(long, value_name = "time|packet", value_parser = <$crate::ErrorClock as ::core::str::FromStr>::from_str)]
            pub error_clock: Option<$crate::ErrorClock>,
            /// Mean burst length in packets of the profiles with --error-clock packet (not
            /// published; default 5).
            #[arg(long, value_name = "PACKETS")]
            pub burst_packets: Option<f64>,
            /// Rest-of-path delay bounds MIN,MAX in ms, both directions (default 10,20).
            #[arg(long, value_name = "MIN,MAX")]
            pub rest_of_path_ms: Option<String>,
            /// Bytes added per packet by the rate stages (link-layer header; default 0).
            #[arg(long, value_name = "BYTES")]
            pub overhead_bytes: Option<u32>,
            /// Time-varying uplink: a trace file of `TIME_S RATE_BPS [LOSS]` lines, or the same
            /// inline with `;` between points (`0 60000; 10 20000 0.05`). Rate and loss from
            /// each time on (seconds since the start); the configured rate applies before the first point.
            #[arg(long, value_name = "FILE|POINTS")]
            pub uplink_schedule: Option<String>,
            /// Time-varying downlink (as --uplink-schedule).
            #[arg(long, value_name = "FILE|POINTS")]
            pub downlink_schedule: Option<String>,
        }

        impl $name {
            /// The flags as plain data.
            pub fn overrides(&self) -> $crate::LinkOverrides {
                $crate::LinkOverrides {
                    buffer: self.buffer,
                    errors: self.errors.clone(),
                    error_clock: self.error_clock,
                    burst_packets: self.burst_packets,
                    rest_of_path_ms: self.rest_of_path_ms.clone(),
                    overhead_bytes: self.overhead_bytes,
                    preset: None,
                    uplink_schedule: self.uplink_schedule.clone(),
                    downlink_schedule: self.downlink_schedule.clone(),
                }
            }
        }
    };
}
