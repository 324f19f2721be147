//! `coapcc client`'s exit status: 0 on success, 4 and 5 on 4.xx and 5.xx responses (0 with
//! `--lenient-exit`, libcoap's behaviour), 1 when the server is unreachable.

use std::io::Read;
use std::process::{Child, Command, Stdio};

fn coapcc() -> Command {
    Command::new(env!("CARGO_BIN_EXE_coapcc-rs"))
}

/// Start `coapcc server` on a free loopback port; returns it and its address.
// The caller kills and waits for the returned child.
#[allow(clippy::zombie_processes)]
fn server() -> (Child, String) {
    let mut child = coapcc()
        .args(["server", "--bind", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 256];
    loop {
        let text = String::from_utf8_lossy(&seen).to_string();
        // stderr is unbuffered: the line may arrive in pieces, so wait for its end.
        if let Some(rest) = text.split("listening on ").nth(1).filter(|r| r.contains('\n')) {
            let addr = rest.split_whitespace().next().expect("an address");
            return (child, addr.to_string());
        }
        let n = stderr.read(&mut buf).unwrap();
        assert!(n > 0, "server exited early: {text}");
        seen.extend_from_slice(&buf[..n]);
    }
}

fn client(args: &[&str]) -> i32 {
    coapcc().arg("client").args(args).stdout(Stdio::null()).stderr(Stdio::null()).status().unwrap().code().unwrap()
}

#[test]
fn exit_status_follows_the_response_class() {
    let (mut srv, addr) = server();
    let ok = client(&[&format!("coap://{addr}/hello")]);
    let not_found = client(&[&format!("coap://{addr}/nope")]);
    let lenient = client(&[&format!("coap://{addr}/nope"), "--lenient-exit"]);
    let not_allowed = client(&[&format!("coap://{addr}/hello"), "-m", "delete"]);
    let _ = srv.kill();
    let _ = srv.wait();
    assert_eq!((ok, not_found, lenient, not_allowed), (0, 4, 0, 4));
    // Nobody listens any more: ICMP port unreachable ends the run with status 1.
    assert_eq!(client(&[&format!("coap://{addr}/hello")]), 1);
}
