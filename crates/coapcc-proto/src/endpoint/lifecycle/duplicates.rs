//! Server-side duplicate detection (RFC 7252 §4.5) and the duplicate-mode rules, over any
//! cache of received messages.
//!
//! [`classify`] is the one decision: is an arriving message new, and if it is a duplicate,
//! what does it get (an Empty ACK while the answer is pending, the answer again with the
//! identification chosen by [`DuplicateMode::echo`], nothing)? The cache is a
//! [`DuplicateCache`]: the real endpoint's bounded (peer, Message ID) cache, or
//! [`PerClientCache`], one entry per client, for the simulator's compact model.

use super::super::DuplicateMode;

/// What a server remembers of a received message, as far as its duplicates are concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Remembered<I> {
    /// Handed to the application, which has not answered yet.
    Pending,
    /// Answered; the answer carried identification `I` (the token, the copy ordinal), or
    /// none (`None`: an Empty ACK or an RST).
    Answered(Option<I>),
    /// Nothing to send again (a NON, or a message left unanswered).
    Silent,
}

/// One remembered message.
pub trait DuplicateEntry {
    /// How a message identifies the copy it is (or answers).
    type Id: Copy;
    /// What was done with the message.
    fn remembered(&self) -> Remembered<Self::Id>;
    /// Count one more duplicate answered from this entry; the count including this one.
    fn count_reply(&mut self) -> u32;
}

/// A server's memory of received messages.
pub trait DuplicateCache {
    /// What identifies a message: (peer, Message ID) on the wire, (client, exchange) in the
    /// simulator's compact model.
    type Key;
    /// What is kept per message.
    type Entry: DuplicateEntry;
    /// What [`DuplicateCache::remember`] stores.
    type Value;
    /// The entry of `key`, if the message was received before (and is still remembered).
    fn entry(&mut self, key: &Self::Key) -> Option<&mut Self::Entry>;
    /// Remember a new message (a bounded cache may forget an older one).
    fn remember(&mut self, key: Self::Key, value: Self::Value);
}

/// The server's duplicate rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DuplicateRules {
    /// Which identification the answer to a duplicate carries.
    pub mode: DuplicateMode,
    /// Duplicates of one message answered again; later ones are dropped (`u32::MAX`: no
    /// limit).
    pub max_replies: u32,
}

/// What a duplicate gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DuplicateAnswer<I> {
    /// The answer is pending: acknowledge at once with an Empty ACK, so that the client
    /// stops retransmitting (the response will be separate).
    EmptyAck,
    /// Send the remembered answer again, carrying identification `echo` (`None`: the
    /// answer carries none, e.g. an Empty ACK).
    Replay {
        /// The identification chosen by [`DuplicateMode::echo`].
        echo: Option<I>,
    },
    /// The answer was sent [`DuplicateRules::max_replies`] times already: drop.
    Suppressed,
    /// Nothing to send (a NON duplicate, or a message not answered).
    Ignore,
}

/// What an arriving message is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival<I> {
    /// Not seen before: process it and [`remember`](DuplicateCache::remember) it.
    New,
    /// A duplicate: answer it so, and never process it again.
    Duplicate(DuplicateAnswer<I>),
}

/// Classify a message arriving with `key`, `confirmable` or not, identifying itself with
/// `incoming`. Counts the replies of a replayed answer.
#[inline]
pub fn classify<C: DuplicateCache>(
    cache: &mut C,
    rules: DuplicateRules,
    key: &C::Key,
    confirmable: bool,
    incoming: <C::Entry as DuplicateEntry>::Id,
) -> Arrival<<C::Entry as DuplicateEntry>::Id> {
    classify_entry(cache, rules, key, confirmable, incoming).0
}

/// [`classify`], also handing back a duplicate's entry, so that the caller reads what to
/// send again without a second lookup.
#[inline]
pub fn classify_entry<'c, C: DuplicateCache>(
    cache: &'c mut C,
    rules: DuplicateRules,
    key: &C::Key,
    confirmable: bool,
    incoming: <C::Entry as DuplicateEntry>::Id,
) -> (Arrival<<C::Entry as DuplicateEntry>::Id>, Option<&'c mut C::Entry>) {
    let Some(e) = cache.entry(key) else {
        return (Arrival::New, None);
    };
    if !confirmable {
        return (Arrival::Duplicate(DuplicateAnswer::Ignore), Some(e));
    }
    let answer = match e.remembered() {
        Remembered::Pending => DuplicateAnswer::EmptyAck,
        Remembered::Answered(id) => {
            if e.count_reply() > rules.max_replies {
                DuplicateAnswer::Suppressed
            } else {
                DuplicateAnswer::Replay { echo: id.map(|id| rules.mode.echo(id, incoming)) }
            }
        }
        Remembered::Silent => DuplicateAnswer::Ignore,
    };
    (Arrival::Duplicate(answer), Some(e))
}

/// The entry of a [`PerClientCache`]: the client's last exchange received, the copy that
/// arrived first (the one its answer identified) and the duplicates answered since.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientEntry {
    exchange: u32,
    first: u16,
    replies: u16,
}

impl DuplicateEntry for ClientEntry {
    type Id = u16;
    #[inline]
    fn remembered(&self) -> Remembered<u16> {
        Remembered::Answered(Some(self.first))
    }
    /// Saturates at 65 535.
    #[inline]
    fn count_reply(&mut self) -> u32 {
        self.replies = self.replies.saturating_add(1);
        u32::from(self.replies)
    }
}

