//! The stored forms of alerting: each pin's firing alerts, and the notifications the outbox
//! holds until a channel takes them. The rules that fill them live in `alert`; the store keeps
//! them, copies them and hands them back as they were written.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::finding::Code;
pub use crate::report::{Alarm, AlarmCause, LifetimeEvidence};
use crate::severity::Severity;

/// One alert's stored state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlertState {
    pub fingerprint: String,
    pub pin: String,
    pub code: AlertCode,
    pub severity: Option<Severity>,
    pub starts_at: DateTime<Utc>,
    pub message: String,
    pub evidence: Value,
    /// What to do, as the finding says it (absent in states stored before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// Channel name → when it last heard this alert firing.
    pub notified: BTreeMap<String, DateTime<Utc>>,
}

/// A pin's stored alerting state. Fields a newer modelpin of the same fleet adds are dropped
/// when read, not a reason to read the whole state as empty.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PinAlerts {
    /// Firing alerts by code.
    pub firing: BTreeMap<AlertCode, AlertState>,
    pub inconclusive_streak: u32,
    /// The behaviour evidence accumulated over the pin's audits since its lock
    /// (`alert::lifetime`); absent before the first weighed audit and in older stores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accumulated: Option<Accumulated>,
}

/// A pin's accumulated behaviour evidence, as `alert::lifetime` leaves it after an audit.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Accumulated {
    /// Digest of the pin's lock entry the audits were judged against: another lock starts the
    /// evidence afresh.
    pub basis: String,
    /// Audits weighed, by bin of strangeness (`stats::sequential::bin_of`): at most
    /// `stats::sequential::BINS` entries however long the pin is watched.
    pub seen: BTreeMap<u16, u64>,
    /// The Shiryaev–Roberts statistic after the last audit.
    pub statistic: f64,
    /// When the statistic last rose to 1 or above and has stayed there: how long the evidence
    /// has been building. `None` while it is below 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<DateTime<Utc>>,
    /// The alarm, once raised: it stands until the pin is locked again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alarm: Option<Alarm>,
    /// The tests the detector's audits ran (`test:probes` lines): only audits running the same
    /// step it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub family: String,
    /// Audits in a row since that ran other tests.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unlike: u32,
    /// The audit weighed last and what it added: a retried write gets this back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last: Option<LastAudit>,
    /// When the pin's last behaviour audit against this lock started: the daemon's budget
    /// (`daemon::budget`) buys the next one from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behaviour_at: Option<DateTime<Utc>>,
}

/// The audit weighed last.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LastAudit {
    pub audit_id: String,
    pub evidence: LifetimeEvidence,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's `skip_serializing_if` passes a reference
fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// One alert inside a notification.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlertItem {
    pub fingerprint: String,
    pub code: AlertCode,
    pub severity: Option<Severity>,
    pub status: AlertStatus,
    pub message: String,
    pub evidence: Value,
    /// What to do about it, as the CLI and the status page say it (absent in older stores).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    #[serde(rename = "startsAt")]
    pub starts_at: DateTime<Utc>,
    #[serde(rename = "endsAt")]
    pub ends_at: Option<DateTime<Utc>>,
}

/// What an alert is about: a finding, or the one `modelpin alerts test` sends. Written as the
/// finding's code, or `test`. A code this build does not know (written by a newer modelpin of
/// the same fleet) is kept as it was written, so reading it loses no other alert's state.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AlertCode {
    Finding(Code),
    Test,
    Other(String),
}

impl AlertCode {
    #[must_use]
    pub fn as_str(&self) -> &str {
        match self {
            AlertCode::Finding(code) => code.as_str(),
            AlertCode::Test => "test",
            AlertCode::Other(text) => text,
        }
    }
}

impl std::fmt::Display for AlertCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for AlertCode {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl From<&str> for AlertCode {
    fn from(text: &str) -> AlertCode {
        if text == AlertCode::Test.as_str() {
            return AlertCode::Test;
        }
        Code::ALL
            .into_iter()
            .find(|code| code.as_str() == text)
            .map_or_else(|| AlertCode::Other(text.to_owned()), AlertCode::Finding)
    }
}

impl<'de> Deserialize<'de> for AlertCode {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(AlertCode::from(String::deserialize(deserializer)?.as_str()))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AlertStatus {
    Firing,
    Resolved,
}

impl AlertStatus {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            AlertStatus::Firing => "firing",
            AlertStatus::Resolved => "resolved",
        }
    }
}

/// What one channel receives about one pin after one audit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Notification {
    /// One id per notification, reused on every delivery attempt.
    pub id: String,
    pub channel: String,
    pub pin: String,
    pub provider: String,
    pub model: String,
    /// Firing while any of its alerts fires.
    pub status: AlertStatus,
    pub alerts: Vec<AlertItem>,
    pub created_at: DateTime<Utc>,
    /// A `modelpin alerts test` notification.
    pub test: bool,
    /// The audit that produced it (absent in test notifications and older stores).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit_id: Option<String>,
    /// Set when a traffic verdict produced it; absent for probe audits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<crate::store::RecordSource>,
    /// The pin's status page, under `settings.external_url`; absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stored state keeps its JSON shape: codes as their names, map keys included, and the test
    /// notification's `test`; a code this build does not know is kept as written, never read as
    /// another code or dropped with the rest of the state.
    #[test]
    fn codes_are_stored_by_name_and_read_back() {
        let stored = r#"{"firing":{"served_model_mismatch":{"fingerprint":"f","pin":"p","code":"served_model_mismatch","severity":"error","starts_at":"2026-01-01T00:00:00Z","message":"m","evidence":null,"notified":{}}},"inconclusive_streak":0}"#;
        let state: PinAlerts = serde_json::from_str(stored).unwrap();
        let code = AlertCode::Finding(Code::ServedModelMismatch);
        assert_eq!(state.firing[&code].code, code);
        assert_eq!(serde_json::to_string(&state).unwrap(), stored);
        for (text, code) in [
            ("\"test\"", AlertCode::Test),
            ("\"cost_changed\"", AlertCode::Finding(Code::CostChanged)),
            // A newer modelpin's code: kept, written back as it was.
            (
                "\"code_of_2030\"",
                AlertCode::Other("code_of_2030".to_owned()),
            ),
        ] {
            assert_eq!(serde_json::from_str::<AlertCode>(text).unwrap(), code);
            assert_eq!(serde_json::to_string(&code).unwrap(), text);
        }
    }
}
