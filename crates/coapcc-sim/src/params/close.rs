//! "Did you mean ...?" for the parameter schema's keys and words: the similarity of
//! [`coapcc_cc::names`] (Python's `difflib.get_close_matches`) over characters.

/// The similarity of `a` and `b`, in [0, 1], by characters ([`coapcc_cc::names::similarity`]).
pub fn ratio(a: &str, b: &str) -> f64 {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    coapcc_cc::names::similarity(&a, &b)
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