/// A dense duplicate cache for a server whose clients run one exchange at a time (NSTART
/// of one) and that answers every request at once: one 8-byte entry per client, the last
/// exchange received. Keys are (client index, exchange number); a copy is identified by its ordinal.
#[derive(Clone, Debug)]
pub struct PerClientCache {
    slots: Vec<ClientEntry>,
}

impl PerClientCache {
    /// Room for clients `0..clients`, none remembered yet. Exchange `u32::MAX` is reserved
    /// (it marks an empty slot).
    pub fn new(clients: usize) -> Self {
        PerClientCache { slots: vec![ClientEntry { exchange: u32::MAX, first: 0, replies: 0 }; clients] }
    }

    /// Client `client`'s slot, if in range (read-only: for a caller that wants to load it
    /// into the cache ahead of the client's next message).
    #[inline]
    pub fn slot(&self, client: u32) -> Option<&ClientEntry> {
        self.slots.get(client as usize)
    }
}

impl DuplicateCache for PerClientCache {
    type Key = (u32, u32);
    type Entry = ClientEntry;
    /// The ordinal of the first copy received.
    type Value = u16;
    #[inline]
    fn entry(&mut self, &(client, exchange): &(u32, u32)) -> Option<&mut ClientEntry> {
        let e = &mut self.slots[client as usize];
        (e.exchange == exchange).then_some(e)
    }
    #[inline]
    fn remember(&mut self, (client, exchange): (u32, u32), first: u16) {
        self.slots[client as usize] = ClientEntry { exchange, first, replies: 0 };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EACH: DuplicateRules = DuplicateRules { mode: DuplicateMode::AnswerEachCopy, max_replies: u32::MAX };

    #[test]
    fn per_client_cache_by_mode() {
        let mut c = PerClientCache::new(2);
        assert_eq!(classify(&mut c, EACH, &(0, 7), true, 0), Arrival::New);
        c.remember((0, 7), 1); // copy 1 arrived first (copy 0 was lost)
        assert_eq!(classify(&mut c, EACH, &(1, 7), true, 1), Arrival::New, "per client");
        assert_eq!(
            classify(&mut c, EACH, &(0, 7), true, 2),
            Arrival::Duplicate(DuplicateAnswer::Replay { echo: Some(2) })
        );
        let replay = DuplicateRules { mode: DuplicateMode::ReplayCached, max_replies: u32::MAX };
        assert_eq!(
            classify(&mut c, replay, &(0, 7), true, 3),
            Arrival::Duplicate(DuplicateAnswer::Replay { echo: Some(1) })
        );
        assert_eq!(classify(&mut c, EACH, &(0, 7), false, 3), Arrival::Duplicate(DuplicateAnswer::Ignore));
        assert_eq!(classify(&mut c, EACH, &(0, 8), true, 0), Arrival::New, "the next exchange");
        c.remember((0, 8), 0);
        assert_eq!(classify(&mut c, EACH, &(0, 7), true, 4), Arrival::New, "one entry per client");
    }

    #[test]
    fn reply_limit() {
        let mut c = PerClientCache::new(1);
        c.remember((0, 0), 0);
        let rules = DuplicateRules { mode: DuplicateMode::AnswerEachCopy, max_replies: 2 };
        for k in 1..=2 {
            assert_eq!(
                classify(&mut c, rules, &(0, 0), true, k),
                Arrival::Duplicate(DuplicateAnswer::Replay { echo: Some(k) })
            );
        }
        assert_eq!(classify(&mut c, rules, &(0, 0), true, 3), Arrival::Duplicate(DuplicateAnswer::Suppressed));
    }

    /// A hand-made entry to cover the states a dense cache never holds.
    struct Fixed(Remembered<u8>, u32);
    impl DuplicateEntry for Fixed {
        type Id = u8;
        fn remembered(&self) -> Remembered<u8> {
            self.0
        }
        fn count_reply(&mut self) -> u32 {
            self.1 += 1;
            self.1
        }
    }
    struct One(Option<Fixed>);
    impl DuplicateCache for One {
        type Key = ();
        type Entry = Fixed;
        type Value = Remembered<u8>;
        fn entry(&mut self, _: &()) -> Option<&mut Fixed> {
            self.0.as_mut()
        }
        fn remember(&mut self, _: (), v: Remembered<u8>) {
            self.0 = Some(Fixed(v, 0));
        }
    }

    #[test]
    fn pending_silent_and_unidentified_answers() {
        let mut c = One(None);
        c.remember((), Remembered::Pending);
        assert_eq!(classify(&mut c, EACH, &(), true, 9), Arrival::Duplicate(DuplicateAnswer::EmptyAck));
        assert_eq!(c.0.as_ref().unwrap().1, 0, "an Empty ACK for a pending request is not a counted reply");
        c.remember((), Remembered::Silent);
        assert_eq!(classify(&mut c, EACH, &(), true, 9), Arrival::Duplicate(DuplicateAnswer::Ignore));
        c.remember((), Remembered::Answered(None));
        assert_eq!(classify(&mut c, EACH, &(), true, 9), Arrival::Duplicate(DuplicateAnswer::Replay { echo: None }));
    }
}
