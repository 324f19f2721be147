//! CAL-2: an ideal CoAP-over-TCP transfer of 102 400 bytes (102 408 with the CoAP header) over
//! the testbed link, one client, no loss.

use coapcc_tcp::app::MessageSizes;
use coapcc_tcp::pipe::{Pipe, PipeConfig};
use coapcc_tcp::TcpCcConfig;

#[test]
fn cal2_ideal_transfer() {
    for spec in ["newreno:preset=helsinki2018", "bbr:preset=helsinki2018"] {
        let cfg = TcpCcConfig::parse(spec).unwrap();
        let mut p = Pipe::new(&cfg, PipeConfig::testbed(), 1).unwrap();
        let r = p.exchanges(MessageSizes::thesis(102_400), 1).unwrap();
        eprintln!("{spec}: fct {:.3} s setup {:.3} s server {:?}", r.fct_s, r.setup_s, r.server);
        // 401 data segments, no retransmission, nothing dropped.
        assert_eq!(r.server.data_segments_sent, 401 + 1, "{spec}");
        assert_eq!(r.server.retransmitted_segments, 0, "{spec}");
        assert_eq!(r.buffer_drops, (0, 0));
        // Serialisation alone: 401 × 296 B at 30 kbit/s = 31.65 s, plus one downlink delay.
        assert!(r.fct_s > 31.65 + 0.415, "{spec}: {}", r.fct_s);
    }
}

#[test]
fn fifty_short_exchanges_on_one_connection() {
    // The short-lived workload over TCP: 50 GETs of the 60-byte resource, one after another.
    let cfg = TcpCcConfig::parse("newreno:preset=helsinki2018").unwrap();
    let mut p = Pipe::new(&cfg, PipeConfig::testbed(), 1).unwrap();
    let r = p.exchanges(MessageSizes::thesis(60), 50).unwrap();
    assert_eq!(r.client.bytes_delivered, 2 + 50 * MessageSizes::thesis(60).response);
    assert_eq!(r.server.bytes_delivered, 2 + 50 * 9);
    assert_eq!(r.server.retransmitted_segments + r.client.retransmitted_segments, 0);
    // One exchange: the GET up (≈ 0.22 s) and the response down (≈ 0.43 s); the first one's
    // FCT has no delayed ACK in the way.
    assert!((0.64..0.70).contains(&r.fct_s), "{}", r.fct_s);
}
