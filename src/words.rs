//! Counts in words, the one way every output writes them: `1 pin`, `2 pins`, `1 day`, `0 spans`.
//! English plurals of the handful of nouns modelpin counts are regular but for a few (`entry`,
//! `was`/`were`), so the irregular ones are spelled out here rather than guessed at each site.

/// `n word`, with the plural the noun takes.
#[must_use]
pub fn count(n: u64, word: &str) -> String {
    format!("{n} {}", noun(n, word))
}

/// The noun alone, singular for exactly one.
#[must_use]
pub fn noun(n: u64, word: &str) -> String {
    if n == 1 {
        return word.to_owned();
    }
    match word {
        "was" => "were".to_owned(),
        "is" => "are".to_owned(),
        "has" => "have".to_owned(),
        w if w.ends_with('y') && !w.ends_with("ay") && !w.ends_with("ey") => {
            format!("{}ies", &w[..w.len() - 1])
        }
        w if w.ends_with('s') || w.ends_with("ch") || w.ends_with('x') => format!("{w}es"),
        w => format!("{w}s"),
    }
}

/// `count` for a `usize` (lengths of lists).
#[must_use]
pub fn count_of(n: usize, word: &str) -> String {
    count(n as u64, word)
}

#[cfg(test)]
mod tests {
    use super::{count, count_of, noun};

    #[test]
    fn counts_take_the_right_form() {
        for (n, word, want) in [
            (0, "pin", "0 pins"),
            (1, "pin", "1 pin"),
            (2, "pin", "2 pins"),
            (1, "call", "1 call"),
            (17, "call", "17 calls"),
            (1, "span", "1 span"),
            (3, "span", "3 spans"),
            (1, "day", "1 day"),
            (2, "day", "2 days"),
            (1, "entry", "1 entry"),
            (4, "entry", "4 entries"),
            (2, "pass", "2 passes"),
            (2, "match", "2 matches"),
            (1, "audit", "1 audit"),
            (30, "audit", "30 audits"),
            (2, "key", "2 keys"),
        ] {
            assert_eq!(count(n, word), want, "{n} {word}");
        }
        assert_eq!(noun(1, "was"), "was");
        assert_eq!(noun(2, "was"), "were");
        assert_eq!(noun(0, "is"), "are");
        assert_eq!(count_of(1, "line"), "1 line");
    }
}
