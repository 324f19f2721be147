//! SIGTERM (what `timeout`, systemd, batch schedulers and `coapcc emulate` send) ends the
//! server and the client as cleanly as Ctrl-C: the log gets its summary line and is flushed.

use std::net::UdpSocket;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn coapcc() -> Command {
    Command::new(env!("CARGO_BIN_EXE_coapcc-rs"))
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
}

fn wait_exit(child: &mut Child) -> i32 {
    let end = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st.code().expect("exited, not killed by the signal");
        }
        assert!(Instant::now() < end, "did not exit after the signal");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn last_line(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str(text.lines().last().expect("log is empty")).unwrap()
}

#[test]
fn client_log_is_complete_after_sigterm() {
    let dir = std::env::temp_dir().join(format!("coapcc-sig-client-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("client.jsonl");
    // A peer that receives but never answers: the client keeps retransmitting.
    let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
    let uri = format!("coap://{}/hello", silent.local_addr().unwrap());
    let mut child = coapcc()
        .args(["client", &uri, "--log", log.to_str().unwrap(), "--seed", "1"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The start line is buffered; wait until the first CON reached the silent peer.
    silent.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    silent.recv_from(&mut [0u8; 1500]).expect("the client sends its request");
    std::thread::sleep(Duration::from_millis(100));
    signal(&child, libc::SIGTERM);
    assert_eq!(wait_exit(&mut child), 143);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.lines().next().unwrap().contains("\"type\":\"start\""), "{text}");
    let last = last_line(&log);
    assert_eq!((last["type"].as_str(), last["interrupted"].as_str()), (Some("summary"), Some("SIGTERM")));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn server_log_is_complete_after_sigterm_and_sigint() {
    for (sig, name) in [(libc::SIGTERM, "term"), (libc::SIGINT, "int")] {
        let dir = std::env::temp_dir().join(format!("coapcc-sig-server-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("server.jsonl");
        let mut child = coapcc()
            .args(["server", "--bind", "127.0.0.1:0", "--log", log.to_str().unwrap()])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The server announces itself on stderr once its signal handlers are installed.
        let mut stderr = child.stderr.take().unwrap();
        let mut seen = Vec::new();
        let mut buf = [0u8; 256];
        while !String::from_utf8_lossy(&seen).contains("listening on") {
            let n = std::io::Read::read(&mut stderr, &mut buf).unwrap();
            assert!(n > 0, "server exited early: {}", String::from_utf8_lossy(&seen));
            seen.extend_from_slice(&buf[..n]);
        }
        signal(&child, sig);
        assert_eq!(wait_exit(&mut child), 0, "a signal is the server's normal end");
        let last = last_line(&log);
        assert_eq!(last["type"], "summary", "{name}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
