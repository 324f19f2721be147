//! Fuzzes the RFC 8323 frame decoder, on the whole buffer and chunked. Invariants: no
//! panic; accepted frames re-encode to exactly the bytes consumed; chunked decoding agrees
//! with whole-buffer decoding.
#![no_main]

use coapcc_proto::tcp::{self, FrameDecoder};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // TCP, whole buffer
    let mut rest = data;
    let mut whole = Vec::new();
    let whole_end = loop {
        match tcp::decode_frame(rest) {
            Ok(Some((m, n))) => {
                assert!(n > 0 && n <= rest.len());
                assert_eq!(m.to_bytes(), &rest[..n]);
                assert_eq!(m.encoded_len(), n);
                whole.push(m);
                rest = &rest[n..];
            }
            Ok(None) => break Ok(rest.len()),
            Err(e) => break Err(e),
        }
    };

    // TCP, chunked: chunk size taken from the first byte
    let step = usize::from(data.first().copied().unwrap_or(1)).max(1) % 17 + 1;
    let mut dec = FrameDecoder::new();
    let mut chunked = Vec::new();
    let mut chunked_end = None;
    'outer: for c in data.chunks(step) {
        dec.push(c);
        loop {
            match dec.next_message() {
                Ok(Some(m)) => chunked.push(m),
                Ok(None) => break,
                Err(e) => {
                    chunked_end = Some(Err(e));
                    break 'outer;
                }
            }
        }
    }
    let chunked_end = chunked_end.unwrap_or(Ok(dec.buffered()));
    assert_eq!(chunked, whole);
    assert_eq!(chunked_end, whole_end);
});
