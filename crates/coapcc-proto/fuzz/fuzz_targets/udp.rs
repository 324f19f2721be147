//! Fuzzes the UDP message decoder (RFC 7252). Invariants: no panic; accepted input
//! re-encodes to exactly its bytes and decodes again to the same message; the in-place
//! view (`MessageRef`) agrees with the owned message; editing the decoded options keeps
//! them a valid encoding.
#![no_main]

use coapcc_proto::{Message, MessageRef};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // UDP
    if let Ok(m) = Message::decode_any_class(data) {
        assert_eq!(m.to_bytes(), data);
        assert_eq!(m.encoded_len(), data.len());
        assert_eq!(Message::decode_any_class(&m.to_bytes()).as_ref(), Ok(&m));
        let r = MessageRef::decode_any_class(data).expect("the view accepts what the message does");
        assert_eq!(r.to_message(), m);
        assert!(r.options().eq(m.options.iter()));
        assert_eq!(r.payload, &m.payload[..]);
        // Edit the options with numbers and values taken from the input: the result is
        // still a list that encodes and decodes to itself.
        let mut o = m.options.clone();
        for (i, w) in data.chunks(3).take(6).enumerate() {
            let n = u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&1)]).max(1);
            match i % 3 {
                0 => o.add(n, w),
                1 => o.set(n, &w[1..]),
                _ => {
                    o.remove(n);
                }
            }
        }
        let mut e = m.clone();
        e.options = o;
        if !e.code.is_empty() && e.options.len() <= coapcc_proto::option::MAX_OPTIONS {
            assert_eq!(Message::decode_any_class(&e.to_bytes()).as_ref(), Ok(&e));
        }
    } else {
        assert_eq!(MessageRef::decode_any_class(data).err(), Message::decode_any_class(data).err());
    }
    let _ = Message::decode(data);
    let _ = coapcc_proto::peek_header(data);
});
