//! Bad input to the Rust subcommands: one line on stderr, the documented exit status, no
//! panic, in bounded time (each case is a subprocess killed after a timeout); a closed stdout
//! ends quietly with status 0; random values thrown at every numeric option either parse or
//! get a one-line error, never a panic.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Duration;

use proptest::prelude::*;
use wait_timeout::ChildExt;

const U64: &str = "18446744073709551615";

/// Run `coapcc-rs args`, killed after 60 s: (status, stdout, stderr).
fn run(args: &[&str]) -> (i32, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_coapcc-rs"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let Some(status) = child.wait_timeout(Duration::from_secs(60)).unwrap() else {
        let _ = child.kill();
        panic!("coapcc {args:?} did not end within 60 s");
    };
    let (mut out, mut err) = (String::new(), String::new());
    child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    (status.code().expect("exited, not killed"), out, err)
}

#[test]
fn bad_inputs_get_one_line_and_their_status() {
    let dumbbell_k = format!("dumbbell:{U64},2");
    let dumbbell_m = format!("dumbbell:2,{U64}");
    let cases: &[(&[&str], i32, &str)] = &[
        (&["simulate", "--clients", "-5"], 1, "--clients: -5 is not in 0..=1000000"),
        (&["simulate", "--clients", "99999999999"], 1, "99999999999 is not in 0..=1000000"),
        (&["simulate", "--exchanges", "-5"], 2, "-5 is not in 0..=4294967295"),
        (&["simulate", "--seed", "-1"], 2, "-1 is not in 0..=18446744073709551615"),
        (&["simulate", "--server-delay-ms", "1e300"], 1, "must be <= 1e12, got 1e+300"),
        (&["simulate", "--server-delay-ms", "inf"], 2, "must be a finite number"),
        (&["simulate", "--start-jitter-ms", "-3"], 1, "must be >= 0, got -3"),
        (&["simulate", "--cc", "cocao"], 1, "unknown algorithm 'cocao' (did you mean 'cocoa'?)"),
        (&["simulate", "--cc", "cocoa:preset=helsinki18"], 1, "(did you mean 'helsinki2018'?)"),
        (&["simulate", "--transport", "tcp", "--cc", "newrneo"], 1, "(did you mean 'newreno'?)"),
        (&["simulate", "--bogus"], 2, "unexpected argument '--bogus'"),
        (&["algorithms", "cocao"], 1, "(did you mean 'cocoa'?)"),
        (&["mesh", "--message-bytes", "4294967295"], 1, "message_bytes: must be 1 to 1048576 bytes"),
        (&["mesh", "--topology", &dumbbell_k], 1, "got more than 1024"),
        (&["mesh", "--topology", &dumbbell_m], 1, "got more than 1024"),
        (&["mesh", "--topology", "dumbbell:0,0"], 1, "a dumbbell needs K >= 1"),
        (&["resbw", "--resbw", "fixed:-1"], 1, "resbw: the values must be >= 0 packets/s"),
        (&["resbw", "--rtt-ms", "fixed:0"], 1, "rtt_ms: the values must be > 0 ms"),
        (&["resbw", "--bad-mean-s", "-1"], 1, "bad_mean_s must be in (0, 1e7], got -1"),
        (&["rtt-scenarios"], 2, "required arguments were not provided: --cc"),
        (&["client", "coap://127.0.0.1:9/hello", "--nstart", "0"], 1, "--nstart must be at least 1"),
        (&["client", "coap://127.0.0.1:9/hello", "--nstart", "-1"], 2, "-1 is not in 0..=4294967295"),
        (&["client", "coap+tcp://127.0.0.1:9/hello", "--response-timeout", "1e300"], 1, "got 1e300"),
        (&["server", "--max-connections", "-1"], 2, "-1 is not in 0..="),
        (&["server", "--idle-timeout", "1e300"], 1, "got 1e300"),
        (&["rtt-scenarios", "--cc", "cocao"], 1, "(did you mean 'cocoa'?)"),
    ];
    for &(args, status, text) in cases {
        let (code, _, err) = run(args);
        assert_eq!(code, status, "{args:?}: {err}");
        let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "{args:?}: {err}");
        assert!(lines[0].contains(text), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn closed_stdout_ends_quietly() {
    for args in [&["simulate", "--json"][..], &["mesh", "--json", "--duration-s", "60"], &["algorithms", "--json"]] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_coapcc-rs"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = [0u8; 5];
        child.stdout.as_mut().unwrap().read_exact(&mut first).unwrap();
        drop(child.stdout.take()); // the reader goes away, as `| head -c5` does
        let status = child.wait_timeout(Duration::from_secs(120)).unwrap().expect("ends");
        let mut err = String::new();
        child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        assert_eq!(status.code(), Some(0), "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: {err}");
    }
}

/// Every option of every subcommand that takes a number: (subcommand, --long, type).
fn numeric_options() -> Vec<(String, String, &'static str)> {
    use std::any::TypeId;
    let types: [(TypeId, &str); 7] = [
        (TypeId::of::<f64>(), "f64"),
        (TypeId::of::<u64>(), "u64"),
        (TypeId::of::<usize>(), "usize"),
        (TypeId::of::<u32>(), "u32"),
        (TypeId::of::<u16>(), "u16"),
        (TypeId::of::<u8>(), "u8"),
        (TypeId::of::<i64>(), "i64"),
    ];
    let mut out = Vec::new();
    for sub in coapcc_cli::command().get_subcommands() {
        for a in sub.get_arguments() {
            let ty = a.get_value_parser().type_id();
            if let (Some(long), Some(&(_, name))) = (a.get_long(), types.iter().find(|(t, _)| ty == *t)) {
                out.push((sub.get_name().to_string(), long.to_string(), name));
            }
        }
    }
    out
}

/// The arguments a subcommand needs before any option can be tried.
fn required(sub: &str) -> &'static [&'static str] {
    match sub {
        "client" => &["coap://127.0.0.1/hello"],
        "rtt-scenarios" => &["--cc", "default"],
        "emulate" => &["--", "true"],
        _ => &[],
    }
}

fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i128>().prop_map(|v| v.to_string()),
        any::<i64>().prop_map(|v| v.to_string()),
        any::<f64>().prop_map(|v| v.to_string()),
        any::<f64>().prop_map(|v| format!("{v:e}")),
        "-?[0-9]{1,400}",
        "-?[0-9]{0,5}\\.?[0-9]{0,5}(e-?[0-9]{1,4})?",
        Just("nan".to_string()),
        Just("-inf".to_string()),
        Just(String::new()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

    /// Any value of any numeric option parses into its type, in range, or gets a one-line error.
    #[test]
    fn numeric_options_parse_or_refuse_in_one_line(pick in any::<prop::sample::Index>(), v in value()) {
        let opts = numeric_options();
        prop_assert!(opts.len() > 30, "{}", opts.len());
        let (sub, long, ty) = &opts[pick.index(opts.len())];
        let mut argv = vec!["coapcc".to_string(), sub.clone()];
        argv.extend(required(sub).iter().map(|s| s.to_string()));
        let tail = argv.iter().position(|a| a == "--").unwrap_or(argv.len());
        argv.splice(tail..tail, [format!("--{long}"), v.clone()]);
        match coapcc_cli::usage_error(&argv) {
            Some(e) => {
                prop_assert!(e.starts_with("coapcc: error: ") && !e.contains('\n'), "{e}");
                // Short, but for the value itself, which clap may quote twice.
                prop_assert!(e.len() < 600 + 2 * v.len(), "{e}");
            }
            None => {
                // What parsed is a value of the option's type: finite for f64.
                let t = v.trim();
                let int = t.parse::<i128>().ok();
                let within = |max: u128| int.is_some_and(|x| x >= 0 && x as u128 <= max);
                let ok = match *ty {
                    "f64" => t.parse::<f64>().is_ok_and(f64::is_finite),
                    "u64" | "usize" => within(u64::MAX.into()),
                    "u32" => within(u32::MAX.into()),
                    "u16" => within(u16::MAX.into()),
                    "u8" => within(u8::MAX.into()),
                    _ => int.is_some_and(|x| i64::try_from(x).is_ok()),
                };
                prop_assert!(ok, "{sub} --{long} {v:?} parsed as {ty}");
            }
        }
    }
}
