//! Bad input for the CoAP-over-TCP endpoints over real loopback TCP: every case ends in a
//! clear error or an Abort, never a panic, a hang or unbounded memory.

use std::net::SocketAddr;
use std::time::Duration;

use coapcc_net::client::{run_client, ClientArgs};
use coapcc_net::server::ServerArgs;
use coapcc_net::tcp_server::{TcpServer, TcpServerStats};
use coapcc_net::tcp_session::{FrameReader, SessionConfig};
use coapcc_proto::tcp::{signal, TcpMessage};
use coapcc_proto::{Code, Token};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

const LIMIT: Duration = Duration::from_secs(20);

struct Running {
    addr: SocketAddr,
    stats: std::sync::Arc<std::sync::Mutex<TcpServerStats>>,
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<TcpServerStats>,
}

async fn start(session: SessionConfig) -> Running {
    let args = ServerArgs { bind: "127.0.0.1:0".into(), tcp: true, ..ServerArgs::default() };
    let mut s = TcpServer::bind(&args).await.unwrap();
    s.set_session_config(session);
    let addr = s.local_addr().unwrap();
    let stats = s.shared_stats();
    let (stop, rx) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        s.run_until(async {
            let _ = rx.await;
        })
        .await
        .unwrap()
    });
    Running { addr, stats, stop, task }
}

