//! The standalone binary's usage errors: one line, status 2, numbers checked as `coapcc`'s
//! are (coapcc-args). Needs no root: nothing is started.

use std::process::Command;

const EMU: &str = env!("CARGO_BIN_EXE_coapcc-emu");

fn run(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(EMU).args(args).output().expect("run coapcc-emu");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn bad_numbers_are_one_line_usage_errors() {
    for (args, says) in [
        (&["--buffer", "-5"][..], "-5 is not in 0..="),
        (&["--seed", "-1"][..], "-1 is not in 0..="),
        (&["--buffer", "99999999999999999999"][..], "is not in 0..="),
        (&["--timeout", "nan"][..], "must be a finite number"),
        (&["--no-such-flag"][..], "unexpected argument"),
    ] {
        let (code, err) = run(args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("coapcc-emu: error: ") && err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn a_huge_timeout_is_shown_short() {
    let (code, err) = run(&["--timeout", "1e300", "--client-cmd", "true"]);
    assert_ne!(code, Some(0), "{err}");
    assert!(err.contains("(got 1e300)"), "{err}");
}

#[test]
fn help_goes_to_stdout_with_status_0() {
    let out = Command::new(EMU).arg("--help").output().expect("run coapcc-emu");
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("--buffer"));
}
