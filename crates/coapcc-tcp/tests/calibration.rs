//! CAL-2: an ideal CoAP-over-TCP transfer of 102 400 bytes (102 408 with the CoAP header) over
//! the testbed link, one client, no loss.

use coapcc_tcp::pipe::{Pipe, PipeConfig};
use coapcc_tcp::TcpCcConfig;

#[test]
fn cal2_ideal_transfer() {
    for spec in ["newreno:preset=helsinki2018", "bbr:preset=helsinki2018"] {
        let cfg = TcpCcConfig::parse(spec).unwrap();
        let mut p = Pipe::new(&cfg, PipeConfig::testbed(), 1);
        let r = p.transfer(102_408).unwrap();
        eprintln!("{spec}: fct {:.3} s setup {:.3} s server {:?}", r.fct_s, r.setup_s, r.server);
        // 401 data segments, no retransmission, nothing dropped.
        assert_eq!(r.server.data_segments_sent, 401 + 1, "{spec}");
        assert_eq!(r.server.retransmitted_segments, 0, "{spec}");
        assert_eq!(r.buffer_drops, (0, 0));
        // Serialisation alone: 401 × 296 B at 30 kbit/s = 31.65 s, plus one downlink delay.
        assert!(r.fct_s > 31.65 + 0.415, "{spec}: {}", r.fct_s);
    }
}