impl Running {
    /// Wait (bounded) until `cond` holds for the live counters.
    async fn until(&self, cond: impl Fn(&TcpServerStats) -> bool) {
        let deadline = tokio::time::Instant::now() + LIMIT;
        while !cond(&self.stats.lock().unwrap()) {
            assert!(tokio::time::Instant::now() < deadline, "condition not reached: {:?}", self.stats.lock().unwrap());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn finish(self) -> TcpServerStats {
        let _ = self.stop.send(());
        tokio::time::timeout(LIMIT, self.task).await.expect("server stops").expect("server task")
    }
}

/// Connect, send `bytes`, and collect what the server sends until it closes.
async fn exchange(addr: SocketAddr, bytes: &[u8]) -> Vec<TcpMessage> {
    let stream = TcpStream::connect(addr).await.unwrap();
    let (r, mut w) = stream.into_split();
    w.write_all(bytes).await.unwrap();
    // Half-close: the server sees the end of our stream after these bytes.
    w.shutdown().await.unwrap();
    let mut reader = FrameReader::new(r, 1 << 20);
    // The server's CSM counts as seen by the reader; collect the raw messages after it.
    let mut got = vec![];
    let res = tokio::time::timeout(LIMIT, async {
        loop {
            match reader.next().await {
                Ok(coapcc_net::tcp_session::Inbound::Closed) => return None,
                Ok(i) => got.push(i),
                Err(e) => return Some(e),
            }
        }
    })
    .await
    .expect("the server ends the connection");
    // An Abort from the server surfaces as SessionError::Protocol(ProtocolError::Aborted).
    match res {
        Some(coapcc_net::tcp_session::SessionError::Protocol(coapcc_proto::tcp::ProtocolError::Aborted {
            diagnostic,
        })) => {
            vec![TcpMessage::abort(&diagnostic)]
        }
        _ => vec![],
    }
}

fn frame(m: &TcpMessage) -> Vec<u8> {
    m.to_bytes()
}

#[tokio::test]
async fn missing_csm_is_aborted() {
    let srv = start(SessionConfig::default()).await;
    let get = TcpMessage::new(Code::GET).with_token(Token::new(&[1]).unwrap());
    let got = exchange(srv.addr, &frame(&get)).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(String::from_utf8_lossy(&got[0].payload).contains("not a CSM"), "{got:?}");
    srv.until(|s| s.protocol_errors == 1).await;
    srv.finish().await;
}

#[tokio::test]
async fn bad_csm_is_aborted_with_the_option() {
    let srv = start(SessionConfig::default()).await;
    // A CSM with an unknown critical option (7) and an oversized Max-Message-Size.
    let mut csm = TcpMessage::csm(None, false);
    csm.options.add(7, vec![1]);
    let stream = TcpStream::connect(srv.addr).await.unwrap();
    let (mut r, mut w) = stream.into_split();
    w.write_all(&frame(&csm)).await.unwrap();
    let mut all = vec![];
    tokio::time::timeout(LIMIT, r.read_to_end(&mut all)).await.unwrap().unwrap();
    // Server CSM, then Abort carrying Bad-CSM-Option 7.
    let (first, n) = coapcc_proto::decode_frame(&all).unwrap().unwrap();
    assert_eq!(first.code, Code::CSM);
    let (abort, _) = coapcc_proto::decode_frame(&all[n..]).unwrap().unwrap();
    assert_eq!(abort.code, Code::ABORT);
    assert_eq!(abort.options.get_uint(signal::ABORT_BAD_CSM_OPTION), Some(7));
    let mut csm = TcpMessage::csm(None, false);
    csm.options.add(signal::CSM_MAX_MESSAGE_SIZE, vec![1, 2, 3, 4, 5]);
    let got = exchange(srv.addr, &frame(&csm)).await;
    assert!(String::from_utf8_lossy(&got[0].payload).contains("bad CSM"), "{got:?}");
    srv.until(|s| s.protocol_errors == 2).await;
    srv.finish().await;
}

#[tokio::test]
async fn oversized_len_is_refused_before_buffering() {
    let srv = start(SessionConfig { max_message_size: 4096, ..SessionConfig::default() }).await;
    let mut bytes = frame(&TcpMessage::csm(None, true));
    // Len 15 with a 4-byte extension of 0xFFFFFFFF: a ~4 GiB frame announced.
    bytes.extend_from_slice(&[0xF0, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]);
    let got = exchange(srv.addr, &bytes).await;
    assert!(String::from_utf8_lossy(&got[0].payload).contains("Max-Message-Size"), "{got:?}");
    srv.until(|s| s.protocol_errors == 1).await;
    srv.finish().await;
}

#[tokio::test]
async fn truncated_frame_and_garbage_do_not_hurt_the_server() {
    let srv = start(SessionConfig::default()).await;
    // Half a frame, then close.
    let mut bytes = frame(&TcpMessage::csm(None, true));
    let get = TcpMessage::new(Code::GET).with_token(Token::new(&[9]).unwrap()).with_payload(vec![7; 100]);
    let g = frame(&get);
    bytes.extend_from_slice(&g[..g.len() / 2]);
    let _ = exchange(srv.addr, &bytes).await;
    // A reserved token length (TKL 9).
    let _ = exchange(srv.addr, &[0x00, 0xE1, 0x09, 0x01]).await;
    // The server still serves a well-behaved client.
    let uri = format!("coap+tcp://{}/hello", srv.addr);
    let mut log = Vec::new();
    let s = run_client(ClientArgs::get(&uri), &mut log).await.unwrap();
    assert_eq!(s.last_payload.as_deref(), Some(&coapcc_net::resources::HELLO[..]));
    srv.until(|s| s.connections == 3 && s.clean_closes >= 1).await;
    let st = srv.finish().await;
    assert_eq!(st.connections, 3);
    assert_eq!(st.protocol_errors, 1, "{st:?}");
}

#[tokio::test]
async fn ping_pong_and_release() {
    let srv = start(SessionConfig::default()).await;
    let stream = TcpStream::connect(srv.addr).await.unwrap();
    let (r, mut w) = stream.into_split();
    let mut bytes = frame(&TcpMessage::csm(Some(1 << 16), true));
    bytes.extend(frame(&TcpMessage::ping(Token::new(&[0xAB, 0xCD]).unwrap())));
    w.write_all(&bytes).await.unwrap();
    let mut reader = FrameReader::new(r, 1 << 20);
    let pong = tokio::time::timeout(LIMIT, reader.next()).await.unwrap().unwrap();
    match pong {
        coapcc_net::tcp_session::Inbound::Pong(p) => assert_eq!(p.token.as_bytes(), &[0xAB, 0xCD]),
        other => panic!("expected Pong, got {other:?}"),
    }
    assert!(reader.peer().csm_seen && reader.peer().block_wise);
    assert_eq!(reader.peer().max_message_size, coapcc_net::tcp_session::DEFAULT_MAX_MESSAGE_SIZE);
    w.write_all(&frame(&TcpMessage::release())).await.unwrap();
    let end = tokio::time::timeout(LIMIT, reader.next()).await.unwrap().unwrap();
    assert!(matches!(end, coapcc_net::tcp_session::Inbound::Release(_) | coapcc_net::tcp_session::Inbound::Closed));
    srv.until(|s| s.clean_closes == 1).await;
    srv.finish().await;
}

#[tokio::test]
async fn a_peer_that_stops_reading_is_cut_off() {
    let srv = start(SessionConfig { write_timeout: Duration::from_millis(500), ..SessionConfig::default() }).await;
    let stream = TcpStream::connect(srv.addr).await.unwrap();
    let (_r, mut w) = stream.into_split();
    // We accept whole 1 MiB messages, so the server sends them unsplit.
    w.write_all(&frame(&TcpMessage::csm(Some(1 << 21), true))).await.unwrap();
    // Ask for 1 MiB again and again and never read: the server's writes block, time out and
    // the connection is dropped; the server keeps only one response in memory at a time.
    let mut get = TcpMessage::new(Code::GET).with_token(Token::new(&[1]).unwrap());
    get.add_uri_path("large");
    get.add_uri_query("size=1048576");
    let req = frame(&get);
    let sent = tokio::time::timeout(LIMIT, async {
        for _ in 0..200 {
            if w.write_all(&req).await.is_err() {
                break;
            }
        }
    })
    .await;
    assert!(sent.is_ok(), "writing requests did not end");
    srv.until(|s| s.write_timeouts == 1).await;
    let st = srv.finish().await;
    assert_eq!(st.write_timeouts, 1, "{st:?}");
}

#[tokio::test]
async fn client_reports_a_server_without_csm_and_an_oversized_frame() {
    for (what, bytes) in [
        ("not a CSM", TcpMessage::new(Code::CONTENT).with_token(Token::new(&[1]).unwrap()).to_bytes()),
        ("Max-Message-Size", {
            let mut b = TcpMessage::csm(None, false).to_bytes();
            b.extend_from_slice(&[0xF4, 0xFF, 0xFF, 0xFF, 0xF0, 0x45]);
            b
        }),
    ] {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let fake = tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            s.write_all(&bytes).await.unwrap();
            let mut sink = vec![];
            let _ = tokio::time::timeout(LIMIT, s.read_to_end(&mut sink)).await;
            sink
        });
        let mut log = Vec::new();
        let err = run_client(ClientArgs::get(&format!("coap+tcp://{addr}/x")), &mut log).await.unwrap_err();
        assert!(err.to_string().contains(what), "{what}: {err}");
        // Our client aborted the connection with a diagnostic.
        let sink = fake.await.unwrap();
        let abort = (0..sink.len()).find_map(|i| match coapcc_proto::decode_frame(&sink[i..]) {
            Ok(Some((m, _))) if m.code == Code::ABORT => Some(m),
            _ => None,
        });
        assert!(abort.is_some(), "{what}: no Abort sent");
    }
}

