//! [`Source`]: the endpoint's random source, kept in the endpoint itself when it is a
//! [`SplitMix64`] (what [`Endpoint::with_seed`](super::Endpoint::with_seed) and a simulator
//! use), boxed otherwise. Every exchange draws its token and its algorithm's dither from it:
//! inline, that is no access to a separate heap block.

use coapcc_cc::{Entropy, SplitMix64};

/// A random source: a [`SplitMix64`] in place, or any [`Entropy`] behind a box.
pub(super) enum Source {
    SplitMix(SplitMix64),
    Boxed(Box<dyn Entropy + Send>),
}

impl Entropy for Source {
    #[inline]
    fn next_u64(&mut self) -> u64 {
        match self {
            Source::SplitMix(r) => r.next_u64(),
            Source::Boxed(r) => r.next_u64(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// In place or boxed, the same generator gives the same stream.
    #[test]
    fn same_stream_in_place_or_boxed() {
        let mut a = Source::SplitMix(SplitMix64::stream(7, 3));
        let mut b = Source::Boxed(Box::new(SplitMix64::stream(7, 3)));
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
    }
}
