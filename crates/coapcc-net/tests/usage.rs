//! The standalone `coapcc-net` binary's usage errors: one line, status 2, numbers checked as
//! `coapcc`'s are (coapcc-args).

use std::process::Command;

const NET: &str = env!("CARGO_BIN_EXE_coapcc-net");

#[test]
fn usage_errors_are_one_line_with_status_2() {
    for (args, says) in [
        (&["client", "coap://127.0.0.1/hello", "--max-blocks", "-1"][..], "-1 is not in 0..="),
        (&["client", "coap://127.0.0.1/hello", "--timeout", "inf"][..], "must be a finite number"),
        (&["server", "--no-such-flag"][..], "unexpected argument"),
        (&["nope"][..], "unrecognized subcommand"),
    ] {
        let out = Command::new(NET).args(args).output().expect("run coapcc-net");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("coapcc-net: error: ") && err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn a_negative_timeout_is_a_value_refused_by_its_range() {
    let out = Command::new(NET)
        .args(["client", "coap://127.0.0.1/hello", "--timeout", "-5"])
        .output()
        .expect("run coapcc-net");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("--timeout must be") && err.contains("got -5"), "{err}");
}
