//! Fuzzes the UDP message decoder (RFC 7252). Invariants: no panic; accepted input
//! re-encodes to exactly its bytes and decodes again to the same message.
#![no_main]

use coapcc_proto::Message;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // UDP
    if let Ok(m) = Message::decode_any_class(data) {
        assert_eq!(m.to_bytes(), data);
        assert_eq!(m.encoded_len(), data.len());
        assert_eq!(Message::decode_any_class(&m.to_bytes()).as_ref(), Ok(&m));
    }
    let _ = Message::decode(data);
    let _ = coapcc_proto::peek_header(data);
});
