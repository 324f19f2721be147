//! [`SmallBytes`]: a byte string stored inline when short, on the heap otherwise.

use core::hash::{Hash, Hasher};

/// Bytes kept inline: the encoded options of a typical request (a Uri-Path or two, a Block2
/// value, a Content-Format) fit, so building, decoding and copying them never allocates.
pub(crate) const INLINE: usize = 30;

/// A byte string: inline up to [`INLINE`] bytes, else a `Vec`. Equality and hashing depend
/// only on the bytes, not on where they are stored.
#[derive(Clone)]
pub(crate) enum SmallBytes {
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(Vec<u8>),
}

impl SmallBytes {
    pub(crate) const fn new() -> SmallBytes {
        SmallBytes::Inline { len: 0, bytes: [0; INLINE] }
    }

    /// The concatenation of `parts`, inline if it fits.
    pub(crate) fn concat(parts: &[&[u8]]) -> SmallBytes {
        let total: usize = parts.iter().map(|p| p.len()).sum();
        if total <= INLINE {
            let mut bytes = [0; INLINE];
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

    pub(crate) fn from_slice(s: &[u8]) -> SmallBytes {
        SmallBytes::concat(&[s])
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

impl Default for SmallBytes {
    fn default() -> Self {
        SmallBytes::new()
    }
}

impl core::fmt::Debug for SmallBytes {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.as_slice().fmt(f)
    }
}

impl PartialEq for SmallBytes {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for SmallBytes {}

impl Hash for SmallBytes {
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
            let s = SmallBytes::from_slice(&long[..n]);
            assert_eq!(s.as_slice(), &long[..n]);
            assert_eq!(matches!(s, SmallBytes::Inline { .. }), n <= INLINE);
            let (a, b) = long[..n].split_at(n / 2);
            assert_eq!(SmallBytes::concat(&[a, &[], b]), s);
        }
        assert_eq!(SmallBytes::Heap(vec![1, 2]), SmallBytes::from_slice(&[1, 2]));
        let mut s = SmallBytes::from_slice(&long);
        s.clear();
        assert_eq!(s.as_slice(), &[] as &[u8]);
    }
}