#[test]
fn responses_fit_the_peer_max_message_size() {
    use coapcc_net::tcp_server::fit_response;
    use coapcc_net::tcp_session::PeerCaps;
    use coapcc_proto::endpoint::Response;
    let tok = Token::new(&[4]).unwrap();
    let req = TcpMessage::new(Code::GET).with_token(tok);
    let body = vec![b'x'; 5000];
    // Fits: one message.
    let big = PeerCaps { csm_seen: true, max_message_size: 1 << 20, block_wise: true };
    let m = fit_response(&req, &Response::content(body.clone()), &big);
    assert_eq!((m.payload.len(), m.block2().unwrap()), (5000, None));
    // Default 1152-byte limit with Block-Wise-Transfer: block 0 of 1024 bytes, Size2 5000.
    let small = PeerCaps { csm_seen: true, max_message_size: 1152, block_wise: true };
    let m = fit_response(&req, &Response::content(body.clone()), &small);
    let b = m.block2().unwrap().unwrap();
    assert_eq!((b.num, b.more, b.block_size(), m.payload.len(), m.size2()), (0, true, 1024, 1024, Some(5000)));
    assert!(m.encoded_len() <= 1152);
    // Without Block-Wise-Transfer: an error response, not an oversized message.
    let no_bwt = PeerCaps { block_wise: false, ..small };
    assert_eq!(fit_response(&req, &Response::content(body.clone()), &no_bwt).code, Code::INTERNAL_SERVER_ERROR);
    // A requested block beyond the end, and a reserved SZX (7): 4.02.
    let mut r2 = req.clone();
    r2.set_block2(coapcc_proto::Block::new(10, false, 6).unwrap()).unwrap();
    assert_eq!(fit_response(&r2, &Response::content(body.clone()), &big).code, Code::BAD_OPTION);
    let mut r3 = req.clone();
    r3.options.set(23, vec![0x07]);
    assert_eq!(fit_response(&r3, &Response::content(body), &big).code, Code::BAD_OPTION);
}
