//! Writing systems in answers: a script the baseline never produced is a finding.
//!
//! A serving fault can put characters of another script into answers behind an unchanged ID
//! (Anthropic's "A postmortem of three recent issues", anthropic.com/engineering, 2025-09-17: a
//! TPU server misconfiguration put Thai and Chinese characters into English answers). Counting scripts needs no statistics: the baseline's
//! answers name the scripts a pin writes in, and any letter of another is evidence.
//!
//! Scripts are told by code point ranges: the blocks of the Unicode Standard (16.0, Blocks.txt)
//! whose characters belong to one script in Scripts.txt. Digits, punctuation, symbols, emoji and
//! combining marks belong to none here (Scripts.txt calls them Common or Inherited), so an
//! answer of "391" or "👍" adds no script.

use std::collections::{BTreeMap, BTreeSet};

/// The script a letter belongs to, by block; `None` for characters of no particular script.
#[must_use]
pub fn script_of(c: char) -> Option<&'static str> {
    let u = u32::from(c);
    let script = match u {
        // Basic Latin and Latin-1 letters (not × and ÷), Latin Extended-A/B and Additional,
        // Extended-C/D/E, fullwidth forms.
        0x41..=0x5A
        | 0x61..=0x7A
        | 0xAA
        | 0xBA
        | 0xC0..=0xD6
        | 0xD8..=0xF6
        | 0xF8..=0x24F
        | 0x1E00..=0x1EFF
        | 0x2C60..=0x2C7F
        | 0xA720..=0xA7FF
        | 0xAB30..=0xAB6F
        | 0xFF21..=0xFF3A
        | 0xFF41..=0xFF5A => "Latin",
        0x370..=0x3FF | 0x1F00..=0x1FFF => "Greek",
        0x400..=0x52F | 0x1C80..=0x1C8F | 0x2DE0..=0x2DFF | 0xA640..=0xA69F => "Cyrillic",
        0x531..=0x58F => "Armenian",
        0x591..=0x5FF | 0xFB1D..=0xFB4F => "Hebrew",
        0x600..=0x6FF | 0x750..=0x77F | 0x8A0..=0x8FF | 0xFB50..=0xFDFF | 0xFE70..=0xFEFF => {
            "Arabic"
        }
        0x900..=0x97F => "Devanagari",
        0x980..=0x9FF => "Bengali",
        0xA00..=0xA7F => "Gurmukhi",
        0xA80..=0xAFF => "Gujarati",
        0xB00..=0xB7F => "Oriya",
        0xB80..=0xBFF => "Tamil",
        0xC00..=0xC7F => "Telugu",
        0xC80..=0xCFF => "Kannada",
        0xD00..=0xD7F => "Malayalam",
        0xD80..=0xDFF => "Sinhala",
        0xE00..=0xE7F => "Thai",
        0xE80..=0xEFF => "Lao",
        0xF00..=0xFFF => "Tibetan",
        0x1000..=0x109F => "Myanmar",
        0x10A0..=0x10FF | 0x1C90..=0x1CBF => "Georgian",
        0x1100..=0x11FF | 0x3130..=0x318F | 0xA960..=0xA97F | 0xAC00..=0xD7FF => "Hangul",
        0x1200..=0x139F => "Ethiopic",
        0x13A0..=0x13FF => "Cherokee",
        0x1780..=0x17FF => "Khmer",
        0x1800..=0x18AF => "Mongolian",
        0x3040..=0x309F => "Hiragana",
        0x30A0..=0x30FF | 0x31F0..=0x31FF | 0xFF66..=0xFF9F => "Katakana",
        0x2E80..=0x2FDF
        | 0x3005
        | 0x3007
        | 0x3021..=0x3029
        | 0x3400..=0x4DBF
        | 0x4E00..=0x9FFF
        | 0xF900..=0xFAFF
        | 0x20000..=0x3134F => "Han",
        0x3100..=0x312F | 0x31A0..=0x31BF => "Bopomofo",
        _ => return None,
    };
    Some(script)
}

/// The scripts of every letter in `texts`.
pub fn scripts<'a>(texts: impl IntoIterator<Item = &'a str>) -> BTreeSet<&'static str> {
    texts
        .into_iter()
        .flat_map(str::chars)
        .filter_map(script_of)
        .collect()
}

/// Scripts of `current` the baseline never used: for each, how many answers had it and up to
/// `SHOWN_CHARS` of its characters as seen (first seen first).
#[must_use]
pub fn new_scripts<'a>(
    baseline: &BTreeSet<&'static str>,
    current: impl IntoIterator<Item = &'a str>,
) -> BTreeMap<&'static str, (u64, String)> {
    let mut found: BTreeMap<&'static str, (u64, String)> = BTreeMap::new();
    for text in current {
        let mut in_this: BTreeSet<&'static str> = BTreeSet::new();
        for c in text.chars() {
            let Some(script) = script_of(c).filter(|s| !baseline.contains(s)) else {
                continue;
            };
            let entry = found.entry(script).or_default();
            if in_this.insert(script) {
                entry.0 += 1;
            }
            if entry.1.chars().count() < SHOWN_CHARS && !entry.1.contains(c) {
                entry.1.push(c);
            }
        }
    }
    found
}

