//! "Did you mean ...?": the closest of a list of names, by the similarity of Python's
//! `difflib.get_close_matches` (the Ratcliff/Obershelp ratio 2·M/T, cutoff 0.6), so that every
//! front (Rust and Python) suggests the same name. No allocation.

/// Items of `a` and `b` in matching blocks (Ratcliff/Obershelp: the longest common run, then
/// the same on both sides of it).
pub fn matching<T: PartialEq>(a: &[T], b: &[T]) -> usize {
    let (mut best, mut ai, mut bj) = (0, 0, 0);
    for i in 0..a.len() {
        for j in 0..b.len() {
            let mut k = 0;
            while i + k < a.len() && j + k < b.len() && a[i + k] == b[j + k] {
                k += 1;
            }
            if k > best {
                (best, ai, bj) = (k, i, j);
            }
        }
    }
    if best == 0 {
        return 0;
    }
    best + matching(&a[..ai], &b[..bj]) + matching(&a[ai + best..], &b[bj + best..])
}

/// The similarity of `a` and `b`, in [0, 1] (1 for two empty sequences).
pub fn similarity<T: PartialEq>(a: &[T], b: &[T]) -> f64 {
    let t = a.len() + b.len();
    if t == 0 {
        return 1.0;
    }
    2.0 * matching(a, b) as f64 / t as f64
}

/// The closest of `choices` to `word` with a similarity of at least 0.6 (the greatest name
/// on ties), compared byte by byte (names are ASCII).
pub fn closest<'a>(word: &str, choices: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    choices
        .into_iter()
        .map(|c| (similarity(word.as_bytes(), c.as_bytes()), c))
        .filter(|(r, _)| *r >= 0.6)
        .max_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(y.1)))
        .map(|(_, c)| c)
}

/// `" (did you mean 'x'?)"` for the [`closest`] of `choices` to `word`, or nothing.
pub fn hint<'a>(word: &str, choices: impl IntoIterator<Item = &'a str>) -> Hint<'a> {
    Hint(closest(word, choices))
}

/// The text of [`hint`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hint<'a>(pub Option<&'a str>);

impl core::fmt::Display for Hint<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.0 {
            Some(c) => write!(f, " (did you mean '{c}'?)"),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_are_difflibs() {
        assert_eq!(closest("cocao", ["default", "cocoa", "cocoa-strong"]), Some("cocoa"));
        assert_eq!(closest("helsinki18", ["rfc7252", "helsinki2018"]), Some("helsinki2018"));
        assert_eq!(closest("xyz", ["clients"]), None);
        assert!((similarity(b"abcd", b"bcde") - 0.75).abs() < 1e-12);
    }
}
