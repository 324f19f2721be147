//! The client is bounded against a hostile server (issue 9 item 3): requests sent to the
//! client are answered at once and keep no state; an endless Block2 chain ends after
//! `--max-blocks` blocks, so the log stays small.

use std::time::Duration;

use coapcc_net::{run_client, ClientArgs};
use coapcc_proto::{Block, Code, Message, MessageType, Token};
use serde_json::Value;
use tokio::net::UdpSocket;

async fn client(uri: String, extra: Vec<String>) -> (anyhow::Result<coapcc_net::ClientSummary>, Vec<Value>) {
    let mut argv = vec!["client".to_string(), uri, "--timeout".into(), "60".into()];
    argv.extend(extra);
    let args = <ClientArgs as clap::Parser>::parse_from(argv);
    let mut log = Vec::new();
    let r = run_client(args, &mut log).await;
    let lines = String::from_utf8(log).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    (r, lines)
}

#[tokio::test]
async fn requests_at_the_client_are_answered_and_forgotten() {
    const FLOOD: u16 = 5_000;
    let srv = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let uri = format!("coap://{}/x", srv.local_addr().unwrap());
    let hostile = async {
        let mut buf = [0u8; 2048];
        let (n, from) = srv.recv_from(&mut buf).await.unwrap();
        let req = Message::decode(&buf[..n]).unwrap();
        // Flood the client with requests, one at a time: each must be answered at once.
        let mut answered = 0u32;
        for mid in 0..FLOOD {
            let mut m = Message::new(MessageType::Con, Code::GET, mid).with_token(Token::from_u64(u64::from(mid)));
            m.add_uri_path("anything");
            srv.send_to(&m.to_bytes(), from).await.unwrap();
            let a = loop {
                let (n, _) = tokio::time::timeout(Duration::from_secs(5), srv.recv_from(&mut buf))
                    .await
                    .expect("the client answers a request at once")
                    .unwrap();
                let a = Message::decode(&buf[..n]).unwrap();
                // On a loaded machine the flood can outlast the client's ACK_TIMEOUT: its own
                // request, retransmitted, is not an answer.
                if (a.mtype, a.message_id, a.token) != (MessageType::Con, req.message_id, req.token) {
                    break a;
                }
            };
            assert_eq!((a.mtype, a.code, a.message_id), (MessageType::Ack, Code::NOT_FOUND, mid));
            answered += 1;
        }
        let mut ack = Message::new(MessageType::Ack, Code::CONTENT, req.message_id).with_token(req.token);
        ack.payload = b"done".to_vec();
        srv.send_to(&ack.to_bytes(), from).await.unwrap();
        answered
    };
    let ((r, _), answered) = tokio::join!(client(uri, vec![]), hostile);
    let s = r.unwrap();
    assert_eq!(answered, u32::from(FLOOD));
    assert_eq!(s.requests_refused, u64::from(FLOOD));
    assert_eq!(s.last_payload.as_deref(), Some(&b"done"[..]));
}

#[tokio::test]
async fn an_endless_block2_chain_is_cut_at_max_blocks() {
    let srv = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let uri = format!("coap://{}/endless", srv.local_addr().unwrap());
    let hostile = async {
        let mut buf = [0u8; 2048];
        let mut served = 0u32;
        // Answer every block request with a 16-byte block that says "more".
        while let Ok(Ok((n, from))) = tokio::time::timeout(Duration::from_secs(3), srv.recv_from(&mut buf)).await {
            let req = Message::decode(&buf[..n]).unwrap();
            let num = req.block2().unwrap().map_or(0, |b| b.num);
            let mut a = Message::new(MessageType::Ack, Code::CONTENT, req.message_id).with_token(req.token);
            a.set_block2(Block { num, more: true, szx: 0 }).unwrap();
            a.payload = vec![b'z'; 16];
            srv.send_to(&a.to_bytes(), from).await.unwrap();
            served += 1;
        }
        served
    };
    let ((r, lines), served) = tokio::join!(client(uri, vec!["--max-blocks".into(), "100".into()]), hostile);
    let s = r.unwrap();
    assert_eq!(s.failed, 1);
    assert_eq!(s.first_failure.map(|f| f.as_str()), Some("too-many-blocks"));
    assert_eq!(served, 100);
    assert!(lines.len() <= 100 + 3, "{} log lines", lines.len());
}
