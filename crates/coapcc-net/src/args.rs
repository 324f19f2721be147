//! Validation of command-line numbers shared by the server and the client.

use std::time::Duration;

use anyhow::bail;

/// Longest duration any option accepts: 10⁸ s (about three years). Larger values are
/// certainly mistakes, and bounding them keeps every deadline computation in range.
pub const MAX_SECS: f64 = 1e8;

/// `secs` seconds as a [`Duration`], for the option named `flag`. Refuses NaN, infinities,
/// negative values, values above [`MAX_SECS`] and, unless `allow_zero`, zero, with a message
/// that names the option.
pub fn secs(flag: &str, secs: f64, allow_zero: bool) -> anyhow::Result<Duration> {
    let lower_ok = if allow_zero { secs >= 0.0 } else { secs > 0.0 };
    if !(secs.is_finite() && lower_ok && secs <= MAX_SECS) {
        let low = if allow_zero { "0" } else { "more than 0" };
        let shown = if secs.abs() < 1e9 { format!("{secs}") } else { format!("{secs:e}") };
        bail!("{flag} must be a number of seconds from {low} to {MAX_SECS:e}, got {shown}");
    }
    // `try_from_secs_f64` cannot fail inside these bounds; keep the check anyway.
    Ok(Duration::try_from_secs_f64(secs)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds() {
        assert_eq!(secs("--t", 1.5, false).unwrap(), Duration::from_millis(1500));
        assert_eq!(secs("--t", 0.0, true).unwrap(), Duration::ZERO);
        for bad in [0.0, -1.0, 1e300, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, MAX_SECS * 1.0001] {
            let e = secs("--t", bad, false).unwrap_err().to_string();
            assert!(e.starts_with("--t must be"), "{e}");
        }
        assert!(secs("--t", -0.5, true).is_err());
        assert!(secs("--t", MAX_SECS, false).is_ok());
    }
}

/// A termination signal the server and the client shut down cleanly on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shutdown {
    /// SIGINT (Ctrl-C).
    Interrupt,
    /// SIGTERM (what `timeout`, systemd, batch schedulers and `coapcc emulate` send).
    Terminate,
}

impl Shutdown {
    /// The conventional exit status after this signal (128 + signal number).
    pub fn exit_code(self) -> i32 {
        match self {
            Shutdown::Interrupt => 130,
            Shutdown::Terminate => 143,
        }
    }

    /// The signal's name.
    pub fn name(self) -> &'static str {
        match self {
            Shutdown::Interrupt => "SIGINT",
            Shutdown::Terminate => "SIGTERM",
        }
    }
}

impl std::fmt::Display for Shutdown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "interrupted by {}", self.name())
    }
}

impl std::error::Error for Shutdown {}

/// Resolves on the first SIGINT or SIGTERM. Must be called inside a tokio runtime; the
/// handlers are installed when the future is first polled, so poll it early (pin it and
/// select on it from the start of the main loop).
pub async fn shutdown_signal() -> Shutdown {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => tokio::select! {
                _ = tokio::signal::ctrl_c() => Shutdown::Interrupt,
                _ = term.recv() => Shutdown::Terminate,
            },
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
                Shutdown::Interrupt
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
        Shutdown::Interrupt
    }
}
