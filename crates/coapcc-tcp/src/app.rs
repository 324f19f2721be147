//! The CoAP-over-TCP application on top of a [`Connection`]: what the Helsinki study's client
//! and server do, as byte counts, so every host of the model (the [`crate::pipe`] harness,
//! the simulator) runs the same exchange.
//!
//! Client: connect; once established write its CSM and at once the first request; after each
//! complete response the next request, until `requests` are answered. Server: once
//! established write its CSM (without waiting for the client's); after each complete request
//! write the response as one message. Sizes are the real RFC 8323 encodings
//! ([`MessageSizes::thesis`]).

use coapcc_proto::tcp::TcpMessage;
use coapcc_proto::{Code, Token};

use crate::conn::{Connection, State};

/// Frame sizes of the exchange, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MessageSizes {
    /// Each side's CSM.
    pub csm: u64,
    /// One request.
    pub request: u64,
    /// One response (header + payload: the whole representation in one message).
    pub response: u64,
}

impl MessageSizes {
    /// The study's exchange for a `payload`-byte resource: an empty CSM (its contents are
    /// irrelevant, 2 bytes), `GET /large` with a 1-byte token, and a 2.05 response with a
    /// 1-byte token and the payload (102 400 B of payload: a 102 408-byte frame).
    pub fn thesis(payload: u64) -> MessageSizes {
        let token = Token::new(&[0x5A]).expect("1-byte token");
        let mut get = TcpMessage::new(Code::GET).with_token(token);
        get.add_uri_path("large");
        let head = TcpMessage::new(Code::CONTENT).with_token(token).with_payload(vec![0u8; 1]);
        // Frame length = header (2-6 B, depends on the body length) + token + marker + payload.
        let body = payload + 1;
        let response = if payload == 0 {
            TcpMessage::new(Code::CONTENT).with_token(token).encoded_len() as u64
        } else {
            coapcc_proto::tcp::header_len(body) as u64 + head.token.len() as u64 + body
        };
        MessageSizes {
            csm: TcpMessage::csm(None, false).encoded_len() as u64,
            request: get.encoded_len() as u64,
            response,
        }
    }
}

/// What happened, for metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppEvent {
    /// The handshake completed at this end.
    Established,
    /// Request `index` was written (its FCT starts).
    RequestSent {
        /// 0-based.
        index: u32,
    },
    /// The last byte of response `index` arrived (its FCT ends).
    ResponseReceived {
        /// 0-based.
        index: u32,
    },
}

/// The client side.
#[derive(Clone, Debug)]
pub struct ClientApp {
    sizes: MessageSizes,
    requests: u32,
    sent: u32,
    received: u32,
    started: bool,
    got: u64,
}

impl ClientApp {
    /// A client that sends `requests` requests one after another.
    pub fn new(sizes: MessageSizes, requests: u32) -> Self {
        ClientApp { sizes, requests, sent: 0, received: 0, started: false, got: 0 }
    }

    /// All responses received?
    pub fn done(&self) -> bool {
        self.received >= self.requests
    }

    /// Responses received so far.
    pub fn responses(&self) -> u32 {
        self.received
    }

    /// Call after every input to `conn` (and before its `poll_transmit`): writes what is due
    /// and reports what happened through `on_event`.
    pub fn poll(&mut self, conn: &mut Connection, mut on_event: impl FnMut(AppEvent)) {
        if conn.state() != State::Established {
            return;
        }
        if !self.started {
            self.started = true;
            on_event(AppEvent::Established);
            conn.write(self.sizes.csm);
        }
        self.got += conn.take_delivered();
        // The server's CSM first, then one response per request.
        loop {
            let need = self.sizes.csm + u64::from(self.received + 1) * self.sizes.response;
            if self.received < self.sent && self.got >= need {
                on_event(AppEvent::ResponseReceived { index: self.received });
                self.received += 1;
                continue;
            }
            break;
        }
        if self.sent == self.received && self.sent < self.requests {
            conn.write(self.sizes.request);
            on_event(AppEvent::RequestSent { index: self.sent });
            self.sent += 1;
        }
    }
}

/// The server side.
#[derive(Clone, Debug)]
pub struct ServerApp {
    sizes: MessageSizes,
    started: bool,
    got: u64,
    answered: u64,
}

impl ServerApp {
    /// A server answering every request with one `sizes.response`-byte message.
    pub fn new(sizes: MessageSizes) -> Self {
        ServerApp { sizes, started: false, got: 0, answered: 0 }
    }

    /// Requests answered so far.
    pub fn answered(&self) -> u64 {
        self.answered
    }

    /// Call after every input to `conn` (and before its `poll_transmit`).
    pub fn poll(&mut self, conn: &mut Connection) {
        if conn.state() != State::Established {
            return;
        }
        if !self.started {
            self.started = true;
            conn.write(self.sizes.csm);
        }
        self.got += conn.take_delivered();
        while self.got >= self.sizes.csm + (self.answered + 1) * self.sizes.request {
            conn.write(self.sizes.response);
            self.answered += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thesis_sizes_follow_rfc8323() {
        let s = MessageSizes::thesis(102_400);
        // Test vector F2: 102 400 B of payload in a 102 408-byte frame (401 segments of 256 B).
        assert_eq!(s.response, 102_408);
        assert_eq!(s.response.div_ceil(256), 401);
        // Empty CSM `00 E1`; GET /large: 1 + 1 + 1 + (1 + 5) = 9 B.
        assert_eq!(s.csm, 2);
        assert_eq!(s.request, 9);
        // Small payloads use the short Len forms.
        assert_eq!(MessageSizes::thesis(60).response, 2 + 1 + 1 + 60 + 1);
        assert_eq!(MessageSizes::thesis(0).response, 3);
    }
}
