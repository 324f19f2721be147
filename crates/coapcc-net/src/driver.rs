//! The async glue: one UDP socket, one sans-IO [`Endpoint`], tokio's clock.
//!
//! This is the only place of the project's CoAP-over-UDP stack that reads a clock: tokio's
//! monotonic [`tokio::time::Instant`] is mapped to [`coapcc_cc::Instant`] as nanoseconds since
//! the driver was created, and the endpoint's [`Endpoint::poll_timeout`] is mapped back to a
//! tokio deadline. (Under `tokio::time::pause` the same code runs on virtual time.)

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use coapcc_cc::Instant;
use coapcc_proto::endpoint::{Endpoint, EndpointConfig};
use tokio::net::UdpSocket;

/// Largest datagram we accept (UDP payload limit).
const RECV_BUF: usize = 65_536;

/// What [`UdpDriver::wait`] observed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wake {
    /// A datagram was handed to the endpoint.
    Datagram,
    /// The endpoint's timer fired and was handled.
    Timer,
    /// The caller's own deadline passed.
    Deadline,
    /// An ICMP port unreachable arrived (`ConnectionRefused`; only a connected socket, as the
    /// client's, reports it). Nothing was handed to the endpoint: the caller decides.
    Unreachable,
}

/// An [`Endpoint`] bound to a [`UdpSocket`].
pub struct UdpDriver {
    socket: UdpSocket,
    endpoint: Endpoint<SocketAddr>,
    epoch: tokio::time::Instant,
    buf: Vec<u8>,
    send_errors: u64,
    last_send_error: Option<io::Error>,
}

impl UdpDriver {
    /// Drive a new endpoint with `config` on `socket`; randomness from `seed`.
    pub fn new(socket: UdpSocket, config: EndpointConfig, seed: u64) -> Self {
        UdpDriver {
            socket,
            endpoint: Endpoint::with_seed(config, seed),
            epoch: tokio::time::Instant::now(),
            buf: vec![0; RECV_BUF],
            send_errors: 0,
            last_send_error: None,
        }
    }

    /// The endpoint's notion of now: time since the driver was created.
    pub fn now(&self) -> Instant {
        to_instant(self.epoch.elapsed())
    }

    /// The tokio instant of an endpoint instant.
    pub fn deadline(&self, t: Instant) -> tokio::time::Instant {
        self.epoch + Duration::from_nanos(t.as_nanos())
    }

    /// The sans-IO endpoint.
    pub fn endpoint(&mut self) -> &mut Endpoint<SocketAddr> {
        &mut self.endpoint
    }

    /// The sans-IO endpoint, read-only.
    pub fn endpoint_ref(&self) -> &Endpoint<SocketAddr> {
        &self.endpoint
    }

    /// The socket's local address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    /// Datagrams that could not be sent (they count as lost; retransmission handles them).
    pub fn send_errors(&self) -> u64 {
        self.send_errors
    }

    /// The most recent send error, taken.
    pub fn take_send_error(&mut self) -> Option<io::Error> {
        self.last_send_error.take()
    }

    /// Send every datagram the endpoint has queued. A failed send is counted and remembered
    /// (see [`UdpDriver::take_send_error`]) but does not stop the others.
    pub async fn flush(&mut self) {
        let now = self.now();
        while let Some(t) = self.endpoint.poll_transmit(now) {
            if let Err(e) = self.socket.send_to(&t.bytes, t.peer).await {
                self.send_errors += 1;
                self.last_send_error = Some(e);
            }
            // The endpoint encodes later datagrams into the sent one's buffer.
            self.endpoint.recycle(t.bytes);
        }
    }

    /// Wait for the next datagram, the endpoint's next timer, or `until` (whichever comes
    /// first), and hand it to the endpoint. An ICMP-induced `ConnectionRefused` is returned as
    /// [`Wake::Unreachable`] (the server ignores it; the client ends its run), and
    /// `ConnectionReset` is ignored.
    pub async fn wait(&mut self, until: Option<Instant>) -> io::Result<Wake> {
        let timer = self.endpoint.poll_timeout();
        let next = match (timer, until) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let sleep_to = next.map(|t| self.deadline(t));
        let recv = self.socket.recv_from(&mut self.buf);
        let res = match sleep_to {
            Some(d) => tokio::select! {
                r = recv => Some(r),
                _ = tokio::time::sleep_until(d) => None,
            },
            None => Some(recv.await),
        };
        match res {
            Some(Ok((n, peer))) => {
                let now = self.now();
                self.endpoint.handle_datagram(now, peer, &self.buf[..n]);
                Ok(Wake::Datagram)
            }
            Some(Err(e)) if e.kind() == io::ErrorKind::ConnectionRefused => Ok(Wake::Unreachable),
            Some(Err(e)) if e.kind() == io::ErrorKind::ConnectionReset => Ok(Wake::Datagram),
            Some(Err(e)) => Err(e),
            None => {
                let now = self.now();
                if timer.is_some_and(|t| t <= now) {
                    self.endpoint.handle_timeout(now);
                    Ok(Wake::Timer)
                } else {
                    Ok(Wake::Deadline)
                }
            }
        }
    }
}

/// Nanoseconds of a duration as an endpoint instant (saturating).
pub fn to_instant(d: Duration) -> Instant {
    Instant::from_nanos(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// A random seed from the standard library's per-process hasher keys (no extra dependency,
/// no global generator inside the endpoint).
pub fn random_seed() -> u64 {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    let mut h = RandomState::new().build_hasher();
    h.write_u64(std::process::id() as u64);
    if let Ok(t) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        h.write_u128(t.as_nanos());
    }
    h.finish()
}
