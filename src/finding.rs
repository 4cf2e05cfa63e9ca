//! Findings: what an audit concluded about one pin, as data.
//!
//! A model that drifted is not an error of the tool; it is a `Finding` in the report, with the
//! numbers that support it. Codes and severities are part of the user-facing contract (DESIGN.md).

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::config::Severity;

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
    NoBaseline,
    ProbeChanged,
    Inconclusive,
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
            | Code::ModelNotFound
            | Code::RetiredStillServed => Some(Severity::Error),
            Code::DeprecationScheduled
            | Code::SunsetAnnounced
            | Code::NoBaseline
            | Code::ProbeChanged => Some(Severity::Warning),
            Code::FingerprintChanged => Some(Severity::Info),
            Code::Inconclusive => None,
        }
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
            Code::NoBaseline => "no_baseline",
            Code::ProbeChanged => "probe_changed",
            Code::Inconclusive => "inconclusive",
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
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

impl Serialize for Severity {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Severity {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Severity, D::Error> {
        let text = String::deserialize(d)?;
        match text.as_str() {
            "info" => Ok(Severity::Info),
            "warning" => Ok(Severity::Warning),
            "error" => Ok(Severity::Error),
            other => Err(serde::de::Error::unknown_variant(
                other,
                &["info", "warning", "error"],
            )),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Finding {
    pub code: Code,
    pub severity: Option<Severity>,
    pub message: String,
    pub evidence: Value,
}

impl Finding {
    #[must_use]
    pub fn new(code: Code, message: impl Into<String>, evidence: Value) -> Finding {
        Finding {
            code,
            severity: code.severity(),
            message: message.into(),
            evidence,
        }
    }

    #[must_use]
    pub fn is_error(&self) -> bool {
        self.severity == Some(Severity::Error)
    }
}