/// How often an answer of the unchanged model shows a script its baseline never did, estimated
/// from the baseline itself: the answers holding a script no other baseline answer holds, plus
/// one, over the answers plus one (Good–Turing's estimate of the unseen mass, never zero). A
/// small model sampled at temperature 1 now and then writes a letter of some other script; this
/// is the rate such noise has.
#[must_use]
pub fn unseen_rate<'a>(baseline: impl IntoIterator<Item = &'a str>) -> f64 {
    let per_answer: Vec<BTreeSet<&'static str>> =
        baseline.into_iter().map(|t| scripts([t])).collect();
    let mut answers_with: BTreeMap<&'static str, u64> = BTreeMap::new();
    for found in &per_answer {
        for script in found {
            *answers_with.entry(script).or_default() += 1;
        }
    }
    let singular = per_answer
        .iter()
        .filter(|found| found.iter().any(|s| answers_with[s] == 1))
        .count();
    (singular as f64 + 1.0) / (per_answer.len() as f64 + 1.0)
}

/// The chance of `k` or more of `n` answers in unseen scripts when each is so with chance
/// `rate`: the binomial upper tail.
#[must_use]
pub fn surprise(k: u64, n: u64, rate: f64) -> f64 {
    use statrs::distribution::{Binomial, DiscreteCDF as _};
    if k == 0 {
        return 1.0;
    }
    Binomial::new(rate.clamp(0.0, 1.0), n).map_or(1.0, |b| b.sf(k - 1))
}

/// Answers of `current` with a letter of a script outside `baseline`.
pub fn answers_outside<'a>(
    baseline: &BTreeSet<&'static str>,
    current: impl IntoIterator<Item = &'a str>,
) -> u64 {
    current
        .into_iter()
        .filter(|t| {
            t.chars()
                .filter_map(script_of)
                .any(|s| !baseline.contains(s))
        })
        .count() as u64
}

/// Characters of a new script shown in the evidence.
pub const SHOWN_CHARS: usize = 8;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unseen_rate_counts_scripts_only_one_baseline_answer_had() {
        let table: [(&[&str], f64); 4] = [
            (&[], 1.0),
            (&["Sydney", "Perth", "391"], 1.0 / 4.0),
            (&["Sydney", "Perth", "Москва", "391"], 2.0 / 5.0),
            (&["Sydney", "Москва", "Київ", "東京 Tokyo"], 2.0 / 5.0),
        ];
        for (baseline, want) in table {
            let got = unseen_rate(baseline.iter().copied());
            assert!((got - want).abs() < 1e-12, "{baseline:?}: {got} != {want}");
        }
    }

    #[test]
    fn surprise_is_the_binomial_upper_tail() {
        assert!((surprise(0, 60, 0.01) - 1.0).abs() < f64::EPSILON);
        let one = surprise(1, 60, 1.0 / 61.0);
        assert!(
            (one - (1.0 - (60.0f64 / 61.0).powi(60))).abs() < 1e-9,
            "{one}"
        );
        assert!(surprise(6, 60, 1.0 / 61.0) < 1e-3);
        assert!(surprise(2, 60, 1.0 / 61.0) > 0.1);
        assert!(surprise(61, 60, 0.5) <= 0.0 + f64::EPSILON);
    }

    #[test]
    fn answers_outside_counts_each_answer_once() {
        let baseline = scripts(["Sydney"]);
        assert_eq!(
            answers_outside(&baseline, ["Sydney", "ภาษา 中", "中", "42"]),
            2
        );
    }

    #[test]
    fn letters_have_their_script_and_the_rest_none() {
        let table = [
            ('a', Some("Latin")),
            ('Z', Some("Latin")),
            ('é', Some("Latin")),
            ('×', None),
            ('ß', Some("Latin")),
            ('λ', Some("Greek")),
            ('Ж', Some("Cyrillic")),
            ('א', Some("Hebrew")),
            ('ب', Some("Arabic")),
            ('क', Some("Devanagari")),
            ('ภ', Some("Thai")),
            ('한', Some("Hangul")),
            ('ひ', Some("Hiragana")),
            ('カ', Some("Katakana")),
            ('中', Some("Han")),
            ('3', None),
            (' ', None),
            ('.', None),
            ('👍', None),
            ('\u{301}', None),
            ('€', None),
        ];
        for (c, want) in table {
            assert_eq!(script_of(c), want, "{c:?} U+{:04X}", u32::from(c));
        }
    }

    #[test]
    fn only_scripts_the_baseline_never_used_are_new() {
        let baseline = scripts(["Sydney", "391", "autumn leaves fall"]);
        assert_eq!(baseline, BTreeSet::from(["Latin"]));
        let new = new_scripts(
            &baseline,
            ["Melbourne", "Sydney ภาษาไทย", "中文 and 中", "391", "Café"],
        );
        assert_eq!(new.len(), 2, "{new:?}");
        assert_eq!(new["Thai"].0, 1);
        assert_eq!(new["Thai"].1, "ภาษไทย");
        assert_eq!(new["Han"], (1, "中文".to_owned()));
        assert!(new_scripts(&baseline, ["Brisbane", "no", "42 ✓"]).is_empty());
    }

    #[test]
    fn shown_characters_are_bounded() {
        let baseline = BTreeSet::from(["Latin"]);
        let long: String = ('\u{4E00}'..='\u{4EFF}').collect();
        let new = new_scripts(&baseline, [long.as_str(), long.as_str()]);
        assert_eq!(new["Han"].0, 2);
        assert_eq!(new["Han"].1.chars().count(), SHOWN_CHARS);
    }
}
