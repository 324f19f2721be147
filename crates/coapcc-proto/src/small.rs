//! [`SmallBytes`]: a byte string stored inline when short, on the heap otherwise.

use core::hash::{Hash, Hasher};

/// Bytes kept inline: the encoded options of a typical request (a Uri-Path or two, a Block2
/// value, a Content-Format) fit, so building, decoding and copying them never allocates.
pub(crate) const INLINE: usize = 30;

/// A byte string: inline up to `N` bytes (at most 255; by default [`INLINE`]), else a
/// `Vec`. Equality and hashing depend only on the bytes, not on where they are stored.
#[derive(Clone)]
pub(crate) enum SmallBytes<const N: usize = INLINE> {
    Inline { len: u8, bytes: [u8; N] },
    Heap(Vec<u8>),
}

impl<const N: usize> SmallBytes<N> {
    pub(crate) const fn new() -> SmallBytes<N> {
        SmallBytes::Inline { len: 0, bytes: [0; N] }
    }

    /// The concatenation of `parts`, inline if it fits.
    pub(crate) fn concat(parts: &[&[u8]]) -> SmallBytes<N> {
        let total: usize = parts.iter().map(|p| p.len()).sum();
        if total <= N && N <= u8::MAX as usize {
            let mut bytes = [0; N];
            let mut at = 0;
            for p in parts {
                bytes[at..at + p.len()].copy_from_slice(p);
                at += p.len();
            }
            SmallBytes::Inline { len: total as u8, bytes }
        } else {
            let mut v = Vec::with_capacity(total);
            for p in parts {
                v.extend_from_slice(p);
            }
            SmallBytes::Heap(v)
        }
    }

    /// `s` alone: [`SmallBytes::concat`] of one part, without the walk over the parts.
    #[inline]
    pub(crate) fn from_slice(s: &[u8]) -> SmallBytes<N> {
        if s.len() <= N && N <= u8::MAX as usize {
            let mut bytes = [0; N];
            bytes[..s.len()].copy_from_slice(s);
            SmallBytes::Inline { len: s.len() as u8, bytes }
        } else {
            SmallBytes::Heap(s.to_vec())
        }
    }

    pub(crate) fn as_slice(&self) -> &[u8] {
        match self {
            SmallBytes::Inline { len, bytes } => &bytes[..usize::from(*len)],
            SmallBytes::Heap(v) => v,
        }
    }

    pub(crate) fn clear(&mut self) {
        *self = SmallBytes::new();
    }
}

impl<const N: usize> Default for SmallBytes<N> {
    fn default() -> Self {
        SmallBytes::new()
    }
}

impl<const N: usize> core::fmt::Debug for SmallBytes<N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.as_slice().fmt(f)
    }
}

impl<const N: usize> PartialEq for SmallBytes<N> {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl<const N: usize> Eq for SmallBytes<N> {}

impl<const N: usize> Hash for SmallBytes<N> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_and_heap_are_the_same_bytes() {
        let long: Vec<u8> = (0..100).collect();
        for n in [0, 1, INLINE - 1, INLINE, INLINE + 1, 100] {
            let s = SmallBytes::<INLINE>::from_slice(&long[..n]);
            assert_eq!(s.as_slice(), &long[..n]);
            assert_eq!(matches!(s, SmallBytes::Inline { .. }), n <= INLINE);
            let (a, b) = long[..n].split_at(n / 2);
            assert_eq!(SmallBytes::concat(&[a, &[], b]), s);
        }
        assert_eq!(SmallBytes::Heap(vec![1, 2]), SmallBytes::<INLINE>::from_slice(&[1, 2]));
        let wide = SmallBytes::<96>::from_slice(&long[..96]);
        assert!(matches!(wide, SmallBytes::Inline { .. }) && wide.as_slice() == &long[..96]);
        let mut s = SmallBytes::<INLINE>::from_slice(&long);
        s.clear();
        assert_eq!(s.as_slice(), &[] as &[u8]);
    }
}
