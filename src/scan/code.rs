//! The scan's finding codes and levels, and every per-code table (level, summary, help) as a
//! `match`, so a new code does not compile until each table has it.

use serde::Serialize;

/// The scan's finding codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Code {
    Retired,
    Retiring,
    ServedDifferently,
    Alias,
    Unpinned,
}

impl Code {
    pub const ALL: [Code; 5] = [
        Code::Retired,
        Code::Retiring,
        Code::ServedDifferently,
        Code::Alias,
        Code::Unpinned,
    ];

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Retired => "retired",
            Code::Retiring => "retiring",
            Code::ServedDifferently => "served_differently",
            Code::Alias => "alias",
            Code::Unpinned => "unpinned",
        }
    }

    /// The level of the code on a literal.
    #[must_use]
    pub fn level(self) -> Level {
        match self {
            Code::Retired => Level::Error,
            Code::Retiring | Code::ServedDifferently => Level::Warning,
            Code::Alias | Code::Unpinned => Level::Info,
        }
    }

    /// One line on what the code means, for rule metadata.
    #[must_use]
    pub fn summary(self) -> &'static str {
        match self {
            Code::Retired => "A model ID past its retirement date is used in code",
            Code::Retiring => "A model ID used in code retires within a warning window",
            Code::ServedDifferently => "modelpin.lock records this ID served as another model",
            Code::Alias => "An undated model alias that the provider can move to a new snapshot",
            Code::Unpinned => "A model ID used in code that no pin in pins.toml watches",
        }
    }

    /// What to do about it.
    #[must_use]
    pub fn help(self) -> &'static str {
        match self {
            Code::Retired => {
                "Requests to a retired ID fail or are silently answered by another model. Replace it with the named successor and pin the new ID in pins.toml."
            }
            Code::Retiring => {
                "Plan the move before the date: switch to the replacement, run `modelpin lock`, and compare with `modelpin check`."
            }
            Code::ServedDifferently => {
                "The provider answered this ID with another model when the lock was recorded. Pin the served snapshot, or accept it deliberately in the pin's `accept` list."
            }
            Code::Alias => {
                "Aliases move to new snapshots without notice. Use the dated snapshot the alias resolves to, or pin the alias so `modelpin check` notices the move."
            }
            Code::Unpinned => {
                "Add a [[pin]] for the ID to pins.toml (or run `modelpin init --from-scan`) so `modelpin check` watches it."
            }
        }
    }
}

/// How serious a finding is; also `scan --min-level`: the one scale of every finding.
pub use crate::severity::Severity as Level;
