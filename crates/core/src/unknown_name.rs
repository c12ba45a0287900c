//! The one message for a name that is none of a vocabulary's (push, pull
//! and flow policies, `crate::names`): the name, the closest known one when
//! it is a likely typo, and every name, so `sim`, `pull` and `flowsim` read
//! alike:
//!
//! ```text
//! unknown policy `hours`: did you mean `horus`? (push policies: horus, horus-tokens, ...)
//! ```
//!
//! Below the vocabularies (which name the registry's and the pull family's
//! planes), so the registry can use it too.

/// `unknown {what} `{given}`[: did you mean `x`?] ({family}: a, b, ...)`.
pub fn unknown(what: &str, family: &str, given: &str, names: &[&str]) -> String {
    let list = names.join(", ");
    match suggest(given, names) {
        Some(s) => format!("unknown {what} `{given}`: did you mean `{s}`? ({family}: {list})"),
        None => format!("unknown {what} `{given}` ({family}: {list})"),
    }
}

/// The known name closest to `given` by edits (a swap of two neighbours
/// counts once), if within a third of its length: a typo, not another word.
/// Ties go to the earlier name, so the answer is the same on every run.
pub fn suggest<'a>(given: &str, names: &[&'a str]) -> Option<&'a str> {
    let given = given.trim().to_ascii_lowercase();
    let mut best: Option<(usize, &'a str)> = None;
    for &n in names {
        let d = strsim::damerau_levenshtein(&given, n);
        if d <= (n.len() / 3).max(1) && best.is_none_or(|(b, _)| d < b) {
            best = Some((d, n));
        }
    }
    best.map(|(_, n)| n)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAMES: [&str; 4] = ["horus", "horus-tokens", "rs-h", "random"];

    #[test]
    fn typos_get_the_closest_name_and_other_words_none() {
        assert_eq!(suggest("hours", &NAMES), Some("horus"));
        assert_eq!(suggest("Horus-Token", &NAMES), Some("horus-tokens"));
        assert_eq!(suggest("rsh", &NAMES), Some("rs-h"));
        assert_eq!(suggest("draconis", &NAMES), None);
        assert_eq!(suggest("", &NAMES), None);
    }

    #[test]
    fn one_format() {
        assert_eq!(
            unknown("policy", "push policies", "hours", &NAMES),
            "unknown policy `hours`: did you mean `horus`? (push policies: horus, horus-tokens, rs-h, random)"
        );
        assert_eq!(
            unknown("policy", "flow policies", "x", &["fair"]),
            "unknown policy `x` (flow policies: fair)"
        );
    }
}
