//! The one place where the Rust command lines check numbers before any subcommand sees them:
//! `coapcc` (crate `coapcc-cli`) and the standalone `coapcc-net` and `coapcc-emu` binaries.
//!
//! Every clap command is built through [`harden`] (as `coapcc_cli::command` does), which
//! walks its arguments once:
//!
//! - every option that takes a value accepts a leading `-` as part of a number, so
//!   `--clients -5` is parsed as the value `-5` and then refused with a range message (instead
//!   of clap's "unexpected argument '-5'");
//! - integer options keep clap's typed range check (`-5 is not in 0..=4294967295`);
//! - every floating-point option ([`f64`]) goes through [`finite`]: NaN and infinities are
//!   refused, and a huge value is shown in scientific notation, never as a 300-digit number.
//!
//! The ranges that depend on a field's meaning (at least one client, a delay of at most
//! 10^12 ms, ...) are checked where the field is defined (the simulator's parameter schema,
//! the client's and the studies' requests); their messages show numbers with [`show`].
//!
//! A usage error is printed as one line, `PROGRAM: error: ...` (exit status 2): [`one_line`],
//! or [`parse`] for a standalone binary.

use std::any::TypeId;

use clap::builder::ValueParser;
use clap::{Arg, Command};

/// `cmd` with every subcommand's (and its own) arguments hardened as the module says.
pub fn harden(cmd: Command) -> Command {
    cmd.mut_args(harden_arg).mut_subcommands(harden)
}

fn harden_arg(a: Arg) -> Arg {
    if !a.get_action().takes_values() {
        return a;
    }
    let ty = a.get_value_parser().type_id();
    let a = a.allow_negative_numbers(true);
    if ty == TypeId::of::<f64>() {
        a.value_parser(ValueParser::new(finite))
    } else if ty == TypeId::of::<u64>() {
        // clap checks u64 and usize with `FromStr` alone ("invalid digit found in string").
        a.value_parser(ValueParser::new(|s: &str| unsigned::<u64>(s, u64::MAX)))
    } else if ty == TypeId::of::<usize>() {
        a.value_parser(ValueParser::new(|s: &str| unsigned::<usize>(s, usize::MAX)))
    } else {
        a
    }
}

/// An unsigned integer of type `T` (at most `max`), or the range it must be in.
fn unsigned<T: TryFrom<u128>>(s: &str, max: impl std::fmt::Display) -> Result<T, String> {
    let t = s.trim();
    t.parse::<i128>().ok().and_then(|v| u128::try_from(v).ok()).and_then(|v| T::try_from(v).ok()).ok_or_else(|| {
        match t.parse::<f64>() {
            Ok(_) => format!("{t} is not in 0..={max}"),
            Err(_) => format!("expected an integer, got '{s}'"),
        }
    })
}

/// A finite floating-point number (the parser of every `f64` option).
pub fn finite(s: &str) -> Result<f64, String> {
    let v: f64 = s.trim().parse().map_err(|_| format!("expected a number, got '{s}'"))?;
    if !v.is_finite() {
        return Err(format!("must be a finite number, got '{s}'"));
    }
    Ok(v)
}

/// `x` for a message: plain up to 10^9 (`1e300` stays `1e300`, never 301 digits).
pub fn show(x: f64) -> String {
    if x.is_finite() && x.abs() < 1e9 {
        format!("{x}")
    } else {
        format!("{x:e}")
    }
}

/// Parse a standalone binary's command line with every argument [`harden`]ed: `--help` and
/// `--version` print clap's text and exit 0; a usage error prints [`one_line`] and exits 2.
pub fn parse<P: clap::Parser>(program: &str) -> P {
    let parsed = harden(P::command()).try_get_matches_from(std::env::args_os()).and_then(|m| P::from_arg_matches(&m));
    match parsed {
        Ok(p) => p,
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            std::process::exit(0);
        }
        Err(e) => {
            eprintln!("{}", one_line(program, &e));
            std::process::exit(2);
        }
    }
}

/// A clap error as one line, `PROGRAM: error: ...`: its first paragraph, with any `tip:`
/// lines, joined.
pub fn one_line(program: &str, e: &clap::Error) -> String {
    let text = e.render().to_string();
    let mut parts: Vec<String> = Vec::new();
    let mut first = true;
    for para in text.split("\n\n") {
        let lines: Vec<&str> = para.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
        if lines.is_empty() {
            continue;
        }
        if first || lines[0].starts_with("tip:") {
            parts.push(lines.join(" "));
        }
        first = false;
    }
    let line = parts.join("; ");
    let line = line.strip_prefix("error: ").unwrap_or(&line).to_string();
    format!("{program}: error: {line}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finite_refuses_nan_and_infinities() {
        assert_eq!(finite("1.5"), Ok(1.5));
        assert_eq!(finite("-3"), Ok(-3.0));
        assert_eq!(finite("1e300"), Ok(1e300));
        for bad in ["nan", "inf", "-inf", "1e400", "x", ""] {
            assert!(finite(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn unsigned_gives_the_range() {
        assert_eq!(unsigned::<u64>("18446744073709551615", u64::MAX), Ok(u64::MAX));
        assert_eq!(unsigned::<u64>("-1", u64::MAX).unwrap_err(), "-1 is not in 0..=18446744073709551615");
        assert!(unsigned::<usize>("18446744073709551616", usize::MAX).unwrap_err().contains("is not in 0..="));
        assert_eq!(unsigned::<u64>("x", u64::MAX).unwrap_err(), "expected an integer, got 'x'");
    }

    #[test]
    fn show_is_short() {
        assert_eq!(show(1e300), "1e300");
        assert_eq!(show(2.5), "2.5");
        assert_eq!(show(-1e12), "-1e12");
    }
}
