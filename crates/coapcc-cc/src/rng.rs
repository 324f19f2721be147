//! Injected randomness.
//!
//! Algorithms never own a random generator: every call that needs randomness (only the
//! dithering of the initial timer today) borrows one through [`Entropy`]. A simulator passes a
//! per-component seeded stream, a real endpoint whatever generator it trusts, a test a fixed
//! sequence.

/// A source of uniformly distributed 64-bit words.
pub trait Entropy {
    /// The next uniformly distributed word.
    fn next_u64(&mut self) -> u64;
}

impl<T: Entropy + ?Sized> Entropy for &mut T {
    fn next_u64(&mut self) -> u64 {
        (**self).next_u64()
    }
}

/// A uniform float in `[0, 1)` with 53 bits of precision.
pub fn unit_f64(rng: &mut dyn Entropy) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// SplitMix64: a tiny, fast, statistically sound generator, convenient for tests, benchmarks
/// and for deriving independent streams from one seed. Not cryptographic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator seeded with `seed`.
    pub const fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    /// A generator for stream `stream` of `seed`: independent of other streams of the same
    /// seed for all practical purposes.
    pub fn stream(seed: u64, stream: u64) -> Self {
        let mut g = SplitMix64::new(seed ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03));
        let s = g.next_u64();
        SplitMix64::new(s)
    }
}

impl Entropy for SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// A generator that always returns the same word: handy to pin a dither to one end of its
/// range in tests (`Constant(0)` gives the lower bound).
#[derive(Clone, Copy, Debug)]
pub struct Constant(pub u64);

impl Entropy for Constant {
    fn next_u64(&mut self) -> u64 {
        self.0
    }
}
