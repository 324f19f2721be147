//! "Did you mean ...?": the closest of a list of words, by the similarity of Python's
//! `difflib.get_close_matches` (the Ratcliff/Obershelp ratio 2·M/T, cutoff 0.6), so that the
//! suggestion is the one Python's own front would make.

/// Characters of `a` and `b` in matching blocks (Ratcliff/Obershelp: the longest common
/// substring, then the same on both sides of it).
fn matches(a: &[char], b: &[char]) -> usize {
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
    best + matches(&a[..ai], &b[..bj]) + matches(&a[ai + best..], &b[bj + best..])
}

/// The similarity of `a` and `b`, in [0, 1].
pub fn ratio(a: &str, b: &str) -> f64 {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let t = a.len() + b.len();
    if t == 0 {
        return 1.0;
    }
    2.0 * matches(&a, &b) as f64 / t as f64
}

/// `"; did you mean 'x'?"` for the closest of `choices` to `word`, or `""`.
pub fn did_you_mean<'a>(word: &str, choices: impl IntoIterator<Item = &'a str>) -> String {
    let best = choices
        .into_iter()
        .map(|c| (ratio(word, c), c))
        .filter(|(r, _)| *r >= 0.6)
        .max_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(y.1)));
    best.map_or(String::new(), |(_, c)| format!("; did you mean '{c}'?"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_are_pythons() {
        assert_eq!(did_you_mean("clinets", ["algorithm", "clients", "groups"]), "; did you mean 'clients'?");
        assert_eq!(did_you_mean("helsinki18", ["rfc7252", "helsinki2018"]), "; did you mean 'helsinki2018'?");
        assert_eq!(did_you_mean("xyz", ["clients"]), "");
        assert!((ratio("abcd", "bcde") - 0.75).abs() < 1e-12);
    }
}
