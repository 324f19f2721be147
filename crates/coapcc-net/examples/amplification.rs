//! Amplification factors of `coapcc server` (issue 9 item 2), measured exactly on the
//! sans-IO endpoint with the server's resources (no sockets, so no loss and no timing):
//! bytes the server sends per byte it receives, as UDP payload and as IP bytes (+28 per
//! datagram, IPv4 + UDP headers).
//!
//! `cargo run --release -p coapcc-net --example amplification`
//!
//! "unlimited" is the endpoint library's default (every duplicate answered, no limit
//! towards unverified peers; what `coapcc server` did before); "coapcc server" uses the
//! server's default arguments (`--max-duplicate-replies 20 --amplification-limit 3`).

use coapcc_cc::Instant;
use coapcc_net::resources::{Action, Resources};
use coapcc_net::ServerArgs;
use coapcc_proto::endpoint::{Endpoint, EndpointConfig, Event};
use coapcc_proto::{Block, Code, Message, MessageType, Token};

const PEER: u32 = 1;

#[derive(Default)]
struct Bytes {
    dgrams_in: u64,
    in_: u64,
    dgrams_out: u64,
    out: u64,
}

impl Bytes {
    fn factors(&self) -> (f64, f64) {
        let ip_in = self.in_ + 28 * self.dgrams_in;
        let ip_out = self.out + 28 * self.dgrams_out;
        (self.out as f64 / self.in_ as f64, ip_out as f64 / ip_in as f64)
    }
}

fn feed(s: &mut Endpoint<u32>, res: &mut Resources, b: &mut Bytes, datagram: &[u8]) {
    let now = Instant::from_millis(1);
    b.dgrams_in += 1;
    b.in_ += datagram.len() as u64;
    s.handle_datagram(now, PEER, datagram);
    while let Some(ev) = s.poll_event() {
        if let Event::Request { id, message, .. } = ev {
            if let Action::Respond(r) = res.handle(&message) {
                s.respond(now, id, r).unwrap();
            }
        }
    }
    while let Some(t) = s.poll_transmit(now) {
        b.dgrams_out += 1;
        b.out += t.bytes.len() as u64;
    }
}

fn large_request(mid: u16, block: Option<Block>) -> Vec<u8> {
    let mut m = Message::new(MessageType::Con, Code::GET, mid).with_token(Token::from_u64(0xA1));
    m.add_uri_path("large");
    m.add_uri_query("size=1048576");
    if let Some(b) = block {
        m.set_block2(b).unwrap();
    }
    m.to_bytes()
}

fn run(name: &str, cfg: EndpointConfig) {
    // 1. One request for a cached /large block, then 20 000 four-byte duplicates (the bare
    //    header with the same Message ID: enough to hit the deduplication cache).
    let mut s = Endpoint::<u32>::with_seed(cfg.clone(), 1);
    let mut res = Resources::new();
    let mut b = Bytes::default();
    feed(&mut s, &mut res, &mut b, &large_request(7, Some(Block { num: 5, more: false, szx: 6 })));
    for _ in 0..20_000 {
        feed(&mut s, &mut res, &mut b, &[0x40, 0x01, 0x00, 0x07]);
    }
    let (p, ip) = b.factors();
    println!(
        "{name:>14} | duplicate flood: {} datagrams / {} B in, {} datagrams / {} B out: {p:.2}x payload, {ip:.2}x IP",
        b.dgrams_in, b.in_, b.dgrams_out, b.out
    );
    // 2. The first request of a new client: GET /large?size=1048576 without Block2.
    let mut s = Endpoint::<u32>::with_seed(cfg, 2);
    let mut b = Bytes::default();
    feed(&mut s, &mut res, &mut b, &large_request(9, None));
    let (p, ip) = b.factors();
    println!("{name:>14} | first request:   {} B in, {} B out: {p:.2}x payload, {ip:.2}x IP", b.in_, b.out);
}

fn main() {
    let server = ServerArgs::default().endpoint_config().expect("default server arguments");
    let lib = EndpointConfig {
        block_szx: server.block_szx,
        max_unblocked_payload: server.max_unblocked_payload,
        ..Default::default()
    };
    run("unlimited", lib);
    run("coapcc server", server);
}
