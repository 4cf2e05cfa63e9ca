//! How serious a finding is: one scale for `check`'s findings, `scan`'s findings and
//! `--min-level`, alert channels' `min_severity`, and every report format.

use serde::{Deserialize, Serialize};

#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl Severity {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Severity;

    #[test]
    fn one_spelling_in_json_toml_and_on_the_command_line() {
        for (severity, text) in [
            (Severity::Info, "info"),
            (Severity::Warning, "warning"),
            (Severity::Error, "error"),
        ] {
            assert_eq!(severity.as_str(), text);
            assert_eq!(
                serde_json::to_string(&severity).unwrap(),
                format!("\"{text}\"")
            );
            let back: Severity = serde_json::from_str(&format!("\"{text}\"")).unwrap();
            assert_eq!(back, severity);
            let parsed = <Severity as clap::ValueEnum>::from_str(text, false).unwrap();
            assert_eq!(parsed, severity);
        }
        assert!(serde_json::from_str::<Severity>("\"fatal\"").is_err());
        assert!(Severity::Info < Severity::Warning && Severity::Warning < Severity::Error);
    }
}
