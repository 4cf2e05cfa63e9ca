//! A probe's `[expect]` rule applied to one answer: the pass/fail bit the pass-rate test counts.
//!
//! Decisions, each chosen so a pass means "answered as the probe asked":
//! - `normalize` steps are applied, in order, to the answer *and* to the literal expected values
//!   (`equals`, `contains`, `one_of`), so `normalize = ["lower"]` with `one_of = ["Sydney"]`
//!   accepts "sydney". Regex patterns are left alone; write `(?i)` for case-insensitivity.
//! - `regex` searches anywhere in the answer (`is_match`); anchor with `^…$` for a full match.
//!   A pattern that does not compile never passes (and `Expectation::new` reports it).
//! - `json` requires the whole answer, surrounding whitespace aside, to parse as one JSON value.
//!   A ```` ```json ```` fenced block does **not** pass: the JSON probe asks for "JSON only", and a
//!   replacement model that starts wrapping answers in fences is exactly the instruction-following
//!   drift the probe exists to catch.

use regex::Regex;

/// How a probe's answers are compared: as one choice among few (counted), or as free text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compare {
    Choice,
    Text,
}

/// A probe's `[expect]` rule as written in its file.
#[derive(Debug, Clone, PartialEq)]
pub enum Expect {
    Equals(String),
    Contains(String),
    /// The pattern as written; compiled by the auditor.
    Regex(String),
    OneOf(Vec<String>),
    Json,
}

/// A step applied to an answer (and to the literal expected values) before `Expect` judges it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Normalize {
    Trim,
    Lower,
}

/// An `Expect` made ready to apply many times (its regex compiled once).
#[derive(Debug, Clone)]
pub struct Expectation {
    rule: Rule,
}

#[derive(Debug, Clone)]
enum Rule {
    Equals(String),
    Contains(String),
    Regex(Regex),
    OneOf(Vec<String>),
    Json,
    /// A regex that did not compile: nothing passes.
    Never,
}

impl Expectation {
    /// Compiles `expect` with `normalize` applied to its literal values.
    pub fn new(expect: &Expect, normalize: &[Normalize]) -> Result<Expectation, regex::Error> {
        let norm = |s: &str| normalized(normalize, s);
        let rule = match expect {
            Expect::Equals(v) => Rule::Equals(norm(v)),
            Expect::Contains(v) => Rule::Contains(norm(v)),
            Expect::Regex(p) => Rule::Regex(Regex::new(p)?),
            Expect::OneOf(vs) => Rule::OneOf(vs.iter().map(|v| norm(v)).collect()),
            Expect::Json => Rule::Json,
        };
        Ok(Expectation { rule })
    }

    /// Like `new`, but a pattern that does not compile yields a rule nothing passes.
    #[must_use]
    pub fn lenient(expect: &Expect, normalize: &[Normalize]) -> Expectation {
        Expectation::new(expect, normalize).unwrap_or(Expectation { rule: Rule::Never })
    }

    /// Whether an answer that has already been normalized passes.
    #[must_use]
    pub fn accepts(&self, answer: &str) -> bool {
        match &self.rule {
            Rule::Equals(v) => answer == v,
            Rule::Contains(v) => answer.contains(v.as_str()),
            Rule::Regex(re) => re.is_match(answer),
            Rule::OneOf(vs) => vs.iter().any(|v| v == answer),
            Rule::Json => serde_json::from_str::<serde_json::Value>(answer).is_ok(),
            Rule::Never => false,
        }
    }
}

/// `output` with the probe's normalization steps applied in order.
#[must_use]
pub fn normalized(normalize: &[Normalize], output: &str) -> String {
    normalize
        .iter()
        .fold(output.to_owned(), |text, step| match step {
            Normalize::Trim => text.trim().to_owned(),
            Normalize::Lower => text.to_lowercase(),
        })
}

/// Whether `output` passes `expect` after `normalize`. Compiles a regex on every call: use
/// `Expectation` to judge many answers.
#[must_use]
pub fn passes(expect: &Expect, normalize: &[Normalize], output: &str) -> bool {
    Expectation::lenient(expect, normalize).accepts(&normalized(normalize, output))
}

#[cfg(test)]
mod tests {
    use super::{Expect, Normalize};
    use super::{Expectation, passes};

    #[test]
    fn rules_table() {
        use Normalize::{Lower, Trim};
        let s = |v: &str| v.to_owned();
        let cases: Vec<(Expect, Vec<Normalize>, &str, bool)> = vec![
            (Expect::Equals(s("391")), vec![], "391", true),
            (Expect::Equals(s("391")), vec![], "391\n", false),
            (Expect::Equals(s("391")), vec![Trim], " 391\n", true),
            (Expect::Equals(s("")), vec![], "", true),
            (Expect::Contains(s("391")), vec![], "It is 391.", true),
            (Expect::Contains(s("Sydney")), vec![Lower], "SYDNEY!", true),
            (Expect::Contains(s("Sydney")), vec![], "SYDNEY!", false),
            (Expect::Regex(s(r"^\d+$")), vec![], "391", true),
            (Expect::Regex(s(r"^\d+$")), vec![], "391.", false),
            (Expect::Regex(s(r"\d")), vec![], "about 3", true),
            (
                Expect::Regex(s(r"(?i)^sydney$")),
                vec![Trim],
                " Sydney ",
                true,
            ),
            (Expect::Regex(s(r"(unclosed")), vec![], "(unclosed", false),
            (
                Expect::OneOf(vec![s("Sydney"), s("Perth")]),
                vec![],
                "Perth",
                true,
            ),
            (
                Expect::OneOf(vec![s("Sydney")]),
                vec![Trim, Lower],
                " sydney",
                true,
            ),
            (Expect::OneOf(vec![s("Sydney")]), vec![], "Sydney.", false),
            (Expect::Json, vec![], r#"{"a": 1, "b": 2}"#, true),
            (Expect::Json, vec![], " [1, 2]\n", true),
            (Expect::Json, vec![], "```json\n{\"a\": 1}\n```", false),
            (Expect::Json, vec![], r#"Here: {"a": 1}"#, false),
            (Expect::Json, vec![], "", false),
            (Expect::Json, vec![Lower], r#"{"A": TRUE}"#, true),
        ];
        for (expect, normalize, output, want) in cases {
            assert_eq!(
                passes(&expect, &normalize, output),
                want,
                "{expect:?} {normalize:?} {output:?}"
            );
        }
    }

    #[test]
    fn a_bad_pattern_is_reported_by_new() {
        assert!(Expectation::new(&Expect::Regex("(".into()), &[]).is_err());
    }
}
