//! Accessors for the bounded per-peer state (the limits themselves are in `server.rs` and
//! `timers.rs`), and the scaled `/slow` flood test of the robustness page.

use super::{Endpoint, Peer};

impl<P: Peer> Endpoint<P> {
    /// Server requests `peer` has pending now (unanswered, or answered by a separate
    /// response still in flight); never more than
    /// [`EndpointConfig::max_pending_per_peer`](super::EndpointConfig::max_pending_per_peer).
    pub fn pending_from(&self, peer: &P) -> usize {
        self.dedup.pending(peer) as usize
    }

    /// Everything the endpoint keeps per exchange: outgoing exchanges (queued or in flight)
    /// plus server requests not answered yet.
    pub fn retained_exchanges(&self) -> usize {
        self.outs.len() + self.served.len()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::super::{Endpoint, EndpointConfig, Event, Response, ServerRequestId};
    use crate::{Code, Message, MessageType, Token};
    use coapcc_cc::Instant;
    use core::time::Duration;

    const ATTACKER: u32 = 1;
    const VICTIM: u32 = 2;

    fn con_get(mid: u16, path: &str) -> Vec<u8> {
        let mut m = Message::new(MessageType::Con, Code::GET, mid).with_token(Token::from_u64(u64::from(mid)));
        let (p, q) = path.split_once('?').unwrap_or((path, ""));
        m.add_uri_path(p);
        if !q.is_empty() {
            m.add_uri_query(q);
        }
        m.to_bytes()
    }

    /// The application: `/slow` answered 1.5 s later, everything else at once.
    struct App {
        delayed: BTreeMap<(Instant, ServerRequestId), ()>,
    }

    impl App {
        fn events(&mut self, s: &mut Endpoint<u32>, now: Instant) {
            while let Some(ev) = s.poll_event() {
                if let Event::Request { id, message, .. } = ev {
                    if message.uri_path() == "slow" {
                        self.delayed.insert((now + Duration::from_millis(1500), id), ());
                    } else {
                        s.respond(now, id, Response::content(b"hello".to_vec())).unwrap();
                    }
                }
            }
        }
        fn due(&mut self, s: &mut Endpoint<u32>, now: Instant) {
            while let Some(e) = self.delayed.first_entry() {
                if e.key().0 > now {
                    break;
                }
                let ((_, id), ()) = e.remove_entry();
                s.respond(now, id, Response::content(b"slow".to_vec())).unwrap();
            }
        }
        fn next(&self) -> Option<Instant> {
            self.delayed.keys().next().map(|k| k.0)
        }
    }

    /// What came out for each peer: (2.05 answers, 5.03 answers, other datagrams).
    #[derive(Default, Debug)]
    struct Seen {
        content: u64,
        busy: u64,
        other: u64,
    }

    fn drain(s: &mut Endpoint<u32>, now: Instant, seen: &mut BTreeMap<u32, Seen>) {
        while let Some(t) = s.poll_transmit(now) {
            let m = Message::decode(&t.bytes).unwrap();
            let e = seen.entry(t.peer).or_default();
            match m.code {
                Code::CONTENT => e.content += 1,
                Code::SERVICE_UNAVAILABLE => {
                    assert_eq!(
                        m.options.get_uint(crate::option::MAX_AGE),
                        Some(u64::from(EndpointConfig::default().overload_max_age_s))
                    );
                    e.busy += 1
                }
                _ => e.other += 1,
            }
        }
    }

    /// Issue 9 item 1, scaled: 20 000 CON `GET /slow?ms=1500` from one source at 1 000/s,
    /// never acknowledged, while another client asks `/hello` every 10 ms.
    #[test]
    fn slow_flood_from_one_peer_is_bounded_and_fair() {
        let mut s = Endpoint::<u32>::with_seed(EndpointConfig::default(), 9);
        let mut app = App { delayed: BTreeMap::new() };
        let mut seen = BTreeMap::new();
        let ms = |n: u64| Instant::from_millis(n);
        let (mut victim_sent, mut max_retained, mut max_attacker) = (0u64, 0, 0);
        for t in 0..20_000u64 {
            let now = ms(t);
            app.due(&mut s, now);
            if s.poll_timeout().is_some_and(|d| d <= now) {
                s.handle_timeout(now);
            }
            s.handle_datagram(now, ATTACKER, &con_get(t as u16, "slow?ms=1500"));
            if t % 10 == 0 {
                s.handle_datagram(now, VICTIM, &con_get(victim_sent as u16, "hello"));
                victim_sent += 1;
            }
            app.events(&mut s, now);
            drain(&mut s, now, &mut seen);
            max_retained = max_retained.max(s.retained_exchanges());
            max_attacker = max_attacker.max(s.pending_from(&ATTACKER));
        }
        let cfg = EndpointConfig::default();
        assert!(max_attacker <= cfg.max_pending_per_peer, "{max_attacker}");
        assert!(max_retained <= cfg.max_pending_per_peer + 1, "retained {max_retained}");
        assert!(s.stats().timers_armed <= 2, "{:?}", s.stats());
        let st = s.stats();
        assert!(st.requests_refused >= 19_000, "{st:?}");
        assert_eq!(seen[&VICTIM].content, victim_sent, "every /hello of the other client answered at once");
        assert_eq!(seen[&VICTIM].busy, 0);
        assert_eq!(seen[&ATTACKER].busy, st.requests_refused);
        // The attack stops: the queued separate responses run out of retransmissions (the
        // attacker never acknowledges), then the attacker is served again.
        let mut now = ms(20_000);
        for _ in 0..100_000 {
            let next = [s.poll_timeout(), app.next()].into_iter().flatten().min();
            let Some(next) = next else { break };
            now = now.max(next);
            app.due(&mut s, now);
            s.handle_timeout(now);
            app.events(&mut s, now);
            drain(&mut s, now, &mut seen);
        }
        assert_eq!(s.retained_exchanges(), 0);
        assert_eq!(s.pending_from(&ATTACKER), 0);
        s.handle_datagram(now, ATTACKER, &con_get(40_000, "hello"));
        app.events(&mut s, now);
        let before = seen[&ATTACKER].content;
        drain(&mut s, now, &mut seen);
        assert_eq!(seen[&ATTACKER].content, before + 1, "served again after the attack");
    }
}
