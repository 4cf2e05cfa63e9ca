//! One rule for every id a user names: pin ids, probe ids, provider and alert channel names.
//!
//! Each becomes a label, a key or part of a file name somewhere — a report row, a metric label,
//! the store's keys, the lock's keys, an alert — so each must read as it is: not empty, at most
//! `MAX_ID_CHARS` characters, no surrounding blanks, and no character that hides or reorders text
//! (controls, bidirectional overrides and isolates, zero-width and other invisible characters,
//! blanks other than a plain space). Ids that differ only by characters that look alike (`p1`
//! and Cyrillic `р1`, `l` and `1`) are allowed, since both may be meant, but warned about at load
//! with both places, using Unicode's TR39 skeletons over the vendored `confusables` table.

use std::ops::Range;

use super::confusables::PROTOTYPES;
use super::source::Source;

/// Longest id, in characters: longer ones are typing accidents, and every table shows them.
pub(crate) const MAX_ID_CHARS: usize = 128;

/// What is wrong with `text` as an id, if anything.
pub(crate) fn problem(text: &str, what: &str, max: usize) -> Option<String> {
    if text.trim().is_empty() {
        return Some(format!("`{what}` must not be empty"));
    }
    let chars = text.chars().count();
    if chars > max {
        return Some(format!(
            "`{what}` is {chars} characters long; at most {max} are allowed"
        ));
    }
    if let Some(c) = text.chars().find(|c| hides_text(*c)) {
        return Some(format!(
            "`{what}` must not contain control or invisible characters (found U+{:04X})",
            u32::from(c)
        ));
    }
    if text.trim() != text {
        return Some(format!("`{what}` must not start or end with blanks"));
    }
    None
}

/// Controls, characters that reorder or hide text, and blanks other than a plain space (a
/// no-break or em space passes for a space).
pub(crate) fn hides_text(c: char) -> bool {
    crate::text::needs_escape(c) || (c.is_whitespace() && c != ' ')
}

/// The TR39 skeleton of `id` under the vendored table: each character replaced by its
/// prototype. (TR39 also normalises to NFD around the mapping; the table's ASCII prototypes need
/// none, and a precomposed letter stays itself.)
#[must_use]
pub(crate) fn skeleton(id: &str) -> String {
    id.chars()
        .map(|c| match PROTOTYPES.binary_search_by(|(k, _)| k.cmp(&c)) {
            Ok(i) => PROTOTYPES[i].1.to_owned(),
            Err(_) => c.to_string(),
        })
        .collect()
}

/// Where an id was named: a span of pins.toml, or an already formatted `file:line:column`.
#[derive(Debug, Clone)]
pub(crate) enum Place {
    Span(Range<usize>),
    Located(String),
}

/// An id as named, for the look-alike comparison.
#[derive(Debug, Clone)]
pub(crate) struct Named {
    /// `pin id`, `probe id`, `provider`, `alert channel`.
    pub kind: &'static str,
    pub id: String,
    pub place: Place,
}

/// One warning per pair of different ids of the same kind whose skeletons are equal, naming
/// both places, in the order the ids were named.
pub(crate) fn look_alikes(src: &Source, names: &[Named]) -> Vec<String> {
    let at = |n: &Named| match &n.place {
        Place::Span(span) => src.location(span.clone()),
        Place::Located(at) => at.clone(),
    };
    let mut seen: std::collections::HashMap<(&str, String), &Named> =
        std::collections::HashMap::new();
    let mut warnings = Vec::new();
    for named in names {
        let key = (named.kind, skeleton(&named.id));
        match seen.get(&key) {
            Some(first) if first.id != named.id => warnings.push(format!(
                "{kind}s `{a}` ({a_at}) and `{b}` ({b_at}) differ only in characters that look alike{codes}: they show the same in reports, alerts and metrics; rename one unless both are meant",
                kind = named.kind,
                a = crate::text::terminal(&first.id),
                a_at = at(first),
                b = crate::text::terminal(&named.id),
                b_at = at(named),
                codes = non_ascii(&first.id, &named.id),
            )),
            Some(_) => {}
            None => {
                seen.insert(key, named);
            }
        }
    }
    warnings
}

/// ` (U+0440 CYRILLIC-or-other in the second)`: which characters are not ASCII, so a reader can
/// tell the two apart.
fn non_ascii(a: &str, b: &str) -> String {
    let codes: Vec<String> = a
        .chars()
        .chain(b.chars())
        .filter(|c| !c.is_ascii())
        .map(|c| format!("U+{:04X}", u32::from(c)))
        .collect();
    if codes.is_empty() {
        String::new()
    } else {
        format!(" ({})", codes.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::{hides_text, problem, skeleton};

    #[test]
    fn look_alikes_share_a_skeleton_and_different_ids_do_not() {
        for (a, b) in [
            ("p1", "\u{440}1"),
            ("pin-l", "pin-1"),
            ("modern", "modem"),
            ("bot", "b\u{43e}t"),
            ("api", "\u{ff41}pi"),
        ] {
            assert_eq!(skeleton(a), skeleton(b), "{a} / {b}");
        }
        assert_ne!(skeleton("p1"), skeleton("p2"));
        assert_ne!(skeleton("pin"), skeleton("Pin"));
    }

    #[test]
    fn one_rule_refuses_hidden_characters_blanks_and_lengths() {
        for (id, says) in [
            ("ar\u{202e}ith", "found U+202E"),
            ("a\u{200b}b", "found U+200B"),
            ("a\u{a0}b", "found U+00A0"),
            ("a\u{ad}b", "found U+00AD"),
            (" pin", "must not start or end with blanks"),
            ("", "must not be empty"),
        ] {
            let got = problem(id, "id", 128).unwrap_or_default();
            assert!(got.contains(says), "{id:?}: {got}");
        }
        assert!(problem(&"p".repeat(129), "id", 128).is_some());
        for ok in ["support-bot", "p 1", "модель", "gpt-4o/eu"] {
            assert_eq!(problem(ok, "id", 128), None, "{ok}");
        }
        assert!(!hides_text(' ') && hides_text('\u{2003}'));
    }
}
