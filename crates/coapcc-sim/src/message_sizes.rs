//! Exact on-wire sizes of the messages the simulator sends (RFC 7252 §3). Only lengths are
//! needed, so this computes them without encoding.

use coapcc_proto::option::encoded_options_len;
pub use coapcc_proto::option::URI_PATH;

/// Length of a CoAP message: 4-byte header, `token_len` token bytes, the options
/// (`(number, value length)` pairs, sorted by number; sized by the codec's own
/// [`coapcc_proto::option::encoded_options_len`]), and the payload behind the 0xFF marker
/// (no marker without payload).
pub fn coap_message_len(token_len: usize, options: &[(u16, usize)], payload: usize) -> usize {
    4 + token_len + encoded_options_len(options.iter().copied()) + if payload > 0 { 1 + payload } else { 0 }
}

/// The Uri-Path segments of `path` (leading and trailing `/` ignored, `a/b` = two options).
pub fn uri_path_segments(path: &str) -> impl Iterator<Item = &str> {
    path.split('/').filter(|s| !s.is_empty())
}

/// CoAP length of the request: CON GET with one Uri-Path option per path segment, no
/// payload. `GET /hello` with a 1-byte token is 11 bytes (wire vector W1).
pub fn request_len(token_len: usize, uri_path: &str) -> usize {
    4 + token_len + encoded_options_len(uri_path_segments(uri_path).map(|seg| (URI_PATH, seg.len())))
}

/// CoAP length of the response: piggybacked ACK 2.05 Content, no options, `payload` bytes.
/// 60 bytes of payload with a 1-byte token give 66 bytes.
pub fn response_len(token_len: usize, payload: usize) -> usize {
    coap_message_len(token_len, &[], payload)
}

/// IP packet size of a CoAP message of `coap_len` bytes: + 8 (UDP) + 20 (IPv4) or 40 (IPv6).
pub fn ip_len(coap_len: usize, ip_version: u8) -> usize {
    coap_len + 8 + if ip_version == 6 { 40 } else { 20 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_vectors() {
        // W1: CON GET /hello, token A5 = 41 01 00 01 A5 B5 68 65 6C 6C 6F.
        assert_eq!(request_len(1, "hello"), 11);
        assert_eq!(request_len(1, "/hello/"), 11);
        assert_eq!(coap_message_len(1, &[(URI_PATH, 5)], 0), 11);
        // W2: ACK 2.05, token A5, Block2 (23) 1-byte value, 256-byte payload = 265.
        assert_eq!(coap_message_len(1, &[(23, 1)], 256), 265);
        // W3: GET /hello + Block2 (delta 12) = 13.
        assert_eq!(coap_message_len(1, &[(URI_PATH, 5), (23, 1)], 0), 13);
        // W2 over UDP/IPv4: 293 B, within the 296 B MTU.
        assert_eq!(ip_len(265, 4), 293);
    }

    #[test]
    fn testbed_packet_sizes() {
        // Spec §7 CAL-1: the response is 20 + 8 + 4 + 1 + 1 + 60 = 94 B.
        assert_eq!(ip_len(response_len(1, 60), 4), 94);
        assert_eq!(ip_len(request_len(1, "hello"), 4), 39);
        assert_eq!(ip_len(request_len(1, "hello"), 6), 59);
        assert_eq!(response_len(0, 0), 4);
        assert_eq!(request_len(8, ""), 12);
        // Extended lengths: a 13-byte segment needs one extra byte, 269 two.
        assert_eq!(request_len(0, &"a".repeat(13)), 4 + 1 + 1 + 13);
        assert_eq!(request_len(0, &"a".repeat(269)), 4 + 1 + 2 + 269);
        // Two segments: the second has delta 0.
        assert_eq!(request_len(1, "a/b"), 5 + 2 + 2);
        // Option delta 23 from 0 needs the 13-form.
        assert_eq!(coap_message_len(0, &[(23, 0)], 0), 4 + 2);
        assert_eq!(coap_message_len(0, &[(300, 0)], 0), 4 + 3);
    }
}
