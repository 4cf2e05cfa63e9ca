//! Findings: what an audit concluded about one pin, as data.
//!
//! A model that drifted is not an error of the tool; it is a `Finding` in the report, with the
//! numbers that support it. Codes and severities are part of the user-facing contract (DESIGN.md).

pub mod action;
pub mod evidence;
pub mod headline;
pub mod moved;
pub mod reason;

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::closed::closed_set;
use serde_json::Value;

pub use crate::severity::Severity;
pub use evidence::Evidence;

closed_set! {
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Code {
    ServedModelMismatch,
    UpstreamMismatch,
    TokenizerChanged,
    CostChanged,
    BehaviorDrift,
    ModelNotFound,
    RetiredStillServed,
    DeprecationScheduled,
    SunsetAnnounced,
    FingerprintChanged,
    MaxTokensExceeded,
    ScriptChanged,
    NoBaseline,
    ProbeChanged,
    Inconclusive,
}
}

impl Code {
    /// The severity the contract gives each code; `None` for `inconclusive`, which is a status.
    #[must_use]
    pub fn severity(self) -> Option<Severity> {
        match self {
            Code::ServedModelMismatch
            | Code::UpstreamMismatch
            | Code::TokenizerChanged
            | Code::CostChanged
            | Code::BehaviorDrift
            | Code::ScriptChanged
            | Code::ModelNotFound
            | Code::RetiredStillServed => Some(Severity::Error),
            Code::DeprecationScheduled | Code::SunsetAnnounced | Code::MaxTokensExceeded => {
                Some(Severity::Warning)
            }
            Code::FingerprintChanged => Some(Severity::Info),
            Code::NoBaseline | Code::ProbeChanged | Code::Inconclusive => None,
        }
    }

    /// Codes that say something could not be measured: they make a pin inconclusive (never ok),
    /// and carry no severity of their own.
    #[must_use]
    pub fn is_unmeasured(self) -> bool {
        matches!(
            self,
            Code::NoBaseline | Code::ProbeChanged | Code::Inconclusive
        )
    }

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Code::ServedModelMismatch => "served_model_mismatch",
            Code::UpstreamMismatch => "upstream_mismatch",
            Code::TokenizerChanged => "tokenizer_changed",
            Code::CostChanged => "cost_changed",
            Code::BehaviorDrift => "behavior_drift",
            Code::ModelNotFound => "model_not_found",
            Code::RetiredStillServed => "retired_still_served",
            Code::DeprecationScheduled => "deprecation_scheduled",
            Code::SunsetAnnounced => "sunset_announced",
            Code::FingerprintChanged => "fingerprint_changed",
            Code::MaxTokensExceeded => "max_tokens_exceeded",
            Code::ScriptChanged => "script_changed",
            Code::NoBaseline => "no_baseline",
            Code::ProbeChanged => "probe_changed",
            Code::Inconclusive => "inconclusive",
        }
    }
}

closed_set! {
/// The checks a pin is judged on (the JUnit testcases, in this order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Check {
    Reachable,
    ServedModel,
    Upstream,
    Tokenizer,
    Cost,
    Behaviour,
    Lifecycle,
}
}

impl Check {
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Check::Reachable => "reachable",
            Check::ServedModel => "served model",
            Check::Upstream => "upstream",
            Check::Tokenizer => "tokenizer",
            Check::Cost => "cost",
            Check::Behaviour => "behaviour",
            Check::Lifecycle => "lifecycle",
        }
    }

    /// Checks that compare with the baseline, and so cannot run without one.
    #[must_use]
    pub fn needs_baseline(self) -> bool {
        matches!(
            self,
            Check::Upstream | Check::Tokenizer | Check::Cost | Check::Behaviour
        )
    }
}

impl Code {
    /// The check a finding of this code belongs to; `None` for the codes that say a check
    /// could not run (they are reported as skipped or errored, not as a check's result).
    #[must_use]
    pub fn check(self) -> Option<Check> {
        match self {
            Code::ModelNotFound => Some(Check::Reachable),
            Code::ServedModelMismatch | Code::FingerprintChanged => Some(Check::ServedModel),
            Code::UpstreamMismatch => Some(Check::Upstream),
            Code::TokenizerChanged => Some(Check::Tokenizer),
            Code::CostChanged | Code::MaxTokensExceeded => Some(Check::Cost),
            Code::BehaviorDrift | Code::ScriptChanged => Some(Check::Behaviour),
            Code::RetiredStillServed | Code::DeprecationScheduled | Code::SunsetAnnounced => {
                Some(Check::Lifecycle)
            }
            Code::NoBaseline | Code::ProbeChanged | Code::Inconclusive => None,
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Finding {
    pub code: Code,
    pub severity: Option<Severity>,
    pub message: String,
    pub evidence: Value,
    /// What to do about it, for this pin (`action::action`); absent in audits stored before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
}

impl Finding {
    /// The one way to make a finding: code, severity, message, what to do about it (for pin
    /// `pin`) and the JSON evidence all come from the typed evidence, before it is erased.
    #[must_use]
    pub fn new(evidence: &Evidence, pin: &str) -> Finding {
        Finding {
            code: evidence.code(),
            severity: evidence.severity(),
            message: evidence.message(),
            evidence: evidence.to_json(),
            action: Some(evidence.action(pin)),
        }
    }

    #[must_use]
    pub fn is_error(&self) -> bool {
        self.severity == Some(Severity::Error)
    }
}

closed_set! {
/// How a pin came out of one audit. Declared from best to worst: the order is the ranking (`max` is the worst).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PinStatus {
    Ok,
    Warning,
    Inconclusive,
    Drift,
}
}

impl PinStatus {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            PinStatus::Ok => "ok",
            PinStatus::Warning => "warning",
            PinStatus::Inconclusive => "inconclusive",
            PinStatus::Drift => "drift",
        }
    }

    /// Drift outranks inconclusive, which outranks warnings.
    #[must_use]
    pub fn of(findings: &[Finding]) -> PinStatus {
        if findings.iter().any(Finding::is_error) {
            PinStatus::Drift
        } else if findings.iter().any(|f| f.code.is_unmeasured()) {
            PinStatus::Inconclusive
        } else if findings
            .iter()
            .any(|f| f.severity == Some(Severity::Warning))
        {
            PinStatus::Warning
        } else {
            PinStatus::Ok
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_code_fails_a_check_and_names_round_trip() {
        for code in Code::ALL {
            if code.severity() == Some(Severity::Error) {
                assert!(code.check().is_some(), "{code} fails no JUnit check");
            }
            let json = serde_json::to_value(code).unwrap();
            assert_eq!(json.as_str(), Some(code.as_str()));
        }
    }
}
